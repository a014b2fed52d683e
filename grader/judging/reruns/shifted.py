"""Float64 code that no rerun lifts above float64 (torch), judged by its runs on inputs moved by the
exercise's shift invariance (invariance.py), and, where that invariance needs an input at 0, by its runs
with that input at 0 too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise
from grader.judging import invariance
from grader.judging.compare import Compared, Comparison, Precision, RerunOutcome, entry_errors
from grader.judging.reruns.outcomes import Answered, Rerun, decided, no_answer, rerun_of, same_shape
from grader.outcomes import Verdict
from grader.sandbox.report import WorkerReport

if TYPE_CHECKING:
    from grader.exercise.reference import References


# A run on shifted inputs is judged against the trial's own envelope, drawn where the inputs were large:
# it rounds less there, not more, but its own rounding (of the moved inputs) may differ a little. Every
# mistake `grader validate` accepts lands hundreds of envelopes away.
SHIFTED_SLACK = 4.0


@dataclass(frozen=True)
class ZeroedRuns:
    """Probes A (the zeroed input at 0) and B (at 0, rows moved) of a trial, and the values due at A (and
    B) and at C (the shifted run), where the invariance needs a zeroed input (invariance.py)."""

    at_zero: Rerun | None
    at_zero_moved: Rerun | None
    due: invariance.ZeroedDue | None  # None: the reference could not be evaluated there


def zeroed_due_of(
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


def zeroed_runs(report: WorkerReport, index: int, name: str, due: invariance.ZeroedDue | None) -> ZeroedRuns:
    a, b = invariance.zeroed_indices(index)
    return ZeroedRuns(rerun_of(report.reruns, a, name), rerun_of(report.reruns, b, name), due)


def judged_shifted(
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
        note = f"it failed when {shift.words} ({no_answer(moved)}), which shows no more"
        return decided(original, RerunOutcome.RERUN_FAILED, note)
    precision = Precision.FLOAT64
    error, allowed = entry_errors(expected, moved.array, spread, precision)
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = float(np.max(np.where(error > 0, error / allowed, 0.0), initial=0.0))
    if np.all(error <= SHIFTED_SLACK * allowed):
        note = f"it is right when {shift.words}, which does not change the right answer"
        finite = bool(np.all(np.isfinite(got.astype(np.float64))))
        return decided(original, RerunOutcome.RIGHT_SHIFTED if finite else RerunOutcome.RANGE_SHIFTED, note)
    note = (
        f"it is still wrong when {shift.words}, which does not change the right answer "
        f"({worst:.3g} envelopes): not float64's range"
    )
    return decided(original, RerunOutcome.WRONG_SHIFTED, note)


def judged_zeroed(
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
        return decided(original, RerunOutcome.RERUN_FAILED, note)
    due = zeroed.due
    runs = (
        (f"{term} is 0 and {shift.words}", zeroed.at_zero_moved, due.at_zero[name], due.at_zero_spread[name]),
        (f"{shift.words} with {term} as given", moved, due.moved[name], due.moved_spread[name]),
        (f"{term} is 0 and nothing is moved", zeroed.at_zero, due.at_zero[name], due.at_zero_spread[name]),
    )
    ratios: list[float] = []
    for where, run, expected, spread in runs:
        run = same_shape(run, expected)
        if not isinstance(run, Answered):
            note = f"it failed when {where} ({no_answer(run)}), which shows no more"
            return decided(original, RerunOutcome.RERUN_FAILED, note)
        error, allowed = entry_errors(expected, run.array, spread, Precision.FLOAT64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(float(np.max(np.where(error > 0, error / allowed, 0.0), initial=0.0)))
    both_moved, as_given, at_zero = ratios
    if both_moved > SHIFTED_SLACK:
        note = (
            f"it is still wrong when {runs[0][0]}, which leaves the right answer as it is with {term} at 0 "
            f"({both_moved:.3g} envelopes): not float64's range"
        )
        return decided(original, RerunOutcome.WRONG_SHIFTED, note)
    if as_given > SHIFTED_SLACK:
        note = (
            f"it is still wrong when {runs[1][0]}, where nothing over- or underflows ({as_given:.3g} "
            f"envelopes), while right with {term} at 0: the {term} term is wrong, not float64's range"
        )
        return decided(original, RerunOutcome.WRONG_SHIFTED, note)
    if at_zero <= 1.0:
        note = (
            f"it is right when {runs[2][0]}, so its failure comes with the {term} term, not from float64's "
            "range"
        )
        return decided(original, RerunOutcome.WRONG_SHIFTED, note)
    note = (
        f"it is right when {runs[0][0]} (which leaves the right answer as it is with {term} at 0) and "
        f"when {runs[1][0]}, and fails as before when {runs[2][0]}"
    )
    finite = bool(np.all(np.isfinite(got.astype(np.float64))))
    return decided(original, RerunOutcome.RIGHT_SHIFTED if finite else RerunOutcome.RANGE_SHIFTED, note)
