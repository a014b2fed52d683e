"""Beyond rounding: which trials to run again above their precision, and what their reruns say.

A trial whose values lie beyond the rounding envelope is either a mistake (wrong at any precision) or an
unstable formula: rounding (or the format's range) that the formula amplifies, whose error shrinks as the
arithmetic gets more precise. The first pass is compared here, the trials to rerun are chosen from it
(`plan_reruns`, a pure function of the first pass), and once the worker has rerun them each trial beyond
rounding is decided from its own runs alone (`resolve_beyond_rounding`): never from which other trials
were rerun, so a verdict cannot change with the number of trials.

Every trial beyond rounding is rerun at float64 (float32 code lifted: torch's dtypes by a function mode,
numpy's `astype` by the inputs' class). Code that computed in float64 already is also rerun with numpy's
inputs in extended precision (`np.longdouble`: 80-bit on x86-64, 11 more bits and a range to 1e4932).
Torch has nothing above float64; where the extended rerun cannot run (torch tensors made from the inputs,
numpy.linalg) a float64 trial is judged by its run on inputs moved by the exercise's shift invariance
where the graph has one and the inputs are large (invariance.py: right there is instability, wrong there a
mistake, NaN or not; where the invariance needs a scalar input such as reg at 0, by three runs with it at
0 and not, `_judged_zeroed`), else on its first run: NaN or infinities where finite values were due are the
format's range (instability), any other error beyond float64 rounding is a mistake.

A rerun tells precision from a mistake only of code that answers the same call the same way. A few trials
beyond rounding also run once more exactly as they first ran (`again`); where a return's answer changed
there (a call counter, a cache keyed by input, unseeded random numbers: wrong on its first calls and
right later, say), none of its reruns is evidence of an unstable formula, and every trial of it beyond
rounding is judged by its values: a mistake, told as different answers for the same inputs. This one
finding is the hand-in's, not a trial's: a stateful hand-in must not earn instability's credit on the
trials that were not run again.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.judging import consistency, invariance
from grader.judging.compare import (
    Compared,
    Comparison,
    Flattened,
    InputShapes,
    Precision,
    PrecisionBasis,
    PrecisionReason,
    RerunOutcome,
    compare_columns,
    compare_many,
    entry_errors,
    flatten,
    infer_precision,
)
from grader.memo import PerObject
from grader.outcomes import FailureKind, Verdict
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.protocol import EXTENDED
from grader.sandbox.report import Pass, RerunRequest, Returned, WorkerReport

if TYPE_CHECKING:
    from grader.exercise.reference import References
    from grader.exercise.trials import Trial

# numpy's extended precision where it is wider than float64 (not on Windows or macOS, where it is float64).
EXTENDED_EPS = float(np.finfo(np.longdouble).eps)
HAS_EXTENDED = Precision.FLOAT64.eps > EXTENDED_EPS
# Amplified rounding scales with the unit roundoff: rerun with u' instead of u, its error becomes about
# u'/u of what it was (2^-11 from float64 to x86's extended, 2^-29 from float32 to float64), a mistake's
# stays (within a factor 2 where rounding of a similar size adds to it). Rounding shrinks less where the
# rerun loses terms too: measured 7.3-fold on softplus_tails trial 677 (log(1 + exp(x)) summed over 32
# entries, those below -44.4 lost in extended precision as well), 50-fold on trial 133; 2048-fold
# where nothing is lost. An error that shrinks by this factor or more is rounding.
SHRINK_FACTOR = 4.0
# A run on shifted inputs is judged against the trial's own envelope, drawn where the inputs were large:
# it rounds less there, not more, but its own rounding (of the moved inputs) may differ a little. Every
# mistake `grader validate` accepts lands hundreds of envelopes away.
SHIFTED_SLACK = 4.0


@dataclass(frozen=True)
class _Above:
    """A rerun's precision: its unit roundoff, and how notes say where the trial ran again."""

    eps: float
    where: str


# A trial's returned array and its dtype, read for a thousand trials at a time without a Python loop.
_DTYPE = operator.attrgetter("dtype")
_AT_FLOAT64 = _Above(Precision.FLOAT64.eps, "at float64")
_IN_EXTENDED = _Above(EXTENDED_EPS, "in extended precision")
# The expected values and spreads of a return on the trials compared, as lists and end to end: a class
# shares them (each submission built the lists anew: 2,000 look-ups per return of a graph2 hand-in).
_Expected = tuple[list[np.ndarray], list[np.ndarray], Flattened]
_expected: PerObject[_Expected] = PerObject(kept=32)


