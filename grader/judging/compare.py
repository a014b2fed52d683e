"""Compare one returned array with its float64 reference, entry by entry.

Each entry gets its absolute and relative error, its error in units in the last place (ulps) of the
precision the student worked in, and its ratio to the rounding envelope of that precision:

    eps · (MAGNITUDE_FACTOR · (|expected| + max|expected|) + SPREAD_FACTOR · spread) + MAGNITUDE_FACTOR · tiny

`spread` is the entry's rounding sensitivity from the reference's Monte Carlo run (cancellation, such as
the `1 - s` of a sigmoid's derivative or a sum whose terms cancel); the magnitude terms cover formulas that
round differently from the graph and rounding that shared intermediates spread across an array; `tiny`
is the floor for underflow. Bugs (transpose, sign, factor, wrong product) land orders of magnitude beyond.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from enum import Enum

import numpy as np

from grader.exercise.spec import ReturnSpec
from grader.judging import shapes
from grader.outcomes import Verdict

# Calibrated on graph2 (2000 trials, sizes 2-9; see README): correct float32/float16/bfloat16 code with
# several formulas reached 0.24 of this envelope, a transposed float32 gradient 535 times it.
MAGNITUDE_FACTOR = 4.0
SPREAD_FACTOR = 16.0
# Without a Monte Carlo spread (comparisons outside grading), the magnitude term must cover cancellation
# alone: correct float32 graph2 reaches 14 units of eps · (|expected| + max|expected|).
FALLBACK_MAGNITUDE_FACTOR = 64.0
MAX_LISTED_ENTRIES = 10
# A trial's inputs' shapes by its number: for the likely cause of a returned shape refused (shapes.py).
InputShapes = Callable[[int], Mapping[str, tuple[int, ...]]]


class Precision(Enum):
    """A floating-point format a return is judged in, by its numpy dtype's name."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"

    @classmethod
    def of_dtype(cls, dtype: str) -> Precision | None:
        """The format of a returned (or declared) dtype; None for any other (int64, longdouble)."""
        return _BY_DTYPE.get(dtype)

    @property
    def eps(self) -> float:
        """Spacing of numbers just above 1: twice the unit roundoff."""
        return _FORMATS[self].eps

    @property
    def tiny(self) -> float:
        """Smallest normal number."""
        return _FORMATS[self].tiny

    @property
    def largest(self) -> float:
        """Largest finite number: beyond it, the format overflows."""
        return _FORMATS[self].largest

    @property
    def bits(self) -> int:
        """Significant bits, the implicit one included."""
        return round(-math.log2(self.eps)) + 1


@dataclass(frozen=True)
class _Format:
    eps: float
    tiny: float
    largest: float


_FORMATS = {
    Precision.FLOAT64: _Format(2.0**-52, float(np.finfo(np.float64).tiny), float(np.finfo(np.float64).max)),
    Precision.FLOAT32: _Format(2.0**-23, float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)),
    # numpy has no bfloat16: float32's exponent range, 8 significant bits.
    Precision.BFLOAT16: _Format(2.0**-7, float(np.finfo(np.float32).tiny), 3.3895313892515355e38),
    Precision.FLOAT16: _Format(2.0**-10, float(np.finfo(np.float16).tiny), float(np.finfo(np.float16).max)),
}
_BY_DTYPE = {precision.value: precision for precision in Precision}


@dataclass(frozen=True)
class EntryError:
    index: tuple[int, ...]
    expected: float
    got: float
    abs_error: float
    rel_error: float
    ulps: float
    envelope_ratio: float


