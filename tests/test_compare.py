"""Comparing one returned array with its float64 reference: shapes, precision, tolerance, ulps."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import grader.judging.compare as compare_module
from grader.exercise.spec import ReturnSpec
from grader.judging.compare import Precision, PrecisionBasis, compare, infer_precision
from grader.judging.shapes import problem as shape_problem
from grader.outcomes import Verdict

DEFAULT = ReturnSpec(name="g", value="g")
EXACT = ReturnSpec(name="g", value="g", atol=0.0, rtol=0.0)


def grad(d: int = 4, seed: int = 0) -> np.ndarray:
    """A generic non-symmetric gradient-like array."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, size=(d, 1)) @ rng.uniform(0.5, 1.5, size=(1, d + 1))


@pytest.mark.parametrize(
    ("expected", "got", "hint"),
    [
        ((3, 2), (2, 3), "transposed?"),
        ((2, 3, 4), (4, 3, 2), "transposed?"),
        ((2, 3, 4), (3, 2, 4), "transposed or permuted?"),
        ((3, 3), (9,), "flattened?"),
        ((2, 6), (3, 4), "reshape?"),
        ((4, 4), (4, 1), "summed over an axis that is due"),
        ((5,), (3, 5), "an array broadcast against one with more axes"),
        ((4, 4), (3, 3), ""),
    ],
)
def test_shape_mismatch_says_expected_and_got(
    expected: tuple[int, ...], got: tuple[int, ...], hint: str
) -> None:
    result = compare(0, DEFAULT, np.ones(expected), np.ones(got), "float64")
    assert result.verdict is Verdict.ERROR
    assert f"expected {expected}" in result.problem
    assert str(got) in result.problem
    if hint:
        assert hint in result.problem
    else:
        assert "?" not in result.problem


def test_transposed_square_gradient_is_a_value_error_not_a_shape_error() -> None:
    expected = grad(4)[:, :4]
    result = compare(0, DEFAULT, expected, expected.T.copy(), "float64")
    assert result.verdict is Verdict.LOGIC
    assert result.problem == ""


@pytest.mark.parametrize("got_shape", [(), (1,), (1, 1), (1, 1, 1)])
@pytest.mark.parametrize("expected_shape", [(), (1,), (1, 1)])
def test_one_element_returns_accept_any_one_element_shape(
    expected_shape: tuple[int, ...], got_shape: tuple[int, ...]
) -> None:
    assert shape_problem(expected_shape, got_shape) is None
    result = compare(0, DEFAULT, np.full(expected_shape, 2.5), np.full(got_shape, 2.5), "float64")
    assert result.verdict is Verdict.PASS
    wrong = compare(0, DEFAULT, np.full(expected_shape, 2.5), np.full(got_shape, 3.5), "float64")
    assert wrong.verdict is Verdict.LOGIC


def test_scalar_expected_but_vector_returned() -> None:
    result = compare(0, DEFAULT, np.array(2.5), np.full((3, 1), 2.5), "float64")
    assert result.verdict is Verdict.ERROR
    assert "(3, 1)" in result.problem and "expected ()" in result.problem


def test_exact_float64_answer_passes() -> None:
    expected = grad()
    result = compare(0, DEFAULT, expected, expected.copy(), "float64")
    assert result.verdict is Verdict.PASS
    assert result.failing == () and result.failing_count == 0
    assert result.precision is Precision.FLOAT64


def test_float32_inferred_from_a_float64_array_holding_float32_values() -> None:
    expected = grad()
    hidden = expected.astype(np.float32).astype(np.float64)
    precision, reason = infer_precision(hidden, "float64")
    assert precision is Precision.FLOAT32
    assert reason.basis is PrecisionBasis.VALUES and "float32" in reason.text
    result = compare(0, DEFAULT, expected, hidden, "float64")
    assert result.precision is Precision.FLOAT32
    assert result.verdict is Verdict.PASS  # rounding to float32 is within the float32 envelope


def test_genuine_float64_is_not_mistaken_for_float32() -> None:
    expected = grad()
    precision, _ = infer_precision(expected, "float64")
    assert precision is Precision.FLOAT64
    # an error of float32 size in a real float64 result is far beyond float64 rounding
    off = expected * (1 + 1e-6)
    assert compare(0, DEFAULT, expected, off, "float64").verdict is Verdict.LOGIC


def test_simple_numbers_are_not_taken_for_float32_work() -> None:
    values = np.array([0.0, 0.5, 1.0, -2.0])
    assert infer_precision(values, "float64")[0] is Precision.FLOAT64


def test_returned_dtype_sets_the_precision() -> None:
    expected = grad()
    for dtype in ("float32", "float16"):
        got = expected.astype(dtype)
        result = compare(0, DEFAULT, expected, got, dtype)
        assert result.precision is Precision(dtype)
        assert result.verdict is Verdict.PASS


