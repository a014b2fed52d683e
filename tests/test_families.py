"""Mistake families derived from the graph: each yields the variant a real mistake computes, names it on
real-style student code, and never names right values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exercise_folder, grade_source, write_exercise

from grader.exercise.reference import compute_references, reference_returns
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.judging.compare import compare_many
from grader.judging.naming.diagnosis import diagnose
from grader.judging.naming.families import dropped_paths, graph_families, term_scales, wrong_axes
from grader.outcomes import MistakeFamily
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Returned

SVM_WITH_REG = """
    id: svm_demo
    title: SVM loss with L2
    entry: svm_loss
    args: [W, X, y, reg]
    sizes: {N: {min: 2, max: 6}, D: {min: 1, max: 4}, C: {min: 2, max: 4}}
    inputs:
      W: {shape: [D, C], dist: normal, std: 0.5}
      X: {shape: [N, D], dist: normal}
      y: {shape: [N], dist: integer, low: 0, high: C - 1}
      reg: {dist: uniform, low: 0.1, high: 1, type: python}
    graph: |
      scores = X @ W
      onehot = one_hot(y, C)
      correct = sum(scores * onehot, dim=1, keepdim=True)
      margins = relu(scores - correct + 1) * (1 - onehot)
      data_loss = sum(margins) / N
      loss = data_loss + reg * sum(W * W)
    returns:
      - {name: loss, value: loss}
      - {name: dW, grad: {of: loss, wrt: W}}
    solution: null
    starter: null
"""

BATCHNORM = """
    id: bn_demo
    title: batchnorm backward
    entry: bn
    args: [dout, x, gamma, beta, eps]
    sizes: {N: {min: 3, max: 6}, D: {min: 1, max: 4}}
    inputs:
      dout: {shape: [N, D], dist: normal}
      x: {shape: [N, D], dist: normal, mean: 3, std: 2}
      gamma: {shape: [D], dist: uniform, low: 0.5, high: 3}
      beta: {shape: [D], dist: normal}
      eps: {dist: uniform, low: 0.00001, high: 0.0001, type: python}
    graph: |
      xc = x - mean(x, dim=0)
      out = gamma * xc / sqrt(var(x, dim=0) + eps) + beta
    returns:
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
    solution: null
    starter: null