def _expected_of(references: References, name: str, compared: list[int]) -> _Expected:
    def make() -> _Expected:
        expected = [references.expected[i][name] for i in compared]
        spreads = [references.spread[i][name] for i in compared]
        return expected, spreads, flatten(expected, spreads)

    return _expected.get(references, (name, tuple(compared)), make)


@dataclass(frozen=True)
class RerunPlan:
    """The first pass judged, and what to ask the worker next."""

    comparisons: Mapping[str, Compared]  # per return, per trial returned: nothing twice
    probes: tuple[consistency.ConsistencyProbe, ...]  # where a value and its gradient are both wrong
    request: RerunRequest


# Where a trial is beyond rounding, this many of them and as many that were right run once more as they
# first ran, to see the same answers (the smallest indices: code wrong on its first calls only, or right
# on them only, shows there). Few: each is one more call of a failing hand-in, and none of a passing one.
AGAIN = 3


def _again(references: References, first: Pass, beyond: set[int]) -> tuple[int, ...]:
    """The trials to run once more as they first ran: the first few beyond rounding, the first few not."""
    if not beyond:
        return ()
    right = [t.index for t in references.trials if t.index not in beyond and t.index in first.outputs]
    return tuple(sorted({*sorted(beyond)[:AGAIN], *right[:AGAIN]}))


def plan_reruns(exercise: Exercise, references: References, first: Pass) -> RerunPlan:
    """Compare the first pass, and pick the trials to rerun: every trial beyond rounding, at float64, and
    those of them computed in float64 again in extended precision. (The trials of the autograd check are
    not in `first`: grading.py splits them off, judging/provenance.py.)

    Code that already returns float64 is rerun at float64 too: what it returned may have been computed in
    float32 and overflowed (an infinity says nothing about its precision), and the rerun costs little.
    Where a value and its gradient are both wrong, two probes ask whether the gradient is at least that of
    the student's own value. A first pass that stopped early asks for nothing more.
    """
    comparisons = {spec.name: compare_first_pass(spec, references, first) for spec in exercise.spec.returns}
    if first.stopped is not None:
        return RerunPlan(comparisons, (), RerunRequest())
    beyond: set[int] = set()
    in_float64: set[int] = set()
    for judged in comparisons.values():
        for c in judged.others.values():  # the passing trials ask for nothing
            if c.verdict is Verdict.LOGIC:
                beyond.add(c.trial)
                if c.dtype == "float64":  # computed in float64, or in a narrower format and widened
                    in_float64.add(c.trial)
    by_index = {t.index: t for t in references.trials}
    probes = []
    for number, pair in enumerate(consistency.pairs(exercise)):
        values, gradients = (comparisons[r.name] for r in (pair.value, pair.gradient))
        both = [
            t
            for t, c in gradients.others.items()
            if c.verdict is Verdict.LOGIC and t in values.others and values.others[t].verdict is Verdict.LOGIC
        ]
        if both:
            probes.append(consistency.make_probe(pair, by_index[min(both)], number))
    moved = [trial for p in probes for trial in (p.plus, p.minus)]
    request = RerunRequest(
        tuple(sorted(beyond)),
        (*moved, *_shifted(exercise, references, in_float64)),
        tuple(sorted(in_float64)) if HAS_EXTENDED else (),
        _again(references, first, beyond),
    )
    return RerunPlan(comparisons, tuple(probes), request)


def _shifted(exercise: Exercise, references: References, in_float64: set[int]) -> list[Trial]:
    """The float64 trials beyond rounding once more, moved by the exercise's shift invariance where it has
    one and their inputs are large (invariance.py): torch's float64 code has no rerun above float64, and
    where the maths is the same on the moved inputs an unstable formula is right there."""
    if not in_float64:
        return []
    shift = invariance.shift_of(exercise, references)
    if shift is None:
        return []
    by_index = {t.index: t for t in references.trials}
    large = [by_index[i] for i in sorted(in_float64) if shift.large(by_index[i])]
    zeroed = [probe for t in large for probe in shift.zeroed_trials(t) or ()]
    return [*(shift.moved(t) for t in large), *zeroed]


def _input_shapes(references: References) -> InputShapes:
    """A trial's inputs' shapes by its number, looked up only where a shape is refused."""
    by_index: dict[int, Trial] = {}

    def shapes_of(trial: int) -> dict[str, tuple[int, ...]]:
        if not by_index:
            by_index.update((t.index, t) for t in references.trials)
        found = by_index.get(trial)
        return {} if found is None else {name: np.shape(value) for name, value in found.inputs.items()}

    return shapes_of