def test_float32_rounding_with_explicit_tolerance_is_precision_not_logic() -> None:
    spec = ReturnSpec(name="g", value="g", atol=1e-12, rtol=1e-12)
    expected = grad()
    rounded = expected.astype(np.float32)
    result = compare(0, spec, expected, rounded, "float32")
    assert result.verdict is Verdict.PRECISION
    assert result.failing_count > 0
    assert all(e.abs_error > 1e-12 for e in result.failing)
    # and the same tolerance calls a real mistake logic
    wrong = compare(0, spec, expected, (expected * 1.01).astype(np.float32), "float32")
    assert wrong.verdict is Verdict.LOGIC
    transposed = compare(0, spec, expected[:, :4], expected[:, :4].T.copy(), "float64")
    assert transposed.verdict is Verdict.LOGIC


def test_loose_explicit_tolerance_passes_what_it_allows() -> None:
    spec = ReturnSpec(name="g", value="g", atol=1e-3)
    expected = grad()
    assert compare(0, spec, expected, expected + 5e-4, "float64").verdict is Verdict.PASS
    assert compare(0, spec, expected, expected + 5e-3, "float64").verdict is Verdict.LOGIC


def test_failing_entries_are_the_wrong_ones_worst_first() -> None:
    expected = grad(5)
    got = expected.copy()
    got[1, 2] += 0.5
    got[3, 0] -= 2.0
    result = compare(0, DEFAULT, expected, got, "float64")
    assert result.verdict is Verdict.LOGIC
    assert result.failing_count == 2
    assert [e.index for e in result.failing] == [(3, 0), (1, 2)]
    worst = result.failing[0]
    assert worst.expected == expected[3, 0] and worst.got == got[3, 0]
    assert worst.abs_error == pytest.approx(2.0)
    assert worst.rel_error == pytest.approx(2.0 / abs(expected[3, 0]))
    assert result.failing_mask is not None
    assert result.failing_mask.sum() == 2 and result.failing_mask[1, 2] and result.failing_mask[3, 0]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_failures(bad: float) -> None:
    expected = grad()
    got = expected.copy()
    got[2, 1] = bad
    result = compare(0, DEFAULT, expected, got, "float64")
    assert result.verdict is Verdict.LOGIC
    assert [e.index for e in result.failing] == [(2, 1)]
    # even a tolerance that allows anything finite does not allow NaN
    lenient = ReturnSpec(name="g", value="g", atol=1e6)
    assert compare(0, lenient, expected, got, "float64").verdict is not Verdict.PASS


def test_all_nan_is_a_failure() -> None:
    expected = grad()
    result = compare(0, DEFAULT, expected, np.full_like(expected, np.nan), "float64")
    assert result.verdict is Verdict.LOGIC
    assert result.failing_count == expected.size


def test_matching_infinities_pass() -> None:
    expected = np.array([np.inf, -np.inf, 1.0])
    assert compare(0, DEFAULT, expected, expected.copy(), "float64").verdict is Verdict.PASS


@given(
    exponent=st.integers(min_value=-20, max_value=20),
    mantissa=st.integers(min_value=0, max_value=(1 << 23) - 1000),
    steps=st.integers(min_value=1, max_value=999),
    negative=st.booleans(),
)
def test_ulps_are_counted_in_float32_spacing(
    exponent: int, mantissa: int, steps: int, negative: bool
) -> None:
    # a float32 value and the one `steps` representable float32 numbers further from zero, same binade
    value = np.float32(np.ldexp(1.0 + mantissa / 2**23, exponent))
    if negative:
        value = -value
    further = value
    for _ in range(steps):
        further = np.nextafter(further, np.float32(np.inf) if value > 0 else np.float32(-np.inf))
    # one value that float16 also holds (1 + 2**-10, say) reads as float16 work: not this test's case
    with np.errstate(over="ignore"):  # beyond float16's range it is not float16, as wanted
        assume(float(np.float16(further)) != float(further))
    assume(np.float32(further).view(np.uint32) & 0xFFFF != 0)  # nor bfloat16 (8 significant bits)
    expected = np.array([float(value)])
    result = compare(0, EXACT, expected, np.array([further], dtype=np.float32), "float32")
    assert result.precision is Precision.FLOAT32
    (entry,) = result.failing
    assert entry.ulps == pytest.approx(steps, rel=1e-9)
    assert entry.abs_error == pytest.approx(steps * 2.0 ** (exponent - 23), rel=1e-9)