"""


@pytest.fixture(scope="module")
def svm(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("families") / "svm", SVM_WITH_REG))


@pytest.fixture(scope="module")
def batchnorm(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("families") / "bn", BATCHNORM))


def _variant(slips: list, name: str) -> Exercise:  # type: ignore[type-arg]
    found = [s for s in slips if s.name == name]
    assert len(found) == 1, [s.name for s in slips]
    variant: Exercise = found[0].variant
    return variant


def test_each_term_of_the_loss_is_scaled_by_each_size(svm: Exercise) -> None:
    slips = list(term_scales(svm))
    assert all(s.family is MistakeFamily.TERM_SCALE for s in slips)
    trials = make_trials(svm, 0, 5)
    right = reference_returns(svm, trials)
    over_n = reference_returns(_variant(slips, "the term `reg * sum(W * W)` of loss divided by N"), trials)
    without = reference_returns(_variant(slips, "the term `data_loss` of loss without its 1/N"), trials)
    classes = reference_returns(
        _variant(slips, "the term `data_loss` of loss divided by C where N belongs"), trials
    )
    for t in trials:
        n, c = t.sizes["N"], t.sizes["C"]
        reg_grad = 2 * float(t.inputs["reg"]) * t.inputs["W"]
        data_grad = right[t.index]["dW"] - reg_grad
        assert np.allclose(over_n[t.index]["dW"], data_grad + reg_grad / n)
        assert np.allclose(without[t.index]["dW"], data_grad * n + reg_grad)
        assert np.allclose(classes[t.index]["dW"], data_grad * n / c + reg_grad)
    # a term of a layer's (non-scalar) output is never scaled by a size
    assert not list(term_scales(load_exercise(exercise_folder("cs231n.a2.batchnorm"))))


def test_a_statistics_path_is_dropped_with_detach(batchnorm: Exercise) -> None:
    slips = list(dropped_paths(batchnorm))
    assert all(s.family is MistakeFamily.DROPPED_PATH for s in slips)
    names = [s.name for s in slips]
    variance = (
        "the path through var(x, dim=0) (the var over the batch axis 0) dropped: "
        "x reaches out also through it"
    )
    assert variance in names and names.index(variance) < names.index(next(n for n in names if "every" in n))
    trials = make_trials(batchnorm, 0, 5)
    dropped = reference_returns(_variant(slips, variance), trials)
    for t in trials:
        x, dout, gamma, eps = t.inputs["x"], t.inputs["dout"], t.inputs["gamma"], float(t.inputs["eps"])
        std = np.sqrt(x.var(axis=0) + eps)
        assert np.allclose(dropped[t.index]["dx"], gamma / std * (dout - dout.mean(axis=0)))


def test_a_path_that_is_the_only_one_is_not_a_dropped_path(svm: Exercise) -> None:
    # W reaches the loss only through scores in the data term: detaching it is no "other path" mistake
    # for the data term alone, but W also reaches the loss through the penalty, so scores may be dropped;
    # X (not differentiated) never appears in a name.
    names = [s.name for s in dropped_paths(svm)]
    assert names and all("W reaches loss" in n for n in names)
    assert not any(n.startswith("the path through reg") for n in names)


def test_reductions_over_other_axes(tmp_path: Path) -> None:
    exercise = load_exercise(exercise_folder("cs231n.a2.spatial_batchnorm"))
    slips = {s.name: s for s in wrong_axes(exercise)}
    instance = "the mean and var over the spatial axes (2, 3) instead of the batch and spatial axes (0, 2, 3)"
    assert instance in slips and slips[instance].family is MistakeFamily.WRONG_AXES
    assert "instance norm" in slips[instance].feedback
    trials = make_trials(exercise, 0, 3)
    computed = reference_returns(slips[instance].variant, trials)
    for t in trials:
        x, gamma, beta, eps = t.inputs["x"], t.inputs["gamma"], t.inputs["beta"], float(t.inputs["eps"])
        x_hat = (x - x.mean(axis=(2, 3), keepdims=True)) / np.sqrt(x.var(axis=(2, 3), keepdims=True) + eps)
        want = gamma.reshape(1, -1, 1, 1) * x_hat + beta.reshape(1, -1, 1, 1)
        assert np.allclose(computed[t.index]["out"], want)
    # group norm's statistics are of a reshaped tensor: the axes before the reshape are tried too
    grouped = [s.name for s in wrong_axes(load_exercise(exercise_folder("cs231n.a2.spatial_groupnorm")))]
    assert any("spatial axes (2, 3) of x" in n for n in grouped)
    assert any("axes (1, 2) (G, CG * H * W)" in n for n in grouped)


@pytest.mark.parametrize(
    "exercise_id",
    ["batchnorm_backward", "cs231n.a1.svm_loss_vectorized", "cs231n.a2.spatial_groupnorm"],
)
def test_right_values_are_never_named(exercise_id: str) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    assert list(graph_families(exercise))
    references = compute_references(exercise, make_trials(exercise, 0, 24))
    for spec in exercise.spec.returns:
        returned = {
            t.index: Returned(
                ReturnedArray(name=spec.name, ok=True, dtype="float64", source="numpy"),
                references.expected[t.index][spec.name],
            )
            for t in references.trials
        }
        trials = sorted(returned)
        compared = compare_many(
            spec,
            trials,
            [references.expected[i][spec.name] for i in trials],
            [returned[i].array for i in trials],
            ["float64"] * len(trials),
            [references.spread[i][spec.name] for i in trials],
        )
        assert diagnose(exercise, references, spec, returned, {c.trial: c for c in compared}) is None


REG_OVER_N = """
    import numpy as np

    def svm_loss_vectorized(W, X, y, reg):
        n = X.shape[0]
        scores = X.dot(W)
        margins = np.maximum(0, scores - scores[np.arange(n), y][:, None] + 1)
        margins[np.arange(n), y] = 0
        loss = margins.sum() / n + reg * np.sum(W * W)
        binary = (margins > 0).astype(float)
        binary[np.arange(n), y] = -binary.sum(axis=1)
        dW = (X.T.dot(binary) + 2 * reg * W) / n
        return loss, dW
"""

NO_MEAN_PATH = """
    import numpy as np

    def batchnorm_backward(dout, cache):
        x, gamma, beta, eps = cache
        n = x.shape[0]
        mu, var = x.mean(axis=0), x.var(axis=0)
        x_hat = (x - mu) / np.sqrt(var + eps)
        dx_hat = dout * gamma
        dvar = np.sum(dx_hat * (x - mu), axis=0) * -0.5 * (var + eps) ** -1.5
        dx = dx_hat / np.sqrt(var + eps) + dvar * 2 * (x - mu) / n
        return dx, (dout * x_hat).sum(axis=0), dout.sum(axis=0)
"""


@pytest.mark.parametrize(
    ("exercise_id", "source", "ret", "name", "family"),
    [
        (
            "cs231n.a1.svm_loss_vectorized",
            REG_OVER_N,
            "dW",
            "the term `reg * sum(W * W)` of loss divided by N",
            MistakeFamily.TERM_SCALE,
        ),
        (
            "batchnorm_backward",
            NO_MEAN_PATH,
            "dx",
            "the path through mu (the mean over the batch axis 0) dropped",
            MistakeFamily.DROPPED_PATH,
        ),
    ],
    ids=["reg-gradient-over-N", "batchnorm-without-mean-path"],
)
def test_real_style_mistakes_are_named(
    tmp_path: Path, exercise_id: str, source: str, ret: str, name: str, family: MistakeFamily
) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    result = grade_source(exercise, tmp_path, "handin.py", source, trials=30)
    graded = {r.name: r for r in result.returns}
    named = graded[ret].misconception
    assert named is not None and named.startswith(name), graded[ret]
    assert graded[ret].mistake_family is family
    assert all(r.verdict.value == "pass" for r in result.returns if r.name != ret)
