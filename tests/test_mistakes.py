"""Standard mistakes: what a mistaken student's code would return, derived from the exercise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exercise_folder, write_exercise

from grader.exercise.reference import reference_returns
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.judging.naming.mistakes import mutant_mistakes, standard_mistakes
from grader.outcomes import MistakeFamily

SOFTMAX_LOSS = """
    id: softmax_loss_demo
    title: softmax loss with L2
    entry: softmax_loss
    args: [W, X, y, reg]
    sizes: {N: {min: 2, max: 5}, D: {min: 2, max: 4}, C: {min: 2, max: 4}}
    inputs:
      W: {shape: [D, C], dist: normal}
      X: {shape: [N, D], dist: normal}
      y: {shape: [N], dist: integer, low: 0, high: C - 1}
      reg: {shape: [], dist: uniform, low: 0.1, high: 1}
    graph: |
      scores = X @ W
      loss = mean(logsumexp(scores, dim=1) - scores[arange(N), y]) + reg * sum(W * W)
    returns:
      - {name: loss, value: loss}
      - {name: dW, grad: {of: loss, wrt: W}}
    solution: null
    starter: null
"""


@pytest.fixture(scope="module")
def softmax_loss(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("mistakes") / "softmax_loss", SOFTMAX_LOSS))


def _mistakes(exercise: Exercise, return_name: str) -> dict[str, dict[int, np.ndarray]]:
    trials = make_trials(exercise, 0, 20)
    expected = reference_returns(exercise, trials)
    mistakes = standard_mistakes(exercise, trials, expected)
    return {m.name: m.outputs for ret, m in mistakes if ret.name == return_name}


def test_output_mistakes_change_the_expected_result(softmax_loss: Exercise) -> None:
    trials = make_trials(softmax_loss, 0, 20)
    expected = reference_returns(softmax_loss, trials)
    mistakes = _mistakes(softmax_loss, "dW")
    first = trials[0]
    correct = expected[first.index]["dW"]
    assert np.array_equal(mistakes["sign flipped"][first.index], -correct)
    assert np.array_equal(mistakes["transposed"][first.index], correct.T)
    assert np.allclose(mistakes["a factor 1/N missing"][first.index], correct * first.sizes["N"])
    assert np.allclose(mistakes["an extra factor 1/C"][first.index], correct / first.sizes["C"])
    assert "transposed" not in _mistakes(softmax_loss, "loss")  # a scalar has nothing to transpose


def test_a_dropped_regularisation_term_is_recomputed_from_the_graph(softmax_loss: Exercise) -> None:
    trials = make_trials(softmax_loss, 0, 20)
    expected = reference_returns(softmax_loss, trials)
    mistakes = _mistakes(softmax_loss, "dW")
    without_reg = mistakes["loss without its term `reg * sum(W * W)`"]
    for trial in trials:
        regularisation = 2 * trial.inputs["reg"] * trial.inputs["W"]
        assert np.allclose(expected[trial.index]["dW"] - without_reg[trial.index], regularisation)
    # and the other way round: only the regularisation left
    assert "loss without its term `mean(logsumexp(scores, dim=1) - scores[arange(N), y])`" in mistakes


def test_gradient_with_respect_to_another_input_of_the_same_shape(tmp_path: Path) -> None:
    spec = """
        id: affine
        title: affine backward
        entry: affine_backward
        args: [dout, [x, w, b]]
        sizes: {N: {min: 1, max: 4}}
        inputs:
          dout: {shape: [N, N], dist: normal}
          x: {shape: [N, N], dist: normal}
          w: {shape: [N, N], dist: normal}
          b: {shape: [N], dist: normal}
        graph: |
          out = x @ w + b
        returns:
          - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
        solution: null
        starter: null
    """
    exercise = load_exercise(write_exercise(tmp_path / "affine", spec))
    mistakes = _mistakes(exercise, "dx")
    trials = make_trials(exercise, 0, 20)
    swapped = mistakes["the gradient with respect to w instead of x"]
    for trial in trials:
        assert np.allclose(swapped[trial.index], trial.inputs["x"].T @ trial.inputs["dout"])
    # neither the upstream gradient nor an input of another shape counts as "another input"
    assert not any("respect to dout" in name or "respect to b" in name for name in mistakes)
    assert "out without its term `b`" in mistakes


def test_a_mean_where_the_upstream_is_summed_divides_by_the_entries_summed() -> None:
    """A conv's db = dout.mean(axis=(0, 2, 3)): 1/(N H' W'), no single size of the spec."""
    exercise = load_exercise(exercise_folder("cs231n.a2.conv_naive"))
    trials = make_trials(exercise, 0, 8)
    expected = reference_returns(exercise, trials)
    found = {
        m.name: m
        for ret, m in standard_mistakes(exercise, trials, expected)
        if ret.name == "db" and m.name.startswith("a mean where a sum belongs")
    }
    (mistake,) = found.values()
    assert mistake.family is MistakeFamily.SCALE
    for trial in trials:
        dout = trial.inputs["dout"]
        np.testing.assert_allclose(mistake.outputs[trial.index], dout.mean(axis=(0, 2, 3)))


def test_values_computed_transposed_then_reshaped_back() -> None:
    """np.outer(center, delta).reshape(outside.shape) where np.outer(delta, center) belongs."""
    exercise = load_exercise(exercise_folder("cs224n.a2.naive_softmax"))
    trials = make_trials(exercise, 0, 8)
    expected = reference_returns(exercise, trials)
    for ret, m in standard_mistakes(exercise, trials, expected):
        if m.family is MistakeFamily.RESHAPE_FOR_TRANSPOSE and ret.name == "gradOutsideVecs":
            for trial in trials:
                right = expected[trial.index][ret.name]
                if trial.index in m.outputs:
                    np.testing.assert_array_equal(m.outputs[trial.index], right.T.reshape(right.shape))
            break
    else:
        pytest.fail("no transposed-then-reshaped slip for gradOutsideVecs")


def test_a_derivative_missing_has_a_backward_only_form_that_keeps_the_values() -> None:
    """relu's mask left out of a backward by hand: the forward's h stays relu(z1), dW1 loses the mask."""
    exercise = load_exercise(exercise_folder("two_layer_net"))
    trials = make_trials(exercise, 0, 4)
    expected = reference_returns(exercise, trials)
    forms = [
        (ret.name, m)
        for ret, m in mutant_mistakes(exercise, trials)
        if m.family is MistakeFamily.DERIVATIVE_MISSING and "relu" in m.name
    ]
    kept = [
        m
        for name, m in forms
        if all(np.array_equal(m.outputs[t.index], expected[t.index][name]) for t in trials)
    ]
    assert kept, "no form of the relu slip keeps any return right: none is backward-only"