def compare_first_pass(spec: ReturnSpec, references: References, first: Pass) -> Compared:
    """Every trial that returned `spec`'s array, judged against the reference."""
    arrays = first.returned(spec.name)
    compared = arrays.trials
    expected, spreads, flat = _expected_of(references, spec.name, compared)
    dtypes = list(map(_DTYPE, arrays.descriptions))
    judged = compare_columns(
        spec,
        compared,
        expected,
        arrays.arrays,
        dtypes,
        spreads,
        flattened=flat,
        inputs_of=_input_shapes(references),
    )
    # float64 values beyond float64 rounding but within float32's: float32 work widened before returning
    # (numpy makes float32 times int64 float64, and a rerun cannot lift astype(np.float32)). That is
    # correct code, as the same work returned in float32 would be; `grader validate` makes sure every
    # standard mistake lands beyond float32 rounding, so none hides here.
    others = dict(judged.others)
    widened = [
        i for i, c in others.items() if c.verdict is Verdict.LOGIC and c.precision is Precision.FLOAT64
    ]
    if not widened:
        return judged
    at_float32 = compare_many(
        spec,
        widened,
        [references.expected[i][spec.name] for i in widened],
        [arrays[i].array for i in widened],
        ["float64"] * len(widened),
        [references.spread[i][spec.name] for i in widened],
        at=Precision.FLOAT32,
    )
    for comparison in at_float32:
        if comparison.verdict in (Verdict.PASS, Verdict.PRECISION):
            note = "float64 values within float32 rounding: computed partly in float32"
            others[comparison.trial] = replace(comparison, note=note)
    return judged.with_others(others)


@dataclass(frozen=True)
class Answered:
    """A rerun that returned the array: its values, and their dtype as the worker described it."""

    array: np.ndarray
    dtype: str


@dataclass(frozen=True)
class Refused:
    """A rerun the code answered otherwise than its first run, which returned values: it raised, returned
    the wrong number of values, None or another shape. The worker tried it with exact ndarrays too
    (worker/trial.py), so what is left is a check of the dtype (`assert x.dtype == np.float64`), torch's
    refusal of extended precision, or the like: the input was refused, the formula not judged."""

    what: str  # what the code did, in the student's words (the exception and the line that raised it)


@dataclass(frozen=True)
class RerunFailed:
    """A rerun that came to no answer for another reason than its input: it timed out, ran out of memory."""

    message: str


@dataclass(frozen=True)
class TorchRefused:
    """An extended rerun of torch code, refused by torch: torch stops at float64 (its tensor() of an
    extended array raises), which no change to the code lifts."""

    what: str


Rerun = Answered | Refused | RerunFailed
_REFUSALS = (FailureKind.EXCEPTION, FailureKind.BAD_RETURN)
_TORCH = "torch.Tensor"  # in the source of a return made by torch (worker/returns.py)


def _rerun_of(run: Pass, index: int, name: str) -> Rerun | None:
    if index in run.outputs:
        item = run.outputs[index].by_name[name]
        return Refused(item.problem) if isinstance(item, ReturnProblem) else Answered(item.array, item.dtype)
    if index in run.failures:
        failure = run.failures[index]
        return Refused(failure.message) if failure.kind in _REFUSALS else RerunFailed(failure.message)
    return None


def resolve_beyond_rounding(
    exercise: Exercise,
    spec: ReturnSpec,
    references: References,
    report: WorkerReport,
    compared: Compared,
    got: Mapping[int, np.ndarray],
) -> dict[int, Comparison]:
    """Trials beyond rounding, each decided by its own reruns between instability and logic; all of them
    logic where the return's answer changed between identical calls (`changed_answer`)."""
    resolved: dict[int, Comparison] = {}
    shift: invariance.Shift | None = None
    changed = changed_answer(spec.name, references, got, report.again)
    due: dict[int, invariance.ZeroedDue] = {}
    for comparison in compared.others.values():
        if comparison.verdict is not Verdict.LOGIC:
            continue
        index = comparison.trial
        if changed is not None:
            resolved[index] = _decided(comparison, RerunOutcome.CHANGED, changed.words(spec.name))
            continue
        shifted = _rerun_of(report.reruns, invariance.shifted_index(index), spec.name)
        if shifted is not None and shift is None:  # derived already when the rerun was planned
            shift = invariance.shift_of(exercise, references)
            if shift is not None and shift.zeroed is not None:
                due = _zeroed_due_of(exercise, references, report, compared, shift)
        zeroed = None
        if shift is not None and shifted is not None and shift.zeroed is not None:
            zeroed = _zeroed_runs(report, index, spec.name, due.get(index))
        resolved[index] = resolve_with_rerun(
            comparison,
            spec,
            references.expected[index][spec.name],
            references.spread[index][spec.name],
            got[index],
            _rerun_of(report.reruns, index, spec.name),
            _extended_of(report, index, spec.name),
            None if shift is None or shifted is None else (shift, shifted),
            zeroed,
        )
    return resolved


