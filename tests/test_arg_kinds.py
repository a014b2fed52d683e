"""Inputs handed out as a course hands them (torch tensors, float32, Python numbers) and returns of a
looser shape (CS224n's checks take a (1, d) gradient for a (d,) vector): declared in the YAML, seen by the
student's code exactly so, and graded against a reference computed from the very same values."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import grade_source, write_exercise

from grader.errors import SpecError
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.outcomes import Verdict

SPEC = """
    id: kinds
    title: A linear score, as EECS498 hands it out
    entry: score
    args: [W, x, reg]
    sizes:
      d: {min: 2, max: 6}
    inputs:
      W: {shape: [d, d], dist: normal, type: torch, dtype: float32}
      x: {shape: [d], dist: uniform, low: 0.5, high: 1.5}
      reg: {dist: uniform, low: 0.5, high: 2.0, type: python}
    graph: |
      s = W @ x
      loss = reg * sum(s * s)
    returns:
      - {name: loss, value: loss}
      - {name: dx, grad: {of: loss, wrt: x}, shape: SHAPE}
    trials: 30
    solution: null
    starter: null
"""

TYPED = """
    import numpy as np
    import torch


    def score(W, x, reg):
        # what the exercise declares, exactly: a float32 cpu tensor, a float64 array, a Python float
        assert isinstance(W, torch.Tensor) and W.dtype == torch.float32 and W.device.type == "cpu", W
        assert isinstance(x, np.ndarray) and x.dtype == np.float64, x
        assert type(reg) is float, type(reg)
        Wn = W.double().numpy()
        s = Wn @ x
        return reg * float(s @ s), RETURN
"""


def exercise(tmp_path: Path, shape: str = "loose") -> Exercise:
    return load_exercise(write_exercise(tmp_path / f"kinds_{shape}", SPEC.replace("SHAPE", shape)))


def test_the_reference_sees_the_float32_values_the_student_gets(tmp_path: Path) -> None:
    trial = make_trials(exercise(tmp_path), 0, 3)[2]
    W = trial.inputs["W"]
    assert W.dtype.name == "float64" and (W.astype("float32").astype("float64") == W).all()


def test_declared_kinds_reach_the_student_and_right_code_passes(tmp_path: Path) -> None:
    result = grade_source(
        exercise(tmp_path), tmp_path, "ok.py", TYPED.replace("RETURN", "2 * reg * Wn.T @ s")
    )
    assert result.error is None, result.error
    assert {r.name: r.verdict for r in result.returns} == {"loss": Verdict.PASS, "dx": Verdict.PASS}


def test_a_mistake_with_typed_inputs_is_logic(tmp_path: Path) -> None:
    result = grade_source(exercise(tmp_path), tmp_path, "noreg.py", TYPED.replace("RETURN", "2 * Wn.T @ s"))
    assert {r.name: r.verdict for r in result.returns}["dx"] is Verdict.LOGIC


def test_a_row_for_a_vector_is_graded_and_said_so_and_strict_is_refused(tmp_path: Path) -> None:
    row = TYPED.replace("RETURN", "(2 * reg * Wn.T @ s).reshape(1, -1)")
    loose = grade_source(exercise(tmp_path, "loose"), tmp_path, "row.py", row)
    dx = next(r for r in loose.returns if r.name == "dx")
    assert dx.verdict is Verdict.PASS, dx.message
    assert "returned with shape (1, 2) where (2,) is due: graded as (2,)" in dx.message
    with pytest.raises(SpecError, match="shape 'strict' is no more"):
        exercise(tmp_path, "strict")


def test_a_loose_return_still_needs_the_same_entries(tmp_path: Path) -> None:
    wrong = TYPED.replace("RETURN", "np.outer(2 * reg * Wn.T @ s, np.ones(2))")
    dx = next(
        r
        for r in grade_source(exercise(tmp_path, "loose"), tmp_path, "w.py", wrong).returns
        if r.name == "dx"
    )
    assert dx.verdict is Verdict.ERROR


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("reg: {dist: uniform, low: 0.5, high: 2.0, type: python}", "reg: {shape: [d], type: python}", "reg"),
        (
            "x: {shape: [d], dist: uniform, low: 0.5, high: 1.5}",
            "x: {shape: [d], dist: integer, low: 0, high: 3, dtype: float32}",
            "x",
        ),
        ("type: torch, dtype: float32}", "type: tensor}", "W"),
    ],
)
def test_a_wrong_kind_is_a_spec_error_at_its_line(tmp_path: Path, old: str, new: str, field: str) -> None:
    spec = SPEC.replace("SHAPE", "loose")
    assert old in spec
    folder = write_exercise(tmp_path / "bad", spec.replace(old, new))
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert field in str(info.value), info.value


PARAM_SPEC = """
    id: scaled
    title: A layer with a parameter dict, as CS231n's bn_param
    entry: scaled_backward
    args: [dout, x, {dict: {mode: train, eps: eps, momentum: 0.9}}, {value: null}]
    sizes:
      n: {min: 2, max: 5}
    inputs:
      dout: {shape: [n], dist: normal}
      x: {shape: [n], dist: uniform, low: 1, high: 2}
      eps: {dist: uniform, low: 0.1, high: 0.5, type: python}
    graph: |
      out = x / (x + eps)
    returns:
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
    trials: 20
    solution: null
    starter: null