class RerunOutcome(Enum):
    """What running a trial again above its precision showed of a trial beyond rounding
    (reruns/resolve.py decides, from that trial's runs alone)."""

    NONE = "none"  # not beyond rounding: nothing to decide
    NOT_RERUN = "not rerun"  # the reruns stopped before this trial (an earlier one timed out)
    RERUN_FAILED = "rerun failed"  # the rerun timed out, or ran out of memory
    # The code raised or returned another shape only when rerun: it refused the rerun's input (a check of
    # its type or dtype, torch's tensor()), so the rerun says nothing either way of the formula.
    REFUSED = "rerun refused"
    HARD_CODED = "hard-coded precision"  # the rerun came back no finer than the first run: judged there
    OVERFLOWS = "overflows"  # infinities or NaN where finite values were due: the format's range
    NEVER_FINITE = "never finite"  # NaN or infinities on every trial, which no rerun confirmed: no range
    RIGHT_HIGHER = "right at higher precision"
    SHRINKS = "error shrinks with the precision"  # by the ratio of the formats' unit roundoffs: rounding
    CANCELLED = "cancelled at both precisions"  # 0 where values below the format's resolution were due
    STILL_WRONG = "still wrong at higher precision"
    # float64 code with nothing above float64 (torch), run again on inputs moved by a shift that leaves
    # the exercise's values unchanged (judging/invariance.py)
    RIGHT_SHIFTED = "right on shifted inputs"  # finite but wrong at first
    RANGE_SHIFTED = "NaN or infinite, right on shifted inputs"
    WRONG_SHIFTED = "still wrong on shifted inputs"
    ONLY_SHIFTED = "right only on shifted inputs, on every trial"  # no trial right as it was: a mistake
    # The same call (same inputs, same seed, nothing lifted) answered otherwise when run again: state kept
    # between calls. No rerun of such code says anything of its precision: judged by its values.
    CHANGED = "changed between identical calls"

    @property
    def unstable(self) -> bool:
        """Whether it shows a numerically unstable formula rather than a mistake."""
        return self in (
            RerunOutcome.OVERFLOWS,
            RerunOutcome.RIGHT_HIGHER,
            RerunOutcome.SHRINKS,
            RerunOutcome.CANCELLED,
            RerunOutcome.RIGHT_SHIFTED,
            RerunOutcome.RANGE_SHIFTED,
        )

    @property
    def speaks_of_envelopes(self) -> bool:
        """Whether its note (reruns.py) gives the rerun's error in rounding envelopes: a report that shows
        the note then says what an envelope is."""
        return self in (RerunOutcome.STILL_WRONG, RerunOutcome.WRONG_SHIFTED)


class PrecisionBasis(Enum):
    """How the precision a return is judged at was found: a report names it only where it is not the one
    the return plainly has."""

    DTYPE = "dtype"  # the dtype it came back in
    GIVEN = "given"  # set for the comparison from outside (the precision its code hard-codes, say)
    VALUES = "values"  # a coarser format than its dtype, that every value it returned fits
    RECOMPUTED = "recomputed"  # float64: the values its rerun at float64 gave again, bit for bit

    @property
    def said(self) -> bool:
        return self in (PrecisionBasis.VALUES, PrecisionBasis.RECOMPUTED)


@dataclass(frozen=True)
class PrecisionReason:
    """Why a return is judged at its precision: how it was found, and in words."""

    basis: PrecisionBasis
    text: str = ""


AS_RETURNED = PrecisionReason(PrecisionBasis.DTYPE)


