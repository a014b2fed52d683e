"""`reference: reference.py:function`: the instructor's torch code as the expected values, where the
graph language cannot say them (a 2-D convolution by torch's own conv2d here)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import grade_source, write_exercise

from grader import validation
from grader.errors import SpecError
from grader.exercise.reference import ReferenceGraphError, compute_references, reference_returns
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials

CONV = """
    id: conv_by_reference
    title: A convolution whose reference is torch code
    entry: conv_forward
    args: [x, w, b, {dict: {stride: 1, pad: pad}}]
    binds: [out, cache]
    then:
      - {entry: conv_backward, args: [dout, cache], binds: [dx, dw, db]}
    sizes:
      N: {min: 1, max: 2}
      C: {min: 1, max: 2}
      H: {min: 3, max: 5}
      F: {min: 1, max: 2}
      K: 3
      pad: {min: 0, max: 1}
      HO: H + 2 * pad - K + 1
    inputs:
      x: {shape: [N, C, H, H], dist: normal}
      w: {shape: [F, C, K, K], dist: normal}
      b: {shape: [F], dist: normal}
      dout: {shape: [N, F, HO, HO], dist: normal}
    reference: reference.py:conv
    returns:
      - {name: out, value: out}
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
      - {name: dw, vjp: {of: out, wrt: w, upstream: dout}}
      - {name: db, vjp: {of: out, wrt: b, upstream: dout}}
    trials: 40
    starter: null
"""

REFERENCE = """
    import torch.nn.functional as F


    def conv(x, w, b, pad):
        return {"out": F.conv2d(x, w, b, padding=pad)}
"""

SOLUTION = """
    import numpy as np


    def conv_forward(x, w, b, conv_param):
        p = conv_param["pad"]
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        K, size = w.shape[-1], xp.shape[-1] - w.shape[-1] + 1
        out = np.zeros((x.shape[0], w.shape[0], size, size))
        for i in range(size):
            for j in range(size):
                out[:, :, i, j] = np.einsum("nchw,fchw->nf", xp[:, :, i:i + K, j:j + K], w) + b
        return out, (x, w, p)


    def conv_backward(dout, cache):
        x, w, p = cache
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        dxp, dw, K = np.zeros_like(xp), np.zeros_like(w), w.shape[-1]
        for i in range(dout.shape[2]):
            for j in range(dout.shape[3]):
                dw += np.einsum("nchw,nf->fchw", xp[:, :, i:i + K, j:j + K], dout[:, :, i, j])
                dxp[:, :, i:i + K, j:j + K] += np.einsum("fchw,nf->nchw", w, dout[:, :, i, j])
        H = x.shape[2]
        return dxp[:, :, p:p + H, p:p + H], dw, dout.sum(axis=(0, 2, 3))
"""


def _naive_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    K = w.shape[-1]
    size = xp.shape[-1] - K + 1
    out = np.zeros((x.shape[0], w.shape[0], size, size))
    for n in range(x.shape[0]):
        for f in range(w.shape[0]):
            for i in range(size):
                for j in range(size):
                    out[n, f, i, j] = np.sum(xp[n, :, i : i + K, j : j + K] * w[f]) + b[f]
    return out


def _exercise(folder: Path, spec: str = CONV, reference: str = REFERENCE) -> Exercise:
    return load_exercise(write_exercise(folder, spec, {"reference.py": reference, "solution.py": SOLUTION}))


def test_the_reference_function_gives_the_expected_values_and_their_gradients(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path / "conv")
    trials = make_trials(exercise, 0, 12)
    expected = reference_returns(exercise, trials)
    for trial in trials:
        x, w, b, dout = (trial.inputs[n] for n in ("x", "w", "b", "dout"))
        np.testing.assert_allclose(expected[trial.index]["out"], _naive_conv(x, w, b, trial.sizes["pad"]))
        np.testing.assert_allclose(expected[trial.index]["db"], dout.sum(axis=(0, 2, 3)))
    assert {trial.sizes["pad"] for trial in trials} == {0, 1}


def test_its_rounding_is_measured_like_a_graphs(tmp_path: Path) -> None:
    """The Monte Carlo envelope covers the instructor's torch code: correct float32 code is accepted."""
    exercise = _exercise(tmp_path / "conv")
    references = compute_references(exercise, make_trials(exercise, 0, 4))
    for spread in references.spread.values():
        assert all(np.max(spread[name]) > 0 for name in ("out", "dx", "dw", "db"))


def test_validate_checks_it_against_finite_differences(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path / "conv")
    check = validation.finite_differences(exercise, make_trials(exercise, 0, validation.FD_TRIALS))
    assert check.ok, check.detail


