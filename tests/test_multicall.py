"""Exercises that call several student functions in order, as CS231n's layers: the forward's outputs are
graded, its cache is the student's own (never compared) and goes to the backward, whose gradients are
graded; reruns and the provenance check run the whole chain."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import grade_source, write_exercise

from grader.errors import SpecError
from grader.exercise.spec import Exercise, load_exercise
from grader.outcomes import Verdict

SPEC = """
    id: affine_layer
    title: An affine layer, forward then backward with the forward's cache
    entry: affine_forward
    args: [x, w, b, {dict: {mode: train}}]
    binds: [out, cache]
    then:
      - {entry: affine_backward, args: [dout, cache], binds: [dx, dw, db]}
    sizes:
      N: {min: 2, max: 5}
      D: {min: 2, max: 4}
      M: {min: 2, max: 4}
    inputs:
      x: {shape: [N, D], dist: normal}
      w: {shape: [D, M], dist: normal}
      b: {shape: [M], dist: normal}
      dout: {shape: [N, M], dist: normal}
    graph: |
      out = x @ w + b
    returns:
      - {name: out, value: out}
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}, by_hand: true}
      - {name: dw, vjp: {of: out, wrt: w, upstream: dout}, by_hand: true}
      - {name: db, vjp: {of: out, wrt: b, upstream: dout}, by_hand: true}
    trials: 30
    solution: null
    starter: null
"""

LAYERS = """
    import numpy as np


    def affine_forward(x, w, b, param):
        assert param == {"mode": "train"}
        out = x @ w + b
        return out, {"inputs": (x, w), "note": "the student's own cache: any object"}


    def affine_backward(dout, cache):
        x, w = cache["inputs"]
        return dout @ w.T, x.T @ dout, dout.sum(axis=0)
"""


@pytest.fixture(scope="module")
def exercise(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("layer") / "affine_layer", SPEC))


def verdicts(exercise: Exercise, tmp_path: Path, source: str) -> dict[str, Verdict]:
    result = grade_source(exercise, tmp_path, "layers.py", source, trials=30)
    assert result.error is None, result.error
    return {r.name: r.verdict for r in result.returns}


def test_a_forward_and_its_backward_are_graded_together(exercise: Exercise, tmp_path: Path) -> None:
    assert verdicts(exercise, tmp_path, LAYERS) == dict.fromkeys(("out", "dx", "dw", "db"), Verdict.PASS)


def test_a_mistake_in_the_backward_is_logic_there_only(exercise: Exercise, tmp_path: Path) -> None:
    wrong = LAYERS.replace("dout.sum(axis=0)", "dout.mean(axis=0)")
    got = verdicts(exercise, tmp_path, wrong)
    assert got == {"out": Verdict.PASS, "dx": Verdict.PASS, "dw": Verdict.PASS, "db": Verdict.LOGIC}


def test_a_mistake_in_the_forward_shows_in_its_outputs(exercise: Exercise, tmp_path: Path) -> None:
    wrong = LAYERS.replace("out = x @ w + b", "out = x @ w - b")
    assert verdicts(exercise, tmp_path, wrong)["out"] is Verdict.LOGIC


def test_a_backward_done_by_autograd_through_the_cache_is_autograd(
    exercise: Exercise, tmp_path: Path
) -> None:
    source = """
        import torch


        def affine_forward(x, w, b, param):
            leaves = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
            out = leaves[0] @ leaves[1] + leaves[2]
            return out.detach().numpy(), (out, leaves)


        def affine_backward(dout, cache):
            out, leaves = cache
            out.backward(torch.tensor(dout))
            return tuple(leaf.grad.numpy() for leaf in leaves)
    """
    got = verdicts(exercise, tmp_path, source)
    assert got == {
        "out": Verdict.PASS,
        "dx": Verdict.AUTOGRAD,
        "dw": Verdict.AUTOGRAD,
        "db": Verdict.AUTOGRAD,
    }


def test_a_backward_that_raises_leaves_the_forward_graded(exercise: Exercise, tmp_path: Path) -> None:
    """CS231n's `dx_pad[:, :, pad:-pad, pad:-pad]` breaks only the backward: the forward is still right."""
    raising = LAYERS.replace('x, w = cache["inputs"]', 'x, w = cache["inputs"]\n        1 / 0')
    result = grade_source(exercise, tmp_path, "raising.py", raising, trials=10)
    got = {r.name: r for r in result.returns}
    assert got["out"].verdict is Verdict.PASS
    for name in ("dx", "dw", "db"):
        assert got[name].verdict is Verdict.ERROR
        assert "affine_backward() raised ZeroDivisionError" in got[name].message, got[name].message


def test_a_backward_that_is_not_defined_is_named(exercise: Exercise, tmp_path: Path) -> None:
    only_forward = LAYERS[: LAYERS.index("    def affine_backward")]
    result = grade_source(exercise, tmp_path, "forward_only.py", only_forward, trials=5)
    assert result.error is not None and "affine_backward" in result.error.message


def test_a_forward_returning_no_cache_says_so(exercise: Exercise, tmp_path: Path) -> None:
    source = LAYERS.replace(
        'return out, {"inputs": (x, w), "note": "the student\'s own cache: any object"}', "return out"
    )
    result = grade_source(exercise, tmp_path, "nocache.py", source, trials=5)
    messages = [r.message for r in result.returns]
    assert all("affine_forward returned a single" in m and "(out, cache)" in m for m in messages), messages


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("    binds: [out, cache]\n", "", "name it with binds"),
        ("args: [dout, cache]", "args: [dout, cash]", "'cash' is neither an input nor a size"),
        ("binds: [dx, dw, db]", "binds: [dx, dw, x]", "'x' is already an input"),
        ("{name: db, vjp:", "{name: dbias, vjp:", "'dbias' is not among the calls' binds"),
    ],
)
def test_a_broken_chain_is_a_spec_error_at_its_line(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in SPEC
    folder = write_exercise(tmp_path / "bad", SPEC.replace(old, new))
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert words in str(info.value), info.value