@dataclass(frozen=True)
class Comparison:
    """One return of one trial, judged."""

    trial: int
    verdict: Verdict
    precision: Precision = Precision.FLOAT64
    precision_reason: PrecisionReason = AS_RETURNED
    dtype: str = ""  # as returned, where it failed: a float64 array may hold a narrower format's values
    max_ratio: float = 0.0  # worst |error| / envelope over the entries
    max_rel_error: float = 0.0
    # How far off in the student's terms: the largest |error| among the finite entries returned, the
    # largest |expected| of the trial (what a relative error is told against), the non-finite entries.
    max_abs_error: float = 0.0
    largest_expected: float = 0.0
    nan_entries: int = 0
    inf_entries: int = 0
    failing: tuple[EntryError, ...] = ()  # worst first
    failing_count: int = 0
    entries: int = 0
    failing_mask: np.ndarray | None = None
    problem: str = ""  # for verdict error: what was wrong with the value
    # `problem` with an exception's message of several lines cut to its first: the traceback shown under
    # a report's table tells the rest. "" where nothing is cut.
    brief: str = ""
    ran: bool = True  # False: the submission stopped before this trial was called (an import error, say)
    rerun: RerunOutcome = RerunOutcome.NONE
    shrink: float | None = None  # how many times smaller the failing entries' error was in the rerun
    note: str = ""  # in words: what the rerun at float64 showed, or how the values were judged

    @classmethod
    def passed(
        cls, trial: int, precision: Precision, reason: PrecisionReason, max_ratio: float, entries: int
    ) -> Comparison:
        """A passing trial. Built without the generated __init__, whose frozen assignment of every field
        costs more than judging the trial's entries did, for every trial of every return of a class: its
        attributes a copy of the defaults' dict with five set, cheaper than updating the object's own."""
        comparison = object.__new__(cls)
        values = _PASSED_FIELDS.copy()
        values["trial"], values["precision"], values["precision_reason"] = trial, precision, reason
        values["max_ratio"], values["entries"] = max_ratio, entries
        object.__setattr__(comparison, "__dict__", values)
        return comparison


_PASSED_FIELDS = {f.name: f.default for f in fields(Comparison) if f.default is not MISSING} | {
    "verdict": Verdict.PASS
}


@dataclass(frozen=True)
class Passing:
    """Trials of one return that passed at one precision, as columns: a class's hand-ins pass nearly every
    trial, and a Comparison object for each cost more than judging their entries did (3,000 a graph2
    hand-in, a fifth of the grader's judging)."""

    trials: list[int]
    ratios: list[float]  # each one's worst |error| / envelope
    entries: list[int]
    precision: Precision
    reason: PrecisionReason

    def comparison(self, k: int) -> Comparison:
        return Comparison.passed(self.trials[k], self.precision, self.reason, self.ratios[k], self.entries[k])


class Compared(Mapping[int, Comparison]):
    """One return's trials judged, by trial: those that passed as columns (`passing`), the others one by one
    (`others`). Read as a mapping, it builds a passing trial's Comparison when asked; the judging steps ask
    only for `others` and the columns' summaries."""

    def __init__(self, passing: Sequence[Passing] = (), others: Mapping[int, Comparison] | None = None):
        self.passing = tuple(p for p in passing if p.trials)
        self.others: Mapping[int, Comparison] = dict(others or {})
        self._where: dict[int, tuple[Passing, int]] | None = None

    def __getitem__(self, trial: int) -> Comparison:
        found = self.others.get(trial)
        if found is not None:
            return found
        if self._where is None:
            self._where = {t: (p, k) for p in self.passing for k, t in enumerate(p.trials)}
        passing, k = self._where[trial]
        return passing.comparison(k)

    def __iter__(self) -> Iterator[int]:
        for passing in self.passing:
            yield from passing.trials
        yield from self.others

    def __len__(self) -> int:
        return sum(len(p.trials) for p in self.passing) + len(self.others)

    def with_others(self, others: Mapping[int, Comparison]) -> Compared:
        """The same passing trials, and `others` instead of the trials that did not pass."""
        return Compared(self.passing, others)