@dataclass(frozen=True)
class ZeroedRuns:
    """Probes A (the zeroed input at 0) and B (at 0, rows moved) of a trial, and the values due at A (and
    B) and at C (the shifted run), where the invariance needs a zeroed input (invariance.py)."""

    at_zero: Rerun | None
    at_zero_moved: Rerun | None
    due: invariance.ZeroedDue | None  # None: the reference could not be evaluated there


def _zeroed_due_of(
    exercise: Exercise,
    references: References,
    report: WorkerReport,
    compared: Compared,
    shift: invariance.Shift,
) -> dict[int, invariance.ZeroedDue]:
    # Every trial of this return that was shifted, at once: one reference evaluation, not one per trial.
    indices = [
        c.trial
        for c in compared.others.values()
        if c.verdict is Verdict.LOGIC and invariance.shifted_index(c.trial) in report.reruns.outputs
    ]
    return invariance.zeroed_due(exercise, references, shift, indices)


def _zeroed_runs(report: WorkerReport, index: int, name: str, due: invariance.ZeroedDue | None) -> ZeroedRuns:
    a, b = invariance.zeroed_indices(index)
    return ZeroedRuns(_rerun_of(report.reruns, a, name), _rerun_of(report.reruns, b, name), due)


def _extended_of(report: WorkerReport, index: int, name: str) -> Rerun | TorchRefused | None:
    """A trial's extended rerun, where torch code's refusal of it is torch's: torch stops at float64 (its
    tensor() of an extended array raises), which no change to the code lifts. Torch code is told by what
    its first run returned, torch tensors."""
    extended = _rerun_of(report.extended, index, name)
    output = report.first.outputs.get(index)
    if (
        isinstance(extended, Refused)
        and output is not None
        and any(
            isinstance(item, Returned) and _TORCH in item.description.source
            for item in output.by_name.values()
        )
    ):
        return TorchRefused(extended.what)
    return extended


_NO_RERUN = "so no rerun can tell rounding from a mistake: judged by its values"


@dataclass(frozen=True)
class ChangedAnswer:
    """A trial whose return came back otherwise from the same call, run again as it first ran."""

    trial: int
    first_error: float  # the largest |error| of each answer, as a share of the reference's largest entry
    again_error: float

    def words(self, name: str, consequence: str = _NO_RERUN) -> str:
        return (
            f"it returned different answers for the same inputs: on trial {self.trial} its {name} was "
            f"{_off_by(self.first_error)} on the first call and {_off_by(self.again_error)} when called "
            f"again with the same inputs, {consequence}. "
            "Your function keeps state between calls (a call counter, a global list, a cache) or draws "
            f"random numbers it does not seed: compute {name} from the arguments alone"
        )


def _off_by(error: float) -> str:
    """An answer's error, as a share of the reference's largest entry, in words."""
    if error == 0:
        return "exact"
    if not np.isfinite(error):
        return "not finite"
    return f"off by {error:.2g} of its largest entry" if error < 0.01 else f"off by {error:.0%}"


def answer_error(array: np.ndarray, expected: np.ndarray, scale_of: np.ndarray | None = None) -> float:
    """The largest |array - expected| as a share of the largest finite entry of `scale_of` (by default
    `expected`); inf: NaN, another size, or nothing to measure against."""
    expected = np.asarray(expected, dtype=np.float64)
    if array.size != expected.size:
        return float("inf")
    change = np.abs(array.astype(np.float64).reshape(expected.shape) - expected)
    largest = float(np.nan_to_num(change, nan=np.inf).max(initial=0.0))
    measure = expected if scale_of is None else np.asarray(scale_of, dtype=np.float64)
    scale = float(np.abs(measure[np.isfinite(measure)]).max(initial=0.0))
    if largest == 0:
        return 0.0
    return largest / scale if scale > 0 else float("inf")


