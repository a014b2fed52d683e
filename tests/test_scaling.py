"""Deciding a trial beyond rounding from its reruns: an error that shrinks with the precision, an overflow
or a cancellation is instability; an error that stays is a mistake. Synthetic runs, judged by the same
functions grading uses, so each rule is seen alone."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT, exercise_folder
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.exercise.settings import Settings
from grader.exercise.spec import ReturnSpec, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.compare import Comparison, Precision, RerunOutcome, compare, infer_precision
from grader.judging.reruns.outcomes import Answered, TorchRefused
from grader.judging.reruns.resolve import resolve_with_rerun
from grader.judging.reruns.scaling import EXTENDED_EPS, HAS_EXTENDED
from grader.outcomes import Verdict
from grader.sandbox.protocol import EXTENDED

CORPUS = ROOT / "tests" / "corpus"
SPEC = ReturnSpec(name="g", value="g")
U64 = 2.0**-52
needs_extended = pytest.mark.skipif(not HAS_EXTENDED, reason="numpy's longdouble is float64 here")


def expected_values(seed: int, n: int = 12) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=(n,))


def first(expected: np.ndarray, got: np.ndarray) -> Comparison:
    comparison = compare(0, SPEC, expected, got, "float64", np.zeros_like(expected))
    assert comparison.verdict is Verdict.LOGIC and comparison.precision is Precision.FLOAT64
    return comparison


def decided(
    expected: np.ndarray, got: np.ndarray, extended: np.ndarray | None, rerun: np.ndarray | None = None
) -> Comparison:
    """The trial decided with a rerun at float64 (the same values unless given: float64 code) and one in
    extended precision (None: it failed)."""
    at_float64 = Answered(got if rerun is None else rerun, "float64")
    above = TorchRefused("TypeError: can't convert np.ndarray of type numpy.longdouble")
    return resolve_with_rerun(
        first(expected, got),
        SPEC,
        expected,
        np.zeros_like(expected),
        got,
        at_float64,
        Answered(extended, EXTENDED) if extended is not None else above,
    )


@needs_extended
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), amplification=st.floats(1e3, 1e12))
def test_amplified_rounding_that_shrinks_with_the_precision_is_instability(
    seed: int, amplification: float
) -> None:
    """Rounding amplified by the formula: the same error pattern, u'/u of the size, in extended precision."""
    expected = expected_values(seed)
    noise = np.random.default_rng(seed + 1).standard_normal(expected.shape)
    got = expected + amplification * U64 * noise * expected
    rerun = expected + amplification * EXTENDED_EPS * noise * expected
    judged = decided(expected, got, rerun)
    assert judged.verdict is Verdict.INSTABILITY
    assert judged.rerun in (RerunOutcome.SHRINKS, RerunOutcome.RIGHT_HIGHER)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), factor=st.sampled_from([-1.0, 0.5, 2.0, 0.9, 1.1]))
def test_a_mistake_stays_at_any_precision(seed: int, factor: float) -> None:
    """Sign, factor 2 or a 10% slip: the error does not shrink when the arithmetic gets more precise."""
    expected = expected_values(seed)
    wrong = expected * factor
    noise = np.random.default_rng(seed + 1).standard_normal(expected.shape)
    got = wrong + 1e6 * U64 * noise * wrong  # plus amplified rounding of its own
    rerun = wrong + 1e6 * EXTENDED_EPS * noise * wrong
    judged = decided(expected, got, rerun if HAS_EXTENDED else None)
    assert judged.verdict is Verdict.LOGIC, judged.note


@needs_extended
def test_overflow_in_float64_right_in_extended_precision_is_instability() -> None:
    expected = expected_values(0)
    got = expected.copy()
    got[[1, 4]] = np.nan  # exp(710) / exp(710)
    judged = decided(expected, got, expected.copy())
    assert judged.verdict is Verdict.INSTABILITY and judged.rerun is RerunOutcome.RIGHT_HIGHER
    assert "right when rerun in extended precision" in judged.note


@needs_extended
def test_overflow_hiding_a_mistake_is_logic() -> None:
    """NaN at float64, and finite but wrong where extended precision can hold the values: the mistake."""
    expected = expected_values(1)
    got = 2 * expected
    got[[0, 3]] = np.inf
    judged = decided(expected, got, 2 * expected)
    assert judged.verdict is Verdict.LOGIC and judged.rerun is RerunOutcome.STILL_WRONG