def infer_precision(got: np.ndarray | Sequence[np.ndarray], dtype: str) -> tuple[Precision, PrecisionReason]:
    """The precision the student computed in: the returned dtype, or a coarser one its values betray.

    A float64 (or float32) array whose values all fit a coarser format was computed in it (`.double()` of
    a float16 tensor): the coarsest format holding every value is the evidence, since values computed in
    float64 fit float32 with probability 2^-29 each. Judge it over all trials of a return (one submission
    computes them all alike): a single trial's few values may be simple by chance. Values so simple that
    any format holds them (0, 0.5, -2) are no evidence and keep the returned dtype.
    """
    returned = Precision.of_dtype(dtype) or Precision.FLOAT64
    plain = returned, PrecisionReason(PrecisionBasis.DTYPE, f"returned as {dtype}")
    arrays = [got] if isinstance(got, np.ndarray) else list(got)
    if dtype not in ("float64", "float32") or not arrays:
        return plain
    values = np.concatenate([np.ravel(a).astype(np.float64, copy=False) for a in arrays])
    values = values[np.isfinite(values)]
    bits = _significant_bits(values)
    if bits <= 4:  # at most 4 significant bits everywhere: no evidence
        return plain
    with np.errstate(over="ignore", invalid="ignore"):
        as32 = values.astype(np.float32)
        fits32 = bool(np.all(as32.astype(np.float64) == values))
        fits_bf16 = fits32 and bool(np.all((as32.view(np.uint32) & 0xFFFF) == 0))
        fits16 = bool(np.all(values.astype(np.float16).astype(np.float64) == values))
    # bfloat16 first: its values (8 significant bits) mostly fit float16 too, not the other way round.
    candidates = ((fits_bf16, Precision.BFLOAT16), (fits16, Precision.FLOAT16), (fits32, Precision.FLOAT32))
    for fits, precision in candidates:
        # Values computed in a format use its bits: each of float32's needs more than 12 of its 24 with
        # probability 1 - 2^-12. Fewer everywhere is what cancellation leaves of float64 values
        # (1 - (1 - e^x) at x in [-60, -30] keeps at most 10 bits), not evidence of the narrower format.
        if fits and precision.eps > returned.eps and bits > precision.bits // 2:
            said = f"{dtype} array holding {precision.value} values"
            return precision, PrecisionReason(PrecisionBasis.VALUES, said)
    return plain


def _significant_bits(values: np.ndarray) -> int:
    """The most significant bits any of `values` (float64) needs: 53 less its mantissa's trailing zeros."""
    mantissa = (np.abs(np.frexp(values)[0]) * 2.0**53).astype(np.int64)
    mantissa = mantissa[mantissa != 0]
    if mantissa.size == 0:
        return 0
    lowest = mantissa & -mantissa  # the lowest set bit of each
    return int(53 - np.log2(lowest.astype(np.float64)).min())


def ulp(values: np.ndarray, precision: Precision) -> np.ndarray:
    magnitude = np.maximum(np.abs(values), precision.tiny)
    spacing: np.ndarray = np.exp2(np.floor(np.log2(magnitude))) * precision.eps
    return spacing


def _allowed(
    abs_expected: np.ndarray, scale: np.ndarray, spread: np.ndarray | None, precision: Precision
) -> np.ndarray:
    """Each entry's rounding envelope (see the module's docstring); `scale`: its trial's max|expected|."""
    if spread is None:
        magnitude = FALLBACK_MAGNITUDE_FACTOR * (abs_expected + scale)
    else:
        magnitude = MAGNITUDE_FACTOR * (abs_expected + scale) + SPREAD_FACTOR * spread
        # A spread that is NaN or infinite is no measurement: a perturbed copy of the reference left float64's
        # range where the exact one did not (softplus(2r) at r = -1000 saturates exactly, its noisy copies
        # overflow to inf - inf), so the entry's envelope is what it is without a spread, never NaN: an
        # envelope of NaN failed every entry, exact ones included.
        undefined = ~np.isfinite(magnitude)
        if undefined.any():
            magnitude = np.where(undefined, FALLBACK_MAGNITUDE_FACTOR * (abs_expected + scale), magnitude)
    allowed: np.ndarray = precision.eps * magnitude + MAGNITUDE_FACTOR * precision.tiny
    return allowed


def entry_errors(
    expected: np.ndarray, got: np.ndarray, spread: np.ndarray | None, precision: Precision
) -> tuple[np.ndarray, np.ndarray]:
    """One trial's (|error|, rounding envelope) per entry, as `compare` judges them: NaN counts as an
    infinite error, an infinity where the true value is beyond the format's range as none."""
    abs_expected = np.abs(expected)
    abs_error = _abs_errors(expected, abs_expected, got.astype(np.float64).reshape(expected.shape), precision)
    scale = np.full(expected.shape, abs_expected.max() if expected.size else 0.0)
    return abs_error, _allowed(abs_expected, scale, spread, precision)