def changed_answer(
    name: str, references: References, got: Mapping[int, np.ndarray], again: Pass
) -> ChangedAnswer | None:
    """The first trial, run again as it first ran, on which `name` came back materially otherwise than the
    first time (the two answers apart by more than _MATERIAL of the reference's largest entry: the same
    call is bit for bit the same computation, and rounding differs by far less anyway), or None."""
    for index in sorted(again.outputs.keys() & got.keys()):
        item = again.outputs[index].by_name.get(name)
        if not isinstance(item, Returned) or index not in references.expected:
            continue
        first_array = np.asarray(got[index])
        if _same_values(item.array, first_array):
            continue
        expected = references.expected[index][name]
        if answer_error(item.array, first_array, scale_of=expected) > _MATERIAL:
            return ChangedAnswer(
                index, answer_error(first_array, expected), answer_error(item.array, expected)
            )
    return None


# Below this share of the reference's largest entry a change is rounding's at any precision a hand-in
# computes in (float16's unit roundoff is 4.9e-4): never called a changed answer.
_MATERIAL = 1e-3


def resolve_with_rerun(
    original: Comparison,
    spec: ReturnSpec,
    expected: np.ndarray,
    spread: np.ndarray,
    got: np.ndarray,
    rerun: Rerun | None,
    extended: Rerun | TorchRefused | None = None,
    shifted: tuple[invariance.Shift, Rerun] | None = None,
    zeroed: ZeroedRuns | None = None,
) -> Comparison:
    """Decide a trial that failed beyond rounding from its reruns (at float64; in extended precision for
    float64 code): an error that shrinks with the precision, or an overflow, is instability. Float64 code
    that no rerun could lift above float64 (torch) is decided by its run on inputs moved by the exercise's
    shift invariance, where it has one (`shifted`, invariance.py), and where that invariance needs an
    input at 0, by its runs with that input at 0 too (`zeroed`)."""
    precision = original.precision
    rerun, extended = _same_shape(rerun, expected), _same_shape(extended, expected)
    # Computed in extended precision: returned in it, or in float64 with other values than the first run
    # had (the code stored extended results in a float64 array: np.zeros(shape) for an accumulator).
    lifted_to_extended = isinstance(extended, Answered) and (
        extended.dtype == EXTENDED or not _same_values(extended.array, got)
    )
    # float64 values that fit a narrower format: that format's work widened, or float64 values that lost
    # their low bits (1 - (1 - e) keeps a few). A rerun at float64 lifts every narrower format it can; if
    # it changed nothing and numpy's floats went to extended precision, the work was float64.
    if (
        precision is not Precision.FLOAT64
        and original.dtype == "float64"
        and lifted_to_extended
        and isinstance(rerun, Answered)
        and _same_values(rerun.array, got)
    ):
        precision = Precision.FLOAT64
        computed = PrecisionReason(PrecisionBasis.RECOMPUTED, "computed in float64")
        original = replace(original, precision=precision, precision_reason=computed)
    if precision is Precision.FLOAT64 and lifted_to_extended and isinstance(extended, Answered):
        return _judged_by_scaling(original, expected, spread, got, extended.array, _IN_EXTENDED)
    if rerun is None:
        return _without_rerun(original, expected, got, precision, "it was not rerun", RerunOutcome.NOT_RERUN)
    if isinstance(rerun, Refused):
        why = f"your code refused its rerun at float64 ({rerun.what})"
        return _without_rerun(original, expected, got, precision, why, RerunOutcome.REFUSED)
    if isinstance(rerun, RerunFailed):
        why = f"its rerun at float64 failed ({rerun.message})"
        return _without_rerun(original, expected, got, precision, why)
    array = rerun.array
    lifted, _ = infer_precision(array, rerun.dtype)
    if lifted.eps < precision.eps:
        return _judged_by_scaling(original, expected, spread, got, array, _AT_FLOAT64)
    if precision is Precision.FLOAT64:
        if not _same_values(array, got):
            # float64 values, yet computed otherwise when lifted: float32 inside, which the rerun lifted.
            return _judged_by_scaling(original, expected, spread, got, array, _AT_FLOAT64)
        if shifted is not None:
            shift, moved = shifted
            if shift.zeroed is not None:
                return _judged_zeroed(original, spec.name, got, moved, shift, zeroed)
            return _judged_shifted(original, expected, spread, got, _same_shape(moved, expected), shift)
        why = "it could not be rerun above float64"
        if isinstance(extended, Refused):  # a check of the student's: torch's own refusal is TorchRefused
            # torch.tensor() of an extended input raises (torch stops at float64), as does a check for
            # float64: no formula was judged, and the student reads which line refused.
            why += (
                f" (your code refused numpy's extended-precision arrays, np.longdouble: {extended.what}; "
                "torch cannot take them, nor code that insists on float64)"
            )
            return _without_rerun(original, expected, got, precision, why, RerunOutcome.REFUSED)
        if isinstance(extended, TorchRefused | RerunFailed):
            # torch.tensor() of an extended input raises, say: torch stops at float64. Its message (torch's
            # list of supported dtypes) tells a student nothing about their formula: that torch is why does.
            why += " (torch code cannot be)"
        elif extended is not None:
            why += (
                " (it came back in float64: float(), .item(), torch tensors or an explicit dtype drop the "
                "extra precision)"
            )
        return _without_rerun(original, expected, got, precision, why)
    note = f"the code hard-codes {lifted.value}, so it could not be rerun higher: judged at {lifted.value}"
    return _without_rerun(original, expected, got, precision, note, RerunOutcome.HARD_CODED)