"""


def test_dict_and_literal_arguments_reach_the_student(tmp_path: Path) -> None:
    exercise = load_exercise(write_exercise(tmp_path / "scaled", PARAM_SPEC))
    source = """
        def scaled_backward(dout, x, param, cache):
            assert cache is None and param["mode"] == "train" and param["momentum"] == 0.9, (param, cache)
            eps = param["eps"]
            assert type(eps) is float
            return dout * eps / (x + eps) ** 2
    """
    result = grade_source(exercise, tmp_path, "layer.py", source)
    assert result.error is None, result.error
    assert [r.verdict for r in result.returns] == [Verdict.PASS], [r.message for r in result.returns]
    wrong = grade_source(exercise, tmp_path, "wrong.py", source.replace("dout * eps", "dout * x"))
    assert [r.verdict for r in wrong.returns] == [Verdict.LOGIC]


NORM_SPEC = """
    id: norm
    title: A normalised running sum, with var, cumsum and permute in the graph
    entry: norm
    args: [x, dout]
    sizes:
      n: {min: 3, max: 8}
      d: {min: 1, max: 4}
    inputs:
      x: {shape: [n, d], dist: normal, mean: 2, std: 1.5}
      dout: {shape: [d, n], dist: normal}
    graph: |
      xhat = (x - mean(x, dim=0)) / sqrt(var(x, dim=0) + 0.1)
      y = permute(cumsum(xhat, dim=0), 1, 0)
    returns:
      - {name: y, value: y}
      - {name: dx, vjp: {of: y, wrt: x, upstream: dout}}
    trials: 200
    solution: null
    starter: null
"""

NORM = """
    import numpy as np
    import torch


    def norm(x, dout):
        xt = torch.tensor(x, dtype=DTYPE, requires_grad=True)
        xhat = (xt - xt.mean(0)) / torch.sqrt(xt.var(0, unbiased=False) + 0.1)
        y = torch.cumsum(xhat, 0).T
        y.backward(torch.tensor(dout, dtype=DTYPE))
        return y, xt.grad
"""


@pytest.mark.parametrize("dtype", ["torch.float64", "torch.float32"])
def test_var_cumsum_and_permute_give_references_correct_code_meets(tmp_path: Path, dtype: str) -> None:
    exercise = load_exercise(write_exercise(tmp_path / "norm", NORM_SPEC))
    result = grade_source(exercise, tmp_path, "norm.py", NORM.replace("DTYPE", dtype), trials=200)
    assert {r.name: r.verdict for r in result.returns} == {"y": Verdict.PASS, "dx": Verdict.PASS}, [
        r.message for r in result.returns
    ]
    unbiased = NORM.replace("DTYPE", dtype).replace("unbiased=False", "unbiased=True")
    wrong = grade_source(exercise, tmp_path, "unbiased.py", unbiased, trials=200)
    assert {r.name: r.verdict for r in wrong.returns}["y"] is Verdict.LOGIC


MASK_SPEC = """
    id: masked
    title: A masked sum, the mask handed out as CS231n hands it (booleans)
    entry: masked_sum
    args: [x, mask]
    sizes:
      n: {min: 2, max: 6}
    inputs:
      x: {shape: [n], dist: normal}
      mask: {shape: [n], dist: bernoulli, p: 0.6, type: TYPE, dtype: bool}
    graph: |
      loss = sum(x * mask)
    returns:
      - {name: loss, value: loss}
      - {name: dx, grad: {of: loss, wrt: x}}
    trials: 30
    solution: null
    starter: null
"""

BOOL_INDEXING = """
    import numpy as np


    def masked_sum(x, mask):
        mask = np.asarray(mask)
        assert mask.dtype == np.bool_, mask.dtype  # booleans, not 0/1 floats
        dx = np.zeros_like(x)
        dx[mask] = 1.0
        return x[mask].sum(), dx
"""


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_bool_mask_is_handed_out_as_booleans_and_indexes(tmp_path: Path, kind: str) -> None:
    """`x[mask]` needs a boolean mask; the reference computes with the same mask's 0/1 values."""
    exercise = load_exercise(write_exercise(tmp_path / f"masked_{kind}", MASK_SPEC.replace("TYPE", kind)))
    assert make_trials(exercise, 0, 1)[0].inputs["mask"].dtype.name == "float64"
    result = grade_source(exercise, tmp_path, "masked.py", BOOL_INDEXING)
    assert result.error is None, result.error
    assert {r.name: r.verdict for r in result.returns} == {"loss": Verdict.PASS, "dx": Verdict.PASS}, [
        r.message for r in result.returns
    ]


@pytest.mark.parametrize(
    "mask",
    [
        "mask: {shape: [n], dist: normal, dtype: bool}",
        "mask: {dist: bernoulli, p: 0.5, type: python, dtype: bool}",
    ],
)
def test_a_bool_dtype_is_only_for_a_bernoulli_mask_array(tmp_path: Path, mask: str) -> None:
    spec = MASK_SPEC.replace("mask: {shape: [n], dist: bernoulli, p: 0.6, type: TYPE, dtype: bool}", mask)
    with pytest.raises(SpecError) as info:
        load_exercise(write_exercise(tmp_path / "bad_mask", spec))
    assert "mask" in str(info.value), info.value