def _abs_errors(
    expected: np.ndarray, abs_expected: np.ndarray, got64: np.ndarray, precision: Precision
) -> np.ndarray:
    # An infinity where the true value exceeds the format's range is the best that format can do.
    beyond_range = abs_expected > precision.largest
    both_inf = np.isinf(got64) & (np.sign(got64) == np.sign(expected)) & (np.isinf(expected) | beyond_range)
    with np.errstate(invalid="ignore"):
        abs_error: np.ndarray = np.where(both_inf, 0.0, np.abs(got64 - expected))
    abs_error[np.isnan(abs_error)] = np.inf
    return abs_error


def compare(
    trial: int,
    spec: ReturnSpec,
    expected: np.ndarray,
    got: np.ndarray,
    dtype: str,
    spread: np.ndarray | None = None,
) -> Comparison:
    """Judge one trial's returned array."""
    return compare_many(spec, [trial], [expected], [got], [dtype], None if spread is None else [spread])[0]


@dataclass(frozen=True)
class Flattened:
    """Many trials' expected values of one return, end to end, and what their envelopes need of them."""

    shapes: list[tuple[int, ...]]  # per trial
    sizes: np.ndarray  # entries per trial
    starts: np.ndarray  # where each trial's entries begin
    nonempty: np.ndarray  # the trials with entries: reduceat takes one segment per start, none can be empty
    expected: np.ndarray
    abs_expected: np.ndarray
    scale: np.ndarray  # per entry: the max|expected| of its trial
    spread: np.ndarray | None
    # The shapes as rows (trials, ndim) where every trial's has one number of dimensions, else None: what
    # a pass's columns of returned shapes are checked against at once.
    shape_rows: np.ndarray | None = None


def flatten(expected: Sequence[np.ndarray], spreads: Sequence[np.ndarray] | None) -> Flattened:
    """What `compare_many` needs of the expected values; prepared once where many submissions are judged
    on the same trials."""
    sizes = np.fromiter((e.size for e in expected), dtype=np.intp, count=len(expected))
    starts = np.cumsum(sizes) - sizes
    nonempty = sizes > 0
    flat = np.concatenate([e.ravel() for e in expected] or [np.zeros(0)])
    abs_expected = np.abs(flat)
    scale = _per_trial(np.maximum, abs_expected, starts, nonempty, 0.0)
    spread = None if spreads is None else np.concatenate([s.ravel() for s in spreads] or [np.zeros(0)])
    shapes = [e.shape for e in expected]
    rows = np.array(shapes, dtype=np.int64) if shapes and len({len(s) for s in shapes}) == 1 else None
    return Flattened(
        shapes, sizes, starts, nonempty, flat, abs_expected, np.repeat(scale, sizes), spread, rows
    )


def _per_trial(
    ufunc: np.ufunc, entries: np.ndarray, starts: np.ndarray, nonempty: np.ndarray, empty: object
) -> np.ndarray:
    """`ufunc` reduced over each trial's entries; `empty` for a trial without any."""
    reduced = np.full(len(starts), empty, dtype=np.result_type(entries.dtype, type(empty)))
    if nonempty.any():
        reduced[nonempty] = ufunc.reduceat(entries, starts[nonempty])
    return reduced