def test_ulps_are_counted_in_float64_spacing() -> None:
    expected = np.array([1.0, 1.0, 0.75])
    got = np.array([np.nextafter(np.nextafter(1.0, 2), 2), np.nextafter(1.0, 0), np.nextafter(0.75, 0)])
    result = compare(0, EXACT, expected, got, "float64")
    assert result.precision is Precision.FLOAT64
    by_index = {e.index: e.ulps for e in result.failing}
    # an ulp is the spacing at the expected value: just below 1.0 the spacing is half of 1.0's
    assert by_index == {(0,): pytest.approx(2.0), (1,): pytest.approx(0.5), (2,): pytest.approx(1.0)}


def test_precision_inference_ignores_nan() -> None:
    values = grad().astype(np.float32).astype(np.float64)
    values[0, 0] = np.nan
    assert infer_precision(values, "float64")[0] is Precision.FLOAT32


def test_judging_many_trials_at_once_equals_one_by_one() -> None:
    compare_many = getattr(compare_module, "compare_many", None)
    if compare_many is None:
        pytest.skip("no batched comparison in this version")
    rng = np.random.default_rng(3)
    expected, got, dtypes = [], [], []
    for k in range(24):
        e = grad(2 + k % 3, seed=k)
        kind = k % 6
        if kind == 0:
            g, d = e.copy(), "float64"
        elif kind == 1:
            g, d = e.astype(np.float32), "float32"
        elif kind == 2:
            g, d = e.astype(np.float32).astype(np.float64), "float64"
        elif kind == 3:
            g, d = e + rng.normal(0, 1e-3, e.shape), "float64"
        elif kind == 4:
            g, d = e.T.copy(), "float64"
        else:
            g, d = e.copy(), "float64"
            g[0, 0] = np.nan
        expected.append(e)
        got.append(g)
        dtypes.append(d)
    # One return of one submission is computed alike in every trial (its precision is read from all of
    # them together), so batching is checked within each kind of submission.
    for spec in (DEFAULT, ReturnSpec(name="g", value="g", atol=1e-9, rtol=1e-9)):
        together = [
            comparison
            for kind in range(6)
            for comparison in compare_many(
                spec,
                list(range(kind, 24, 6)),
                expected[kind::6],
                got[kind::6],
                dtypes[kind::6],
            )
        ]
        for batched in together:
            k = batched.trial
            alone = compare(k, spec, expected[k], got[k], dtypes[k])
            assert batched.trial == alone.trial == k
            assert batched.verdict is alone.verdict, k
            assert batched.precision == alone.precision
            assert batched.failing_count == alone.failing_count
            assert batched.problem == alone.problem
            assert [e.index for e in batched.failing] == [e.index for e in alone.failing]
            assert batched.max_ratio == pytest.approx(alone.max_ratio, rel=1e-12, nan_ok=True)