def _judged_shifted(
    original: Comparison,
    expected: np.ndarray,
    spread: np.ndarray,
    got: np.ndarray,
    moved: Rerun | None,
    shift: invariance.Shift,
) -> Comparison:
    """A float64 trial decided by its run on inputs moved by `shift`, which leaves the values due as they
    were: right there on every entry (within SHIFTED_SLACK of the trial's own envelopes) is a formula
    right in exact arithmetic that float64's range failed on the large inputs; wrong there too, a
    mistake, whatever the first run's NaN or infinities said. Finite values right only when shifted are
    instability only where the return is right on some trial as well (`finite_somewhere`)."""
    if not isinstance(moved, Answered):
        note = f"it failed when {shift.words} ({_no_answer(moved)}), which shows no more"
        return _decided(original, RerunOutcome.RERUN_FAILED, note)
    precision = Precision.FLOAT64
    error, allowed = entry_errors(expected, moved.array, spread, precision)
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = float(np.max(np.where(error > 0, error / allowed, 0.0), initial=0.0))
    if np.all(error <= SHIFTED_SLACK * allowed):
        note = f"it is right when {shift.words}, which does not change the right answer"
        finite = bool(np.all(np.isfinite(got.astype(np.float64))))
        return _decided(original, RerunOutcome.RIGHT_SHIFTED if finite else RerunOutcome.RANGE_SHIFTED, note)
    note = (
        f"it is still wrong when {shift.words}, which does not change the right answer "
        f"({worst:.3g} envelopes): not float64's range"
    )
    return _decided(original, RerunOutcome.WRONG_SHIFTED, note)