def compare_many(
    spec: ReturnSpec,
    trials: Sequence[int],
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    spreads: Sequence[np.ndarray] | None = None,
    at: Precision | None = None,
    flattened: Flattened | None = None,
    inputs_of: InputShapes | None = None,
) -> list[Comparison]:
    """Judge many trials of one return; all trials of one dtype are judged in one pass over their entries.

    `spreads` are the entries' rounding sensitivities from the reference's Monte Carlo run; without
    them the envelope falls back to its magnitude terms alone. `at` imposes the precision whose
    envelope applies (a rerun is judged by the precision of the run it checks), instead of inferring it.
    `flattened`: `flatten(expected, spreads)`, from a caller that judges many submissions on them.
    `inputs_of`: a trial's inputs' shapes by its number, for the likely cause of a shape refused.
    """
    groups, others = _compare_groups(spec, trials, expected, got, dtypes, spreads, at, flattened, inputs_of)
    results = dict(others)
    for members, passing in groups:
        results.update((k, passing.comparison(j)) for j, k in enumerate(members))
    return [results[k] for k in range(len(expected))]


def compare_columns(
    spec: ReturnSpec,
    trials: Sequence[int],
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    spreads: Sequence[np.ndarray],
    flattened: Flattened | None = None,
    inputs_of: InputShapes | None = None,
    joined: tuple[np.ndarray, np.ndarray] | None = None,
) -> Compared:
    """`compare_many`'s judgement, by trial, with the passing trials kept as columns.

    `joined`: every array of `got` end to end and their shapes as rows (report.Returns.joined); where
    they are the shapes due and of one dtype, compared as they are, without a look at `got`."""
    flat_got = None
    if (
        joined is not None
        and flattened is not None
        and flattened.shape_rows is not None
        and len(set(dtypes)) == 1
        and np.array_equal(joined[1], flattened.shape_rows)
    ):
        flat_got = joined[0]
    groups, others = _compare_groups(
        spec, trials, expected, got, dtypes, spreads, None, flattened, inputs_of, flat_got
    )
    return Compared([passing for _, passing in groups], {trials[k]: c for k, c in others.items()})


# Hostile returns (1e308 against -1e308, inf, NaN) overflow the error arithmetic on purpose: an infinite
# error is the verdict's evidence, not a warning to print with the grader's path.
@np.errstate(all="ignore")
def _compare_groups(
    spec: ReturnSpec,
    trials: Sequence[int],
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    spreads: Sequence[np.ndarray] | None,
    at: Precision | None,
    flattened: Flattened | None,
    inputs_of: InputShapes | None = None,
    flat_got: np.ndarray | None = None,
) -> tuple[list[tuple[list[int], Passing]], dict[int, Comparison]]:
    """Per dtype, the positions of its trials that passed and them as columns; the other trials' judgement
    by position. `flat_got`: `got` end to end, known to be of one dtype and in the shapes due."""
    others: dict[int, Comparison] = {}
    misfits: dict[int, str]
    if flat_got is not None:
        by_dtype, misfits = {dtypes[0]: list(range(len(dtypes)))}, {}
    elif flattened is not None and len(set(dtypes)) == 1 and [g.shape for g in got] == flattened.shapes:
        # The common case, every trial in the shape due and of one dtype: no trial to sort out.
        by_dtype, misfits = {dtypes[0]: list(range(len(got)))}, {}
    else:
        by_dtype, misfits = _by_dtype(spec, expected, got, dtypes, trials, inputs_of)
    for k, problem in misfits.items():
        others[k] = Comparison(trials[k], Verdict.ERROR, problem=problem, entries=int(expected[k].size))
    groups = []
    for dtype, members in by_dtype.items():
        # Every trial's entries end to end: one numpy operation per step for all of them.
        got64 = flat_got.astype(np.float64, copy=False) if flat_got is not None else _end_to_end(got, members)
        precision, reason = (
            (at, PrecisionReason(PrecisionBasis.GIVEN, f"judged at {at.value}"))
            if at is not None
            else infer_precision(got64, dtype)
        )
        flat = flattened if flattened is not None and len(members) == len(expected) else None
        if flat is None:  # these trials only, or nothing prepared
            flat = flatten(
                [expected[k] for k in members], None if spreads is None else [spreads[k] for k in members]
            )
        passed, passing, failing = _compare_flat(
            spec,
            [trials[k] for k in members],
            [expected[k] for k in members],
            flat,
            got64,
            precision,
            reason,
            dtype,
        )
        groups.append(([members[b] for b in passed], passing))
        others.update((members[b], comparison) for b, comparison in failing.items())
    return groups, others


