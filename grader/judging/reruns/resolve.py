"""Each trial beyond rounding decided between instability and logic from its own runs alone
(`resolve_beyond_rounding`), never from which other trials were rerun; and overflow that no rerun
confirmed kept as instability only where the code is right on some trial (`finite_somewhere`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.judging import invariance
from grader.judging.compare import (
    Compared,
    Comparison,
    Precision,
    PrecisionBasis,
    PrecisionReason,
    RerunOutcome,
    infer_precision,
)
from grader.judging.reruns.changed import changed_answer
from grader.judging.reruns.outcomes import (
    Answered,
    Refused,
    Rerun,
    RerunFailed,
    TorchRefused,
    decided,
    extended_of,
    rerun_of,
    same_shape,
    same_values,
)
from grader.judging.reruns.scaling import AT_FLOAT64, IN_EXTENDED, judged_by_scaling
from grader.judging.reruns.shifted import (
    ZeroedRuns,
    judged_shifted,
    judged_zeroed,
    zeroed_due_of,
    zeroed_runs,
)
from grader.outcomes import Verdict
from grader.sandbox.protocol import EXTENDED
from grader.sandbox.report import WorkerReport

if TYPE_CHECKING:
    from grader.exercise.reference import References


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
            resolved[index] = decided(comparison, RerunOutcome.CHANGED, changed.words(spec.name))
            continue
        shifted = rerun_of(report.reruns, invariance.shifted_index(index), spec.name)
        if shifted is not None and shift is None:  # derived already when the rerun was planned
            shift = invariance.shift_of(exercise, references)
            if shift is not None and shift.zeroed is not None:
                due = zeroed_due_of(exercise, references, report, compared, shift)
        zeroed = None
        if shift is not None and shifted is not None and shift.zeroed is not None:
            zeroed = zeroed_runs(report, index, spec.name, due.get(index))
        resolved[index] = resolve_with_rerun(
            comparison,
            spec,
            references.expected[index][spec.name],
            references.spread[index][spec.name],
            got[index],
            rerun_of(report.reruns, index, spec.name),
            extended_of(report, index, spec.name),
            None if shift is None or shifted is None else (shift, shifted),
            zeroed,
        )
    return resolved


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
    rerun, extended = same_shape(rerun, expected), same_shape(extended, expected)
    # Computed in extended precision: returned in it, or in float64 with other values than the first run
    # had (the code stored extended results in a float64 array: np.zeros(shape) for an accumulator).
    lifted_to_extended = isinstance(extended, Answered) and (
        extended.dtype == EXTENDED or not same_values(extended.array, got)
    )
    # float64 values that fit a narrower format: that format's work widened, or float64 values that lost
    # their low bits (1 - (1 - e) keeps a few). A rerun at float64 lifts every narrower format it can; if
    # it changed nothing and numpy's floats went to extended precision, the work was float64.
    if (
        precision is not Precision.FLOAT64
        and original.dtype == "float64"
        and lifted_to_extended
        and isinstance(rerun, Answered)
        and same_values(rerun.array, got)
    ):
        precision = Precision.FLOAT64
        computed = PrecisionReason(PrecisionBasis.RECOMPUTED, "computed in float64")
        original = replace(original, precision=precision, precision_reason=computed)
    if precision is Precision.FLOAT64 and lifted_to_extended and isinstance(extended, Answered):
        return judged_by_scaling(original, expected, spread, got, extended.array, IN_EXTENDED)
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
        return judged_by_scaling(original, expected, spread, got, array, AT_FLOAT64)
    if precision is Precision.FLOAT64:
        if not same_values(array, got):
            # float64 values, yet computed otherwise when lifted: float32 inside, which the rerun lifted.
            return judged_by_scaling(original, expected, spread, got, array, AT_FLOAT64)
        if shifted is not None:
            shift, moved = shifted
            if shift.zeroed is not None:
                return judged_zeroed(original, spec.name, got, moved, shift, zeroed)
            return judged_shifted(original, expected, spread, got, same_shape(moved, expected), shift)
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
        return decided(original, RerunOutcome.OVERFLOWS, note)
    return decided(original, outcome, f"{why}, so it was judged against {precision.value}'s rounding alone")


def _overflows(expected: np.ndarray, got: np.ndarray, precision: Precision) -> bool:
    """Whether the failure is the format's range: infinities or NaN where finite values were due."""
    bad = ~np.isfinite(got.astype(np.float64).reshape(expected.shape)) & np.isfinite(expected)
    return bool(bad.any()) or bool((np.abs(expected) > precision.largest).any())
