"""The shape rule (grader/judging/shapes.py), alike for every return and every size: axes of length 1
added or dropped are graded with a note; any other shape is an error whose hint names the likely cause."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exercise_folder, grade_source
from hypothesis import given
from hypothesis import strategies as st

from grader.exercise.spec import ReturnSpec, load_exercise
from grader.judging import shapes
from grader.judging.compare import compare
from grader.outcomes import Verdict

VALUE = ReturnSpec(name="g", value="g")
GRADIENT = ReturnSpec(name="dgamma", vjp={"of": "out", "wrt": "gamma", "upstream": "dout"})

sizes = st.integers(min_value=0, max_value=5)
any_shape = st.lists(sizes, min_size=0, max_size=4).map(tuple)


@st.composite
def with_ones(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with axes of length 1 inserted anywhere and some of its own length-1 axes dropped."""
    kept = [n for n in shape if n != 1 or draw(st.booleans())]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        kept.insert(draw(st.integers(min_value=0, max_value=len(kept))), 1)
    return tuple(kept)


@st.composite
def shape_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    expected = draw(any_shape)
    return expected, draw(with_ones(expected))


@given(shape_pairs(), st.sampled_from([VALUE, GRADIENT]))
def test_axes_of_length_one_added_or_dropped_are_graded_with_a_note(
    pair: tuple[tuple[int, ...], tuple[int, ...]], spec: ReturnSpec
) -> None:
    expected_shape, got_shape = pair
    # float64 values that no narrower precision holds: judged at float64, a tight envelope
    expected = np.random.default_rng(0).uniform(1.0, 2.0, expected_shape)
    assert shapes.fits(expected_shape, got_shape) and shapes.fits(got_shape, expected_shape)
    assert shapes.problem(expected_shape, got_shape) is None
    assert compare(0, spec, expected, expected.reshape(got_shape), "float64").verdict is Verdict.PASS
    note = shapes.note(expected_shape, got_shape)
    assert (note is None) == (expected_shape == got_shape)
    if expected.size > 1:  # the same axes, but not the same entries in the same order: wrong values
        assert (
            compare(0, spec, expected, expected.ravel()[::-1].reshape(got_shape), "float64").verdict
            is Verdict.LOGIC
        )


@given(any_shape, any_shape, st.sampled_from([VALUE, GRADIENT]))
def test_any_other_shape_is_refused_whatever_the_sizes_and_never_told_to_squeeze(
    expected_shape: tuple[int, ...], got_shape: tuple[int, ...], spec: ReturnSpec
) -> None:
    if shapes.squeezed(expected_shape) == shapes.squeezed(got_shape):
        return
    result = compare(0, spec, np.ones(expected_shape), np.ones(got_shape), "float64")
    assert result.verdict is Verdict.ERROR
    assert result.problem.startswith(f"shape {got_shape}, expected {expected_shape}")
    assert "squeeze" not in result.problem and "keepdims" not in result.problem


@pytest.mark.parametrize(
    ("expected", "got"),
    [((7,), (1, 7)), ((7,), (7, 1)), ((), (1,)), ((1,), (1, 1)), ((4,), (1, 4, 1, 1)), ((1, 4, 1, 1), (4,))],
)
def test_the_cases_that_were_told_apart_before_are_graded_alike(
    expected: tuple[int, ...], got: tuple[int, ...]
) -> None:
    values = np.linspace(1.0, 2.0, int(np.prod(expected))).reshape(expected)
    for spec in (VALUE, GRADIENT):
        assert compare(0, spec, values, values.reshape(got), "float64").verdict is Verdict.PASS
    note = shapes.note(expected, got)
    assert note is not None and f"graded as {expected}" in note


INPUTS = {"x": (8, 4, 3, 3), "gamma": (4,), "dout": (8, 4, 3, 3)}