@pytest.mark.parametrize("extended_runs", [True, False])
def test_overflow_no_rerun_can_lift_is_instability(extended_runs: bool) -> None:
    """Torch code has nothing above float64: NaN where finite values were due is the format's range."""
    if extended_runs and not HAS_EXTENDED:
        pytest.skip("numpy's longdouble is float64 here")
    expected = expected_values(2)
    got = np.full_like(expected, np.nan)
    judged = decided(expected, got, got.copy() if extended_runs else None)
    assert judged.verdict is Verdict.INSTABILITY and judged.rerun is RerunOutcome.OVERFLOWS


def test_a_float64_mistake_no_rerun_can_lift_stays_logic() -> None:
    expected = expected_values(3)
    judged = decided(expected, -expected, None)
    assert judged.verdict is Verdict.LOGIC
    assert "could not be rerun above float64" in judged.note and "float64's rounding alone" in judged.note


@needs_extended
def test_values_lost_to_cancellation_at_both_precisions_are_instability() -> None:
    """1 - (1 - e^x) at x below -44: 0 in float64 and in extended precision alike."""
    x = np.linspace(-60, -45, 6)
    expected = np.exp(x) / (1 + np.exp(x))
    zeros = np.zeros_like(expected)
    judged = decided(expected, zeros, zeros.copy())
    assert judged.verdict is Verdict.INSTABILITY and judged.rerun is RerunOutcome.CANCELLED


@needs_extended
def test_a_zero_where_an_ordinary_value_is_due_is_a_mistake() -> None:
    """The cancellation rule covers values below float64's resolution of 1 only: a dropped term is not."""
    expected = expected_values(4)
    judged = decided(expected, np.zeros_like(expected), np.zeros_like(expected))
    assert judged.verdict is Verdict.LOGIC


def test_float32_code_right_when_lifted_is_instability() -> None:
    expected = expected_values(5)
    got32 = expected.astype(np.float32)
    got32[2] = np.inf
    comparison = compare(0, SPEC, expected, got32, "float32", np.zeros_like(expected))
    judged = resolve_with_rerun(
        comparison, SPEC, expected, np.zeros_like(expected), got32, Answered(expected.copy(), "float64")
    )
    assert judged.verdict is Verdict.INSTABILITY and judged.rerun is RerunOutcome.RIGHT_HIGHER


def test_cancelled_float64_values_are_not_read_as_float32() -> None:
    """1 - 1 / (1 + e^x) in float64 keeps a few bits of each value; they fit float32 exactly, yet are no
    float32 work: the precision named must be float64."""
    x = np.linspace(-36, -30, 40)
    values = 1.0 - 1.0 / (1.0 + np.exp(x))
    assert np.all(values.astype(np.float32).astype(np.float64) == values)
    assert infer_precision(values, "float64")[0] is Precision.FLOAT64
    genuine = (np.exp(x) / (1 + np.exp(x))).astype(np.float32).astype(np.float64)
    assert infer_precision(genuine, "float64")[0] is Precision.FLOAT32


@pytest.mark.parametrize(
    ("exercise_id", "variant", "name"),
    [
        ("softmax_ce", "unstable_naive_astype32.py", "user_grad"),  # numpy float32, lifted by the rerun
        ("softmax_large", "unstable_naive_torch_f64.py", "dz"),  # torch float64: NaN, no rerun above
    ],
)
def test_a_verdict_does_not_change_with_the_trial_count(exercise_id: str, variant: str, name: str) -> None:
    """Every trial beyond rounding is rerun and decided alone: 250 trials or 2,000, the same verdicts
    (with at most 200 rerun, the others following them, a float32 softmax flipped between the two)."""
    exercise = load_exercise(exercise_folder(exercise_id))
    submission = submission_from_path(CORPUS / exercise_id / variant, exercise.spec.entry)
    few, many = (grade(exercise, submission, Settings(0, trials)) for trials in (250, 2000))
    assert {r.name: r.verdict for r in few.returns} == {r.name: r.verdict for r in many.returns}
    assert {r.name: r.verdict for r in many.returns}[name] is Verdict.INSTABILITY
