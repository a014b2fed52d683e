"""Exercises that call several student functions in order, as CS231n's layers: the forward's outputs are
graded, its cache is the student's own (never compared) and goes to the backward, whose gradients are
graded; reruns and the provenance check run the whole chain."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXERCISES, grade_source, write_exercise

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
    assert all(
        "affine_forward returned a single" in m and "2 values are due: out, cache" in m for m in messages
    )


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


RNN_STEP = """
    import numpy as np


    def rnn_step_forward(x, prev_h, Wx, Wh, b):
        next_h = np.tanh(x @ Wx + prev_h @ Wh + b)
        return next_h, (x, prev_h, Wx, Wh, next_h)


    def rnn_step_backward(dnext_h, cache):
        x, prev_h, Wx, Wh, next_h = cache
        da = dnext_h * (1.0 - next_h * next_h)
        dx, dprev_h, dWx, dWh, db = da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, da.sum(axis=0)
        return dx, dprev_h, dWx, dWh, db
"""
BACKWARD = ("dx", "dprev_h", "dWx", "dWh", "db")


@pytest.fixture(scope="module")
def rnn_step() -> Exercise:
    return load_exercise(EXERCISES / "cs231n" / "a3" / "rnn_step")


@pytest.mark.parametrize(
    ("returned", "got"),
    [
        ("dx, dprev_h, dWx, dWh", "returned 4 values"),  # db forgotten
        ("dx, dprev_h, dWx, dWh, db, da", "returned 6 values"),
        ("[dx, dprev_h, dWx, dWh]", "returned 4 values"),
        ("None", "returned None"),  # a `pass` left where the return belongs
        ("dx", "returned a single numpy.ndarray"),
    ],
)
def test_a_backward_returning_the_wrong_count_leaves_the_forward_graded(
    rnn_step: Exercise, tmp_path: Path, returned: str, got: str
) -> None:
    """The backward's returns err with the count in the message; the forward's next_h keeps its points."""
    source = RNN_STEP.replace("return dx, dprev_h, dWx, dWh, db", f"return {returned}")
    result = grade_source(rnn_step, tmp_path, "rnn_layers.py", source, trials=12)
    assert result.error is None, result.error
    by_name = {r.name: r for r in result.returns}
    assert by_name["next_h"].verdict is Verdict.PASS
    assert by_name["next_h"].score == by_name["next_h"].points == 2
    due = "dx, dprev_h, dWx, dWh, db"
    for name in BACKWARD:
        judged = by_name[name]
        assert (judged.verdict, judged.score, judged.failed_trials) == (Verdict.ERROR, 0.0, 12)
        assert f"rnn_step_backward {got}; 5" in judged.message, judged.message
        assert f"are due: {due}" in judged.message, judged.message
    assert result.score == 2


def test_the_count_message_reads_as_the_student_would_say_it(rnn_step: Exercise, tmp_path: Path) -> None:
    source = RNN_STEP.replace("return dx, dprev_h, dWx, dWh, db", "return dx, dprev_h, dWx, dWh")
    result = grade_source(rnn_step, tmp_path, "rnn_layers.py", source, trials=3)
    message = {r.name: r.message for r in result.returns}["db"]
    assert "rnn_step_backward returned 4 values; 5 are due: dx, dprev_h, dWx, dWh, db" in message, message
    assert "derived by hand" not in message, message  # erring on every trial, the autograd check is no news


def test_a_backward_short_on_some_trials_only_errs_there(rnn_step: Exercise, tmp_path: Path) -> None:
    """A count that depends on the sizes (db dropped when N == 1) fails those trials and no others."""
    source = RNN_STEP.replace(
        "return dx, dprev_h, dWx, dWh, db",
        "return (dx, dprev_h, dWx, dWh) if x.shape[0] == 1 else (dx, dprev_h, dWx, dWh, db)",
    )
    result = grade_source(rnn_step, tmp_path, "rnn_layers.py", source, trials=30)
    by_name = {r.name: r for r in result.returns}
    assert by_name["next_h"].verdict is Verdict.PASS and by_name["next_h"].failed_trials == 0
    failed = {by_name[name].failed_trials for name in BACKWARD}
    assert len(failed) == 1 and 0 < failed.pop() < 30
    assert all(by_name[name].verdict is Verdict.ERROR for name in BACKWARD)


def test_a_forward_returning_the_wrong_count_fails_every_return(rnn_step: Exercise, tmp_path: Path) -> None:
    """Its backward cannot run without the cache: every return errs, and says the forward is why."""
    source = RNN_STEP.replace(
        "return next_h, (x, prev_h, Wx, Wh, next_h)", "return next_h, x, prev_h, Wx, Wh, next_h"
    )
    result = grade_source(rnn_step, tmp_path, "rnn_layers.py", source, trials=5)
    assert result.score == 0
    for judged in result.returns:
        assert judged.verdict is Verdict.ERROR
        assert "rnn_step_forward returned 6 values; 2 are due: next_h, cache" in judged.message, (
            judged.message
        )


def test_a_tuple_subclass_cannot_count_one_number_and_hand_over_another(
    rnn_step: Exercise, tmp_path: Path
) -> None:
    """Hostile code: a tuple whose __len__ says 5 is read by its real length (4)."""
    source = (
        RNN_STEP.replace(
            "return dx, dprev_h, dWx, dWh, db",
            "return Five((dx, dprev_h, dWx, dWh))",
        )
        + """

    class Five(tuple):
        def __len__(self):
            return 5

        def __iter__(self):
            return iter((*tuple.__iter__(self), None))
"""
    )
    result = grade_source(rnn_step, tmp_path, "rnn_layers.py", source, trials=3)
    by_name = {r.name: r for r in result.returns}
    assert by_name["next_h"].verdict is Verdict.PASS
    assert all("rnn_step_backward returned 4 values" in by_name[n].message for n in BACKWARD)