@pytest.mark.parametrize(
    ("expected", "got", "inputs", "wrt", "cause"),
    [
        # dgamma returned with x's shape: not summed over the axes gamma is broadcast along
        ((4,), (8, 4, 3, 3), INPUTS, "gamma", "the shape of x: a gradient has the shape of what it is taken"),
        # the same without the inputs known: still the missing sum, from the shapes
        ((4,), (8, 4), None, "gamma", "the sum over the batch axes missing"),
        ((1, 4, 1, 1), (8, 4, 3, 3), None, "gamma", "the sum over the batch axes missing"),
        # a value with extra axes around the expected ones: a (1, C, 1, 1) parameter used as (C,)
        (
            (8, 4, 3, 3),
            (4, 8, 4, 3, 3),
            None,
            None,
            "parameter of shape (1, C, 1, 1) indexed as if it were (C,)",
        ),
        ((8, 4, 3, 3), (8, 4, 3, 3, 2), {"x": (8, 4, 3, 3, 2)}, None, "the shape of the input x"),
        ((3, 5), (5, 3), None, "w", "transposed?"),
        ((3, 5), (15,), None, None, "flattened?"),
    ],
)
def test_a_refused_shape_names_its_likely_cause(
    expected: tuple[int, ...],
    got: tuple[int, ...],
    inputs: dict[str, tuple[int, ...]] | None,
    wrt: str | None,
    cause: str,
) -> None:
    problem = shapes.problem(expected, got, inputs, wrt)
    assert problem is not None and cause in problem, problem
    assert "squeeze" not in problem


def test_a_bias_gradient_not_summed_is_told_it_has_the_upstream_shape(tmp_path: Path) -> None:
    """Graded for real: affine_backward's db = dout. Its trials with one example (N = 1) hand in the
    right entries as (1, M), which the rule grades; the others are refused with the cause."""
    exercise = load_exercise(exercise_folder("affine_backward"))
    source = (exercise.root / "wrong" / "db_not_summed.py").read_text(encoding="utf-8")
    result = grade_source(exercise, tmp_path, "db.py", source, trials=40)
    db = next(r for r in result.returns if r.name == "db")
    assert db.verdict is Verdict.ERROR
    assert "a gradient has the shape of what it is taken with respect to, b" in db.message, db.message


@pytest.mark.parametrize(
    ("exercise_id", "edits", "told"),
    [
        # the 2022 docstring's (C,) where this exercise (and gamma) has (1, C, 1, 1): once a wrong file
        (
            "cs231n.a2.spatial_groupnorm",
            (("axis=(0, 2, 3), keepdims=True)", "axis=(0, 2, 3))"),) * 2,
            "where (1, {C}, 1, 1) is due: graded as (1, {C}, 1, 1)",
        ),
        # keepdims=True: (1, C, 1, 1) where (C,) is due, once a wrong file too
        (
            "cs231n.a2.spatial_batchnorm",
            (
                ("dbeta = dout.sum(axis=0)", "dbeta = dout.sum(axis=0).reshape(1, -1, 1, 1)"),
                (
                    "dgamma = (dout * x_hat).sum(axis=0)",
                    "dgamma = (dout * x_hat).sum(axis=0).reshape(1, -1, 1, 1)",
                ),
            ),
            "where ({C},) is due: graded as ({C},)",
        ),
    ],
)
def test_a_parameter_gradient_with_or_without_its_axes_of_length_one_is_graded_with_a_note(
    tmp_path: Path, exercise_id: str, edits: tuple[tuple[str, str], ...], told: str
) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    source = (exercise.root / "solution.py").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in source
        source = source.replace(old, new, 1)
    result = grade_source(exercise, tmp_path, "hw.py", source, trials=20)
    assert result.error is None and result.score == result.max_score
    for name in ("dgamma", "dbeta"):
        ret = next(r for r in result.returns if r.name == name)
        assert ret.verdict is Verdict.PASS
        sizes = [c for c in range(1, 10) if told.format(C=c) in ret.message]
        assert sizes, ret.message
