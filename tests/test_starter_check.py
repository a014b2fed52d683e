"""`grader validate`'s starter check: students start from the spec's signatures, in the spec's order."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_exercise, exercise_folder

from grader.exercise.spec import load_exercise
from grader.validation import _starter


def _check(tmp_path: Path, exercise_id: str, starter: str) -> tuple[bool, str]:
    folder = copy_exercise(tmp_path / "ex", source=exercise_folder(exercise_id))
    exercise = load_exercise(folder, authoring=True)
    assert exercise.spec.starter is not None
    exercise.path_of(exercise.spec.starter).write_text(starter, encoding="utf-8")
    check = _starter(exercise, exercise.spec.starter)
    return check.ok, check.detail


@pytest.mark.parametrize(
    ("signature", "said"),
    [
        # The cache (x, w, b) taken apart into its first part, after a weight where dout belongs.
        ("W, x", "parameter 1 is 'W', but the spec passes dout there and (x, w, b) as argument 2"),
        ("dout, x", "parameter 2 is 'x', one part of the tuple (x, w, b)"),
        ("cache, dout", "parameter 2 is 'dout', but the spec passes (x, w, b) there and dout as argument 1"),
    ],
)
def test_a_starter_taking_the_arguments_in_another_order_fails(
    tmp_path: Path, signature: str, said: str
) -> None:
    ok, detail = _check(tmp_path, "affine_backward", f"def affine_backward({signature}):\n    pass\n")
    assert not ok
    assert said in detail
    assert "affine_backward(" in detail and "[dout, (x, w, b)]" in detail


@pytest.mark.parametrize("signature", ["dout, cache", "upstream, saved", "dout, cache, extra=None"])
def test_a_starter_may_rename_its_parameters(tmp_path: Path, signature: str) -> None:
    ok, detail = _check(tmp_path, "affine_backward", f"def affine_backward({signature}):\n    pass\n")
    assert ok, detail


def test_the_spec_s_order_is_checked_without_case(tmp_path: Path) -> None:
    """CS231n writes W for the weights its spec may call w: `(x, W, b)` is in order, `(W, x, b)` is not."""
    ok, detail = _check(
        tmp_path,
        "cs231n.a2.affine",
        "def affine_forward(x, W, b):\n    pass\ndef affine_backward(dout, cache):\n    pass\n",
    )
    assert ok, detail
    ok, detail = _check(
        tmp_path / "again",
        "cs231n.a2.affine",
        "def affine_forward(W, x, b):\n    pass\ndef affine_backward(dout, cache):\n    pass\n",
    )
    assert not ok and "parameter 1 is 'W'" in detail
