"""Expected returns: the graph in float64 with autograd equals the gradients derived by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import write_exercise

from grader.exercise.reference import ReferenceGraphError, forward_values, reference_returns
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trial, make_trials


def sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


@pytest.fixture(scope="module")
def graph2_expected(graph2: Exercise) -> tuple[list, dict]:  # type: ignore[type-arg]
    trials = make_trials(graph2, 7, 60)
    return trials, reference_returns(graph2, trials)


def test_graph2_matches_the_hand_derived_gradient(graph2_expected) -> None:  # type: ignore[no-untyped-def]
    trials, expected = graph2_expected
    assert set(expected) == {t.index for t in trials}
    for trial in trials:
        W, x, b = (trial.inputs[k] for k in ("W_np", "x_np", "b_np"))
        s = sigmoid(W @ x + b)
        got = expected[trial.index]
        assert set(got) == {"f", "auto_grad", "user_grad"}
        assert got["f"].shape == () and got["f"].dtype == np.float64
        np.testing.assert_allclose(got["f"], s.sum(), rtol=1e-13)
        hand = (s * (1 - s)) @ x.T  # df/dW_ij = sigma'(u_i) x_j
        assert got["auto_grad"].shape == W.shape
        np.testing.assert_allclose(got["auto_grad"], hand, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(got["auto_grad"], got["user_grad"])


def test_graph2_reference_is_not_symmetric_in_the_gradient(graph2_expected) -> None:  # type: ignore[no-untyped-def]
    """A transposed gradient must be detectable: the expected gradients are far from symmetric."""
    trials, expected = graph2_expected
    for trial in trials:
        grad = expected[trial.index]["user_grad"]
        assert np.max(np.abs(grad - grad.T)) > 1e-3 * np.max(np.abs(grad))


def test_vjp_cross_entropy_matches_the_hand_derived_gradients(ce_exercise: Exercise) -> None:
    trials = make_trials(ce_exercise, 3, 40)
    expected = reference_returns(ce_exercise, trials)
    for trial in trials:
        X, labels, W, G, lam = (trial.inputs[k] for k in ("X", "labels", "W", "G", "lam"))
        n, c = X.shape
        Z = X @ W
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        Y = np.eye(c)[labels]
        got = expected[trial.index]
        loss = -np.mean(np.log(P[np.arange(n), labels])) + lam * np.sum(W * W)
        np.testing.assert_allclose(got["loss"], loss, rtol=1e-12)
        np.testing.assert_allclose(got["P"], P, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got["dW"], X.T @ (P - Y) / n + 2 * lam * W, rtol=1e-10, atol=1e-13)
        # vjp of H = 2 relu(X W) with upstream G, w.r.t. X: (2 G * [Z > 0]) @ W.T
        assert got["dX"].shape == X.shape
        np.testing.assert_allclose(got["dX"], (2 * G * (Z > 0)) @ W.T, rtol=1e-12, atol=1e-14)


def test_batched_evaluation_equals_one_by_one(graph2: Exercise, ce_exercise: Exercise) -> None:
    for exercise in (graph2, ce_exercise):
        trials = make_trials(exercise, 11, 40)
        assert len({t.size_key for t in trials}) < len(trials)  # several trials share a size: real batches
        batched = reference_returns(exercise, trials)
        for trial in trials:
            alone = reference_returns(exercise, [trial])[trial.index]
            for name, value in alone.items():
                assert batched[trial.index][name].shape == value.shape
                np.testing.assert_allclose(batched[trial.index][name], value, rtol=1e-14, atol=1e-15)


def test_reference_does_not_touch_the_inputs(graph2: Exercise) -> None:
    trials = make_trials(graph2, 0, 10)
    before = {t.index: {k: v.copy() for k, v in t.inputs.items()} for t in trials}
    reference_returns(graph2, trials)
    for trial in trials:
        for name, array in trial.inputs.items():
            np.testing.assert_array_equal(array, before[trial.index][name])


def test_forward_values_with_an_override(graph2: Exercise) -> None:
    trial = make_trial(graph2, 0, 0)
    W = trial.inputs["W_np"] * 2
    values = forward_values(graph2, trial, {"W_np": W})
    s = sigmoid(W @ trial.inputs["x_np"] + trial.inputs["b_np"])
    np.testing.assert_allclose(values["f"], s.sum(), rtol=1e-13)


def test_unused_input_gets_a_zero_gradient(tmp_path: Path) -> None:
    exercise = load_exercise(
        write_exercise(
            tmp_path / "z",
            """
        id: z
        title: unused
        entry: z
        args: [a, b]
        inputs:
          a: {shape: [3]}
          b: {shape: [3]}
        graph: |
          f = sum(a * a)
        returns:
          - {name: db, grad: {of: f, wrt: b}}
          - {name: da, grad: {of: f, wrt: a}}
        solution: null
        starter: null
    """,
        )
    )
    trials = make_trials(exercise, 0, 3)
    expected = reference_returns(exercise, trials)
    for trial in trials:
        np.testing.assert_array_equal(expected[trial.index]["db"], np.zeros(3))
        np.testing.assert_allclose(expected[trial.index]["da"], 2 * trial.inputs["a"])


def test_grad_of_a_non_scalar_is_an_authors_error(tmp_path: Path) -> None:
    exercise = load_exercise(
        write_exercise(
            tmp_path / "v",
            """
        id: v
        title: vector grad
        entry: v
        args: [a]
        inputs:
          a: {shape: [3]}
        graph: |
          y = a * 2
        returns:
          - {name: dy, grad: {of: y, wrt: a}}
        solution: null
        starter: null
    """,
        )
    )
    with pytest.raises(ReferenceGraphError, match="vjp"):
        reference_returns(exercise, make_trials(exercise, 0, 2))


def test_rounding_spread_does_not_pull_in_the_compiler() -> None:
    """Importing torch._dynamo costs over a second on every `grader check`; the Monte Carlo run avoids it."""
    code = (
        "import sys; from pathlib import Path; "
        "from grader.exercise.spec import load_exercise; from grader.exercise.trials import make_trials; "
        "from grader.exercise.reference import compute_references; "
        "e = load_exercise(Path('exercises/mac0460/graph2')); compute_references(e, make_trials(e, 0, 5)); "
        "print('torch._dynamo' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("module", ["grader.cli", "grader.grading", "grader.classrun"])
def test_the_grading_path_imports_torch_only_when_it_needs_it(module: str) -> None:
    """`grader check` and `grader run` start their warm workers first: torch's import (over a second) then
    runs in both at once instead of one after the other."""
    code = f"import sys, {module}; print('torch' in sys.modules)"
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