def test_a_correct_hand_in_passes_and_a_forgotten_bias_is_logic(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path / "conv")
    passed = grade_source(exercise, tmp_path / "right", "layers.py", SOLUTION, trials=20)
    assert {r.name: r.verdict.value for r in passed.returns} == dict.fromkeys(
        ("out", "dx", "dw", "db"), "pass"
    )
    no_bias = SOLUTION.replace(", xp[:, :, i:i + K, j:j + K], w) + b", ", xp[:, :, i:i + K, j:j + K], w)")
    wrong = grade_source(exercise, tmp_path / "wrong", "layers.py", no_bias, trials=20)
    assert {r.name: r.verdict.value for r in wrong.returns} == {
        "out": "logic",
        "dx": "pass",
        "dw": "pass",
        "db": "pass",
    }


def test_a_reference_that_vmap_cannot_batch_is_evaluated_trial_by_trial(tmp_path: Path) -> None:
    by_numpy = """
        import numpy as np
        import torch


        def conv(x, w, b, pad):
            pad = int(pad)  # a Python number: vmap cannot batch this, the grader loops over trials
            return {"out": torch.nn.functional.conv2d(x, w, b, padding=pad) + 0 * float(np.float64(1.0))}
    """
    exercise = _exercise(tmp_path / "conv", reference=by_numpy)
    trials = make_trials(exercise, 0, 6)
    for trial in trials:
        x, w, b = (trial.inputs[n] for n in ("x", "w", "b"))
        out = reference_returns(exercise, [trial])[trial.index]["out"]
        np.testing.assert_allclose(out, _naive_conv(x, w, b, trial.sizes["pad"]))


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("def other(x):\n    return {}\n", "defines no function 'conv' (it defines other)"),
        ("def conv(x, w, b, pad):\n    return x\n", "returned Tensor; it must return a dict of named values"),
        ("def conv(x, w, b, pad):\n    return {'output': x}\n", "without ['out'], which the returns name"),
        (
            "def conv(x, weights):\n    return {'out': x}\n",
            "its parameter 'weights' is neither an input nor a size",
        ),
        ("import no_such_module\n", "fails on import: ModuleNotFoundError"),
        (
            "def conv(x, w, b, pad):\n    return {'out': x.no_such_method()}\n",
            "reference: reference.py:conv fails at C=",
        ),
    ],
)
def test_a_broken_reference_says_where_and_what(tmp_path: Path, reference: str, message: str) -> None:
    exercise = _exercise(tmp_path / "conv", reference=reference)
    with pytest.raises(ReferenceGraphError) as caught:
        reference_returns(exercise, make_trials(exercise, 0, 3))
    assert message in str(caught.value)
    assert "reference.py" in str(caught.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("reference: reference.py:conv", "reference: missing.py:conv", "file 'missing.py' does not exist"),
        (
            "reference: reference.py:conv",
            "reference: ../reference.py:conv",
            "is not inside the exercise's folder",
        ),
        ("reference: reference.py:conv", "reference: reference.py", "should match pattern"),
        (
            "reference: reference.py:conv",
            "reference: reference.py:conv\n    graph: 'out = x'",
            "exactly one of graph",
        ),
        ("reference: reference.py:conv", "", "give exactly one of graph"),
    ],
)
def test_a_reference_field_that_cannot_be_used_is_a_spec_error(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        _exercise(tmp_path / "conv", spec=CONV.replace(old, new))
    assert message in str(caught.value), str(caught.value)


def test_a_declared_misconception_is_an_expression_over_the_references_values(tmp_path: Path) -> None:
    """`misconceptions:` work beside a reference as beside a graph: their expressions take the values the
    function returned (here `out`), and a hand-in that matches one is named by it."""
    spec = CONV + textwrap.dedent(
        """
        misconceptions:
          - name: the bias left out
            return: out
            expr: out - reshape(b, (1, F, 1, 1))
            feedback: add b[f] to every output of filter f
        """
    ).replace("\n", "\n    ")
    exercise = _exercise(tmp_path / "conv", spec=spec)
    no_bias = SOLUTION.replace(", xp[:, :, i:i + K, j:j + K], w) + b", ", xp[:, :, i:i + K, j:j + K], w)")
    wrong = grade_source(exercise, tmp_path / "wrong", "layers.py", no_bias, trials=20)
    out = next(r for r in wrong.returns if r.name == "out")
    assert (out.verdict.value, out.misconception) == ("logic", "the bias left out"), out.message