def _judged_zeroed(
    original: Comparison,
    name: str,
    got: np.ndarray,
    moved: Rerun,
    shift: invariance.Shift,
    zeroed: ZeroedRuns | None,
) -> Comparison:
    """A float64 trial of an exercise shift-invariant only with `shift.zeroed` at 0 (reg beside a softmax),
    decided by three runs (invariance.py): B (at 0, moved) right against A's values due, C (moved, the
    input as given) right against its own, and A (at 0, not moved) wrong is instability; anything else
    is the first run's mistake. B and C are judged as a shifted run is (SHIFTED_SLACK envelopes), A
    beyond one envelope."""
    term = shift.zeroed
    if zeroed is None or zeroed.due is None:
        note = f"its runs with {term} at 0 could not be judged, which shows no more"
        return _decided(original, RerunOutcome.RERUN_FAILED, note)
    due = zeroed.due
    runs = (
        (f"{term} is 0 and {shift.words}", zeroed.at_zero_moved, due.at_zero[name], due.at_zero_spread[name]),
        (f"{shift.words} with {term} as given", moved, due.moved[name], due.moved_spread[name]),
        (f"{term} is 0 and nothing is moved", zeroed.at_zero, due.at_zero[name], due.at_zero_spread[name]),
    )
    ratios: list[float] = []
    for where, run, expected, spread in runs:
        run = _same_shape(run, expected)
        if not isinstance(run, Answered):
            note = f"it failed when {where} ({_no_answer(run)}), which shows no more"
            return _decided(original, RerunOutcome.RERUN_FAILED, note)
        error, allowed = entry_errors(expected, run.array, spread, Precision.FLOAT64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(float(np.max(np.where(error > 0, error / allowed, 0.0), initial=0.0)))
    both_moved, as_given, at_zero = ratios
    if both_moved > SHIFTED_SLACK:
        note = (
            f"it is still wrong when {runs[0][0]}, which leaves the right answer as it is with {term} at 0 "
            f"({both_moved:.3g} envelopes): not float64's range"
        )
        return _decided(original, RerunOutcome.WRONG_SHIFTED, note)
    if as_given > SHIFTED_SLACK:
        note = (
            f"it is still wrong when {runs[1][0]}, where nothing over- or underflows ({as_given:.3g} "
            f"envelopes), while right with {term} at 0: the {term} term is wrong, not float64's range"
        )
        return _decided(original, RerunOutcome.WRONG_SHIFTED, note)
    if at_zero <= 1.0:
        note = (
            f"it is right when {runs[2][0]}, so its failure comes with the {term} term, not from float64's "
            "range"
        )
        return _decided(original, RerunOutcome.WRONG_SHIFTED, note)
    note = (
        f"it is right when {runs[0][0]} (which leaves the right answer as it is with {term} at 0) and "
        f"when {runs[1][0]}, and fails as before when {runs[2][0]}"
    )
    finite = bool(np.all(np.isfinite(got.astype(np.float64))))
    return _decided(original, RerunOutcome.RIGHT_SHIFTED if finite else RerunOutcome.RANGE_SHIFTED, note)


def finite_somewhere(judged: Compared) -> Compared:
    """One return's trials, with overflow that no rerun confirmed kept as instability only where the code
    is right on some trial: a formula that overflows at large values is right at the others, while NaN or
    infinities on every trial are no format's range (a NaN constant is no unstable formula, and may not
    earn an exercise's instability credit).

    Likewise finite values right only on shifted inputs (invariance.py): float64 under- or overflowing
    leaves the trials whose inputs it can hold right, while a formula that differs from the exercise's on
    every large input (scores clipped at 700 before exp) is wrong on every trial, and right when shifted
    to small values as well. NaN or infinities that the shifted run made right stay instability: the
    format's range in plain sight (log(sum(exp(x))) unshifted overflows on every trial of large x)."""
    if judged.passing or any(c.verdict in (Verdict.PASS, Verdict.PRECISION) for c in judged.others.values()):
        return judged
    never = "NaN or infinite on every trial, and no rerun above the precision used made them finite"
    only_shifted = (
        "wrong on every trial, and right only with its inputs moved to small values: a formula that "
        "differs from the exercise's on large inputs (clipping them, say), not float64's range"
    )
    demoted = {
        RerunOutcome.OVERFLOWS: (RerunOutcome.NEVER_FINITE, never),
        RerunOutcome.RIGHT_SHIFTED: (RerunOutcome.ONLY_SHIFTED, only_shifted),
    }
    return judged.with_others(
        {
            trial: replace(c, verdict=Verdict.LOGIC, rerun=demoted[c.rerun][0], note=demoted[c.rerun][1])
            if c.rerun in demoted
            else c
            for trial, c in judged.others.items()
        }
    )


_Run = TypeVar("_Run", bound=Answered | Refused | RerunFailed | TorchRefused | None)


def _same_values(rerun: np.ndarray, got: np.ndarray) -> bool:
    """Whether a rerun gave back exactly the first run's values: nothing it lifted changed them."""
    return np.array_equal(rerun.reshape(got.shape), got.astype(np.float64), equal_nan=True)


def _same_shape(rerun: _Run, expected: np.ndarray) -> _Run | Refused:
    """A rerun's array, or why it is of no use: code that returns another shape when lifted."""
    if isinstance(rerun, Answered) and rerun.array.size != expected.size:
        return Refused(f"it returned shape {rerun.array.shape}, expected {expected.shape}")
    return rerun


def _no_answer(run: Refused | RerunFailed | None) -> str:
    """Why a run that should decide a trial gave no array, in the student's words."""
    if run is None:
        return "it was not run"
    return run.what if isinstance(run, Refused) else run.message


def _without_rerun(
    original: Comparison,
    expected: np.ndarray,
    got: np.ndarray,
    precision: Precision,
    why: str,
    outcome: RerunOutcome = RerunOutcome.RERUN_FAILED,
) -> Comparison:
    """Judged on the first run alone: NaN or infinities where finite values were due are the format's
    range, anything else beyond its rounding a mistake."""
    if _overflows(expected, got, precision):
        note = (
            f"NaN or infinity where finite values were due is what running out of {precision.value}'s range "
            f"gives, and {why} to show otherwise"
        )
        return _decided(original, RerunOutcome.OVERFLOWS, note)
    return _decided(original, outcome, f"{why}, so it was judged against {precision.value}'s rounding alone")


def _judged_by_scaling(
    original: Comparison,
    expected: np.ndarray,
    spread: np.ndarray,
    got: np.ndarray,
    rerun: np.ndarray,
    above: _Above,
) -> Comparison:
    """The entries beyond rounding in the first run, seen again in a rerun at precision `above`.

    Zeros where a value below the first run's resolution of 1 was due, no worse in the rerun, are set
    aside: 1 + x - 1 loses such an x in any precision that cannot hold it, so they say nothing. Of the
    others: right in the rerun (within the first run's envelope) is instability. Infinities or NaN in the
    first run: the rerun must be right there, or not finite either (log(1 - sigmoid(x)) is -inf wherever
    1 - sigmoid(x) cancels to 0, in any precision): no evidence of a mistake. Finite errors
    must shrink with the formats' unit roundoffs (by SHRINK_FACTOR at least). Otherwise still
    wrong: a mistake.
    """
    precision = original.precision
    first_error, allowed = entry_errors(expected, got, spread, precision)
    rerun_error, _ = entry_errors(expected, rerun, spread, precision)
    got, rerun = (a.astype(np.float64).reshape(expected.shape) for a in (got, rerun))
    failing = first_error > allowed
    lost = failing & (got == 0) & (np.abs(expected) < precision.eps) & (rerun_error <= first_error)
    judged = failing & ~lost
    overflowed = judged & ~np.isfinite(got)
    finite = judged & ~overflowed
    right = rerun_error <= allowed
    at = above.where
    before, after = float(first_error[finite].sum()), float(rerun_error[finite].sum())
    shrink = before / after if after > 0 else np.inf
    if np.all(right[judged]):
        if not judged.any():
            note = (
                f"it returns 0 where values below {precision.eps:.2g} were due, also when rerun {at}: "
                "cancellation (1 + x - 1 loses an x that small)"
            )
            return _decided(original, RerunOutcome.CANCELLED, note)
        return _decided(original, RerunOutcome.RIGHT_HIGHER, f"right when rerun {at}", shrink)
    if np.any(overflowed & ~right & np.isfinite(rerun)):
        wrong, shrink = "still wrong", np.nan  # decided where the values overflowed, not by the shrink
    elif not np.any(finite & ~right):
        note = f"it overflows {precision.value}, and still does when rerun {at}: the format's range"
        return _decided(original, RerunOutcome.OVERFLOWS, note)
    else:
        if above.eps < precision.eps and shrink >= SHRINK_FACTOR:
            by = f"{shrink:.3g}-fold" if np.isfinite(shrink) else "to nothing"
            note = (
                f"its error shrank {by} when rerun {at} (up to {precision.eps / above.eps:.3g}-fold "
                "for rounding): rounding that the formula amplifies"
            )
            return _decided(original, RerunOutcome.SHRINKS, note, shrink)
        # One "wrong by" in what a student reads (classify's, relative to the values due): here, how much
        # the extra precision helped, as a factor.
        wrong = "still wrong" if shrink <= 2 else f"its error shrank only {shrink:.2g}-fold, still wrong"
    check = np.where(judged, rerun_error / allowed, 0.0)
    note = f"{wrong} when rerun {at} ({float(check.max()):.3g} envelopes)"
    measured = finite.any() and not np.isnan(shrink)
    return _decided(original, RerunOutcome.STILL_WRONG, note, shrink if measured else None)


def _decided(
    original: Comparison, outcome: RerunOutcome, note: str, shrink: float | None = None
) -> Comparison:
    verdict = Verdict.INSTABILITY if outcome.unstable else original.verdict
    return replace(original, verdict=verdict, rerun=outcome, note=note, shrink=shrink)


def _overflows(expected: np.ndarray, got: np.ndarray, precision: Precision) -> bool:
    """Whether the failure is the format's range: infinities or NaN where finite values were due."""
    bad = ~np.isfinite(got.astype(np.float64).reshape(expected.shape)) & np.isfinite(expected)
    return bool(bad.any()) or bool((np.abs(expected) > precision.largest).any())