def within_rounding(
    spec: ReturnSpec,
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    spreads: Sequence[np.ndarray],
) -> bool:
    """Whether every trial would be judged pass or precision against `expected`: compare_many's verdicts
    alone, without describing the trials that fail (what naming a mistake asks of each candidate)."""
    with np.errstate(all="ignore"):  # as in _compare_groups: overflow is evidence here
        return _within_rounding(spec, expected, got, dtypes, spreads)


def _within_rounding(
    spec: ReturnSpec,
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    spreads: Sequence[np.ndarray],
) -> bool:
    by_dtype, misfits = _by_dtype(spec, expected, got, dtypes)
    if misfits:
        return False
    for dtype, members in by_dtype.items():
        got64 = _end_to_end(got, members)
        precision, _ = infer_precision(got64, dtype)
        flat = flatten([expected[k] for k in members], [spreads[k] for k in members])
        _, _, within_envelope, failing_mask = _entry_checks(spec, flat, got64, precision)
        passed = _per_trial(np.add, failing_mask.astype(np.intp), flat.starts, flat.nonempty, 0) == 0
        within = _per_trial(np.logical_and, within_envelope, flat.starts, flat.nonempty, True)
        if not (passed | within).all():
            return False
    return True


def _by_dtype(
    spec: ReturnSpec,
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    dtypes: Sequence[str],
    trials: Sequence[int] | None = None,
    inputs_of: InputShapes | None = None,
) -> tuple[dict[str, list[int]], dict[int, str]]:
    """The positions of the trials to compare, by returned dtype; and those whose shape the shape rule
    (shapes.py) refuses, with the likely cause."""
    by_dtype: dict[str, list[int]] = defaultdict(list)
    misfits: dict[int, str] = {}
    wrt = spec.grad.wrt if spec.grad is not None else spec.vjp.wrt if spec.vjp is not None else None
    for k, (e, g, d) in enumerate(zip(expected, got, dtypes, strict=True)):
        problem = None
        if e.shape != g.shape and not shapes.fits(e.shape, g.shape):
            inputs = inputs_of(trials[k]) if inputs_of is not None and trials is not None else None
            problem = shapes.problem(e.shape, g.shape, inputs, wrt)
        if problem is not None:
            misfits[k] = problem
        else:
            by_dtype[d].append(k)
    return by_dtype, misfits


def _end_to_end(got: Sequence[np.ndarray], members: Sequence[int]) -> np.ndarray:
    chosen = got if len(members) == len(got) else [got[k] for k in members]  # members ascend
    return np.concatenate(chosen, axis=None).astype(np.float64, copy=False)  # axis None: each flattened