@pytest.mark.parametrize("sizes", [[], [0], [3, 0, 4], [1, 5, 2, 6]])
def test_judging_with_prepared_expected_values_equals_judging_without(sizes: list[int]) -> None:
    rng = np.random.default_rng(len(sizes))
    expected = [rng.normal(size=(n, 2)) for n in sizes]
    spreads = [np.abs(rng.normal(size=e.shape)) for e in expected]
    got = [e + rng.normal(0, 1e-3, e.shape) * (k % 2) for k, e in enumerate(expected)]
    trials = list(range(len(sizes)))
    prepared = compare_module.flatten(expected, spreads)
    for dtypes in (
        ["float64"] * len(sizes),
        ["float64", "float32"] * (len(sizes) // 2) + ["float64"] * (len(sizes) % 2),
    ):
        plain = compare_module.compare_many(DEFAULT, trials, expected, got, dtypes, spreads)
        quick = compare_module.compare_many(
            DEFAULT, trials, expected, got, dtypes, spreads, flattened=prepared
        )
        assert [(c.trial, c.verdict, c.failing_count, c.entries) for c in quick] == [
            (c.trial, c.verdict, c.failing_count, c.entries) for c in plain
        ]
        assert [c.max_ratio for c in quick] == [c.max_ratio for c in plain]
    assert [c.verdict for c in plain] == [
        Verdict.PASS if k % 2 == 0 or not n else Verdict.LOGIC for k, n in enumerate(sizes)
    ]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # the trial's entries
            st.sampled_from([0.0, 1e-17, 1e-12, 1e-6, 1e-3, 1.0]),  # how far off its returned values are
            st.sampled_from(["float64", "float32"]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([DEFAULT, ReturnSpec(name="g", value="g", atol=1e-9, rtol=1e-9)]),
)
def test_within_rounding_says_what_the_verdicts_of_every_trial_say(
    trials: list[tuple[int, float, str]], spec: ReturnSpec
) -> None:
    """Naming a mistake asks only whether every trial would pass or be rounding: the same answer as
    judging each trial in full."""
    rng = np.random.default_rng(len(trials))
    expected = [rng.normal(size=(n,)) for n, _, _ in trials]
    spreads = [np.abs(rng.normal(size=(n,))) * 1e-16 for n, _, _ in trials]
    got = [
        (e + off * rng.normal(size=e.shape)).astype(dtype).astype(np.float64)
        for e, (_, off, dtype) in zip(expected, trials, strict=True)
    ]
    dtypes = [dtype for _, _, dtype in trials]
    judged = compare_module.compare_many(spec, list(range(len(trials))), expected, got, dtypes, spreads)
    matching = all(c.verdict in (Verdict.PASS, Verdict.PRECISION) for c in judged)
    assert compare_module.within_rounding(spec, expected, got, dtypes, spreads) is matching


@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # the trial's entries
            st.sampled_from([0.0, 1e-17, 1e-12, 1e-6, 1e-3, 1.0, np.nan]),  # how far off its values are
            st.sampled_from(["float64", "float32"]),
            st.booleans(),  # returned in another shape
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([DEFAULT, ReturnSpec(name="g", value="g", atol=1e-9, rtol=1e-9)]),
)
def test_passing_trials_kept_as_columns_read_as_the_comparisons_of_each_trial(
    trials: list[tuple[int, float, str, bool]], spec: ReturnSpec
) -> None:
    """A class's judging keeps the trials that pass as columns: read by trial, they are the Comparisons
    judging them one by one gives, and the trials that did not pass are listed as they are."""
    rng = np.random.default_rng(len(trials))
    expected = [rng.normal(size=(n, 1)) for n, _, _, _ in trials]
    spreads = [np.abs(rng.normal(size=e.shape)) * 1e-16 for e in expected]
    got = [
        (e + off * rng.normal(size=e.shape))
        .astype(dtype)
        .astype(np.float64)
        .reshape((1, -1) if flat else e.shape)
        for e, (_, off, dtype, flat) in zip(expected, trials, strict=True)
    ]
    dtypes = [dtype for _, _, dtype, _ in trials]
    indices = [10 * k + 3 for k in range(len(trials))]  # trial numbers are not positions
    one_by_one = compare_module.compare_many(spec, indices, expected, got, dtypes, spreads)
    columns = compare_module.compare_columns(spec, indices, expected, got, dtypes, spreads)
    assert sorted(columns) == indices and len(columns) == len(indices)
    for alone in one_by_one:
        kept = columns[alone.trial]
        assert (kept.trial, kept.verdict, kept.precision, kept.precision_reason, kept.entries) == (
            alone.trial,
            alone.verdict,
            alone.precision,
            alone.precision_reason,
            alone.entries,
        )
        assert kept.max_ratio == pytest.approx(alone.max_ratio, rel=1e-12, nan_ok=True)
        assert (alone.trial in columns.others) is (alone.verdict is not Verdict.PASS)
    assert sum(len(p.trials) for p in columns.passing) == sum(c.verdict is Verdict.PASS for c in one_by_one)


def test_a_failing_trial_lists_its_worst_entries_with_their_values() -> None:
    expected = np.arange(12.0).reshape(3, 4) + 1.0
    got = expected.copy()
    got[2, 1] += 5.0
    got[0, 3] -= 1.0
    judged = compare(0, DEFAULT, expected, got, "float64")
    assert judged.verdict is Verdict.LOGIC
    worst, second = judged.failing
    assert (worst.index, worst.expected, worst.got, worst.abs_error) == ((2, 1), 10.0, 15.0, 5.0)
    assert worst.rel_error == pytest.approx(0.5)
    assert (second.index, second.got, second.abs_error) == ((0, 3), 3.0, 1.0)
    assert all(type(v) is float for v in (worst.expected, worst.got, worst.ulps, worst.envelope_ratio))
    scalar = compare(0, DEFAULT, np.asarray(2.0), np.asarray(3.0), "float64")
    assert [(e.index, e.got) for e in scalar.failing] == [((), 3.0)]


def test_a_return_that_overflows_the_error_arithmetic_is_judged_without_a_warning() -> None:
    """1.7e308 against -1.5e308: the error overflows to inf, which is the verdict's evidence, never a
    RuntimeWarning naming the grader's file (a student reads the terminal), nor within a tolerance that
    overflowed too."""
    expected, got = np.array([-1.5e308, 3.0]), np.array([1.7e308, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loose = compare(0, ReturnSpec(name="g", value="g", rtol=10.0), expected, got, "float64")
        strict = compare(0, ReturnSpec(name="g", value="g"), expected, got, "float64")
    assert loose.verdict is strict.verdict is Verdict.LOGIC