def _entry_checks(
    spec: ReturnSpec, flat: Flattened, got64: np.ndarray, precision: Precision
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per entry: |error|, its ratio to the rounding envelope, within the envelope, failing the tolerance."""
    abs_error = _abs_errors(flat.expected, flat.abs_expected, got64, precision)
    ratio = abs_error / _allowed(flat.abs_expected, flat.scale, flat.spread, precision)
    ratio[abs_error == 0] = 0.0  # the exact value is never evidence of a mistake, whatever its envelope
    within_envelope = ratio <= 1.0
    if spec.explicit_tolerance:
        # An infinite error (1e308 against -1e308 overflows) is never within a tolerance that overflowed too.
        bound = (spec.atol or 0.0) + (spec.rtol or 0.0) * flat.abs_expected
        within_tolerance = np.isfinite(abs_error) & (abs_error <= bound)
    else:
        within_tolerance = within_envelope
    return abs_error, ratio, within_envelope, ~within_tolerance


def _compare_flat(
    spec: ReturnSpec,
    trials: Sequence[int],
    expected: Sequence[np.ndarray],
    flat: Flattened,
    got64: np.ndarray,
    precision: Precision,
    reason: PrecisionReason,
    dtype: str,
) -> tuple[list[int], Passing, dict[int, Comparison]]:
    """Trials judged at one precision; `got64` holds their returned entries end to end, in trial order.
    The positions of those that passed and them as columns; the others' Comparisons by position."""
    abs_error, ratio, within_envelope, failing_mask = _entry_checks(spec, flat, got64, precision)
    max_ratio = _per_trial(np.maximum, ratio, flat.starts, flat.nonempty, 0.0)
    failing_counts = _per_trial(np.add, failing_mask.astype(np.intp), flat.starts, flat.nonempty, 0)
    passes = failing_counts == 0
    if passes.all():  # the common case: columns as they are
        passed = list(range(len(trials)))
        passing = Passing(list(trials), max_ratio.tolist(), flat.sizes.tolist(), precision, reason)
        return passed, passing, {}
    passed = np.flatnonzero(passes).tolist()
    passing = Passing(
        [trials[b] for b in passed],
        max_ratio[passes].tolist(),
        flat.sizes[passes].tolist(),
        precision,
        reason,
    )
    envelope_ok = _per_trial(np.logical_and, within_envelope, flat.starts, flat.nonempty, True)
    failing = {}
    for b in np.flatnonzero(~passes).tolist():
        entries, shape = slice(flat.starts[b], flat.starts[b] + flat.sizes[b]), expected[b].shape
        failing[b] = _failing(
            trials[b],
            expected[b],
            got64[entries].reshape(shape),
            abs_error[entries].reshape(shape),
            ratio[entries].reshape(shape),
            failing_mask[entries].reshape(shape),
            bool(envelope_ok[b]),
            precision,
            reason,
            dtype,
        )
    return passed, passing, failing


def _failing(
    trial: int,
    expected: np.ndarray,
    got64: np.ndarray,
    abs_error: np.ndarray,
    ratio: np.ndarray,
    failing_mask: np.ndarray,
    within_envelope: bool,
    precision: Precision,
    reason: PrecisionReason,
    dtype: str,
) -> Comparison:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel_error = np.where(abs_error == 0, 0.0, abs_error / np.abs(expected))
        units_off = abs_error / ulp(expected, precision)  # overflows to inf where 0 is due: as it should
    # The error is told where it fails: an entry within its rounding is no part of the mistake.
    finite = failing_mask & np.isfinite(got64) & np.isfinite(abs_error)
    flat = np.flatnonzero(failing_mask)
    worst = flat[np.argsort(-ratio.reshape(-1)[flat], kind="stable")][:MAX_LISTED_ENTRIES]
    # Each column taken for the listed entries at once, as Python numbers: a trial of a logic verdict
    # lists up to ten, and reading them one numpy scalar at a time cost more than its whole comparison.
    listed = (expected, got64, abs_error, rel_error, units_off, ratio)
    columns = [np.asarray(a, dtype=np.float64).reshape(-1)[worst].tolist() for a in listed]
    if expected.ndim:
        where = np.stack(np.unravel_index(worst, expected.shape), axis=-1).tolist()
    else:
        where = [[] for _ in worst]
    failing = tuple(
        EntryError(tuple(at), e, g, a, r, u, q) for at, e, g, a, r, u, q in zip(where, *columns, strict=True)
    )
    return Comparison(
        trial=trial,
        verdict=Verdict.PRECISION if within_envelope else Verdict.LOGIC,
        precision=precision,
        precision_reason=reason,
        dtype=dtype,
        max_ratio=float(ratio.max()),
        max_rel_error=float(rel_error.max()),
        max_abs_error=float(abs_error[finite].max()) if finite.any() else 0.0,
        largest_expected=float(np.abs(expected).max()) if expected.size else 0.0,
        nan_entries=int(np.isnan(got64).sum()),
        inf_entries=int(np.isinf(got64).sum()),
        failing=failing,
        failing_count=len(flat),
        entries=int(expected.size),
        failing_mask=failing_mask,
    )
