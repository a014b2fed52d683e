"""One verdict per return from its per-trial comparisons: the worst trial decides, with the numbers why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial
from grader.judging.amounts import how_wrong
from grader.judging.compare import (
    Compared,
    Comparison,
    EntryError,
    Precision,
    PrecisionBasis,
    PrecisionReason,
    RerunOutcome,
)
from grader.outcomes import Verdict
from grader.results import FailingCase, ReturnResult
from grader.text import counted

# The precision a return is said to be judged at where nothing of it was compared (every trial erred).
NOTHING_COMPARED = Precision.FLOAT64


def classify_return(
    exercise: Exercise,
    name: str,
    comparisons: Compared,
    trials: Mapping[int, Trial],
    expected: Mapping[int, Mapping[str, np.ndarray]],
    got: Mapping[int, np.ndarray],
) -> ReturnResult:
    """`comparisons` holds every trial of the return (`trials`, in their order), judged."""
    points = exercise.points(name)
    others = comparisons.others
    # The trials that did not pass, in trial order; the passing ones are counted by their columns.
    failed = (
        [c for i in trials if (c := others.get(i)) is not None and c.verdict is not Verdict.PASS]
        if others
        else []
    )
    total = len(comparisons)
    # The worst verdict, ordered among the few trials that did not pass (verdicts order in Python code).
    verdict = max((c.verdict for c in failed), default=Verdict.PASS if total else Verdict.ERROR)
    decisive = [c for c in failed if c.verdict is verdict]
    # Over the trials compared: every passing one, and the others but errors.
    compared = [c for c in others.values() if c.verdict is not Verdict.ERROR]
    worst_ratio = max(
        [max(p.ratios) for p in comparisons.passing] + [c.max_ratio for c in compared], default=0.0
    )
    precisions: Counter[Precision] = Counter()
    reasons: Counter[PrecisionReason] = Counter()
    for passing in comparisons.passing:
        precisions[passing.precision] += len(passing.trials)
        reasons[passing.reason] += len(passing.trials)
    precisions.update(c.precision for c in compared)
    reasons.update(c.precision_reason for c in compared)
    precision = precisions.most_common(1)[0][0] if precisions else NOTHING_COMPARED
    credit = {
        Verdict.PASS: 1.0,
        Verdict.PRECISION: exercise.spec.precision_credit,
        Verdict.INSTABILITY: exercise.spec.instability_credit,
    }.get(verdict, 0.0)
    case = None
    entries: tuple[EntryError, ...] = ()
    if decisive:
        smallest = min(decisive, key=lambda c: (_trial_size(trials[c.trial]), c.trial))
        trial = trials[smallest.trial]
        case = FailingCase(
            trial=smallest.trial,
            sizes=dict(trial.sizes),
            expected=expected.get(smallest.trial, {}).get(name),
            got=got.get(smallest.trial),
            mask=smallest.failing_mask,
        )
        entries = smallest.failing
    shrinks = [c.shrink for c in decisive if c.shrink is not None]
    shrink = (min if verdict is Verdict.INSTABILITY else max)(shrinks) if shrinks else None
    message, envelopes = _message(
        verdict, total, decisive, worst_ratio, precision, _inferred(reasons), exercise, name, reasons
    )
    summary = _summary(verdict, total, decisive)
    return ReturnResult(
        name=name,
        verdict=verdict,
        trials=total,
        failed_trials=len(failed),
        message=message,
        points=points,
        score=points * credit,
        precision=precision,
        max_ratio=worst_ratio,
        failing_entries=entries,
        case=case,
        shrink=shrink,
        speaks_of_envelopes=envelopes,
        summary=summary,
    )


def _trial_size(trial: Trial) -> int:
    return sum(int(a.size) for a in trial.inputs.values())


def _inferred(reasons: Counter[PrecisionReason]) -> str:
    """Why the precision is not the returned dtype ('float64 array holding float16 values'), or ''."""
    reason = reasons.most_common(1)[0][0] if reasons else None
    return f"; {reason.text}" if reason is not None and reason.basis.said else ""


def asked_precision(exercise: Exercise) -> Precision:
    """The precision the exercise hands its inputs out in (the finest of its float inputs): what it asks
    the returns to be computed in."""
    floats = [p for i in exercise.spec.inputs.values() if (p := Precision.of_dtype(i.dtype)) is not None]
    return min(floats, key=lambda p: p.eps, default=Precision.FLOAT64)


def _coarser_note(exercise: Exercise, precision: Precision, reasons: Counter[PrecisionReason]) -> str:
    """For a pass in a coarser precision than the exercise's (`.half()`, float32 work): what was seen,
    since it passed only within that coarser format's rounding."""
    asked = asked_precision(exercise)
    if precision.eps <= asked.eps:
        return ""
    reason = reasons.most_common(1)[0][0] if reasons else None
    used, due = precision.value, asked.value
    if reason is not None and reason.basis is PrecisionBasis.DTYPE:  # returned in that dtype
        return (
            f"; your values were {used}, the exercise asks for {due}: passed within {used}'s "
            f"rounding; compute in {due} to get its accuracy"
        )
    # float64 values only as exact as float32's (float32 work inside, F.softplus's threshold): say what
    # was measured, not a dtype they did not return.
    return f"; passed within {used}'s rounding, coarser than the {due} the exercise asks for"


def _summary(verdict: Verdict, total: int, decisive: Sequence[Comparison]) -> str:
    """An error's message with its exception's cut to a line (`ReturnResult.summary`); "" where none is."""
    if verdict is not Verdict.ERROR:
        return ""
    first = min(decisive, key=lambda c: c.trial)
    if not first.brief:
        return ""
    if not any(c.ran for c in decisive):
        return first.brief
    return f"{first.brief} — on {len(decisive)} of {counted(total, 'trial')}"


def _message(
    verdict: Verdict,
    total: int,
    decisive: Sequence[Comparison],
    worst_ratio: float,
    precision: Precision,
    inferred: str,
    exercise: Exercise,
    name: str,
    reasons: Counter[PrecisionReason],
) -> tuple[str, bool]:
    """The return's message, and whether it speaks of rounding envelopes (a report then says what one is)."""
    of = f"{len(decisive)} of {counted(total, 'trial')}"
    envelopes = f"{worst_ratio:.3g} {precision.value} rounding envelopes{inferred}"
    if verdict is Verdict.PASS:
        every = "the only trial" if total == 1 else f"all {total} trials"
        coarser = _coarser_note(exercise, precision, reasons)
        return f"correct on {every} (max error {envelopes}){coarser}", True
    if verdict is Verdict.ERROR:
        first = min(decisive, key=lambda c: c.trial)
        if not any(c.ran for c in decisive):  # nothing was called: no count of trials to give
            return first.problem, False
        return f"{first.problem} — on {of}", False
    if verdict is Verdict.PRECISION:
        spec = next(r for r in exercise.spec.returns if r.name == name)
        tolerance = ", ".join(
            f"{k}={v:g}" for k, v in (("atol", spec.atol), ("rtol", spec.rtol)) if v is not None
        )
        return (
            f"outside the exercise's tolerance ({tolerance}) on {of}, but within {precision.value} "
            f"rounding (max {envelopes}): rounding, not a mistake; compute in float64 to pass"
        ), True
    how = how_wrong(decisive, total) or f"beyond rounding on {of}"
    worst = max(decisive, key=lambda c: c.max_ratio if np.isfinite(c.max_ratio) else -1.0)
    # Rounding envelopes only where they are a number: a NaN is named by how_wrong instead.
    envelopes = f" ({worst.max_ratio:.3g} {worst.precision.value} rounding envelopes)"
    ratio = envelopes if np.isfinite(worst.max_ratio) else ""
    shifted = (RerunOutcome.RIGHT_SHIFTED, RerunOutcome.RANGE_SHIFTED)
    if verdict is Verdict.INSTABILITY and all(c.rerun in shifted for c in decisive):
        # torch float64 code: no rerun above float64, the shifted run says it (reruns/shifted.py): plain words
        return (
            f"{how}{ratio}, but {decisive[0].note}. Your formula is right but loses precision on large "
            "inputs in float64: subtract each row's maximum before exp (torch.logsumexp and log_softmax do)"
        ), bool(ratio) or decisive[0].rerun.speaks_of_envelopes
    if verdict is Verdict.INSTABILITY:
        noted = max(decisive, key=lambda c: c.max_ratio)
        return (
            f"{how}{ratio}, but {noted.note}: a numerically unstable formula "
            "(overflow in exp, cancellation), not a mistake in the maths; rewrite it stably "
            "(subtract the max before exp, use log-sum-exp, avoid subtracting nearly equal numbers)"
        ), bool(ratio) or noted.rerun.speaks_of_envelopes
    changed = next((c for c in decisive if c.rerun is RerunOutcome.CHANGED), None)
    if changed is not None:  # what the student must fix first: no other finding about it holds
        return f"{how}{ratio}; {changed.note}", bool(ratio) or changed.rerun.speaks_of_envelopes
    if worst.rerun is RerunOutcome.STILL_WRONG:
        return f"{how}, at any precision{ratio}: a mistake in the formula", bool(ratio)
    if worst.rerun is RerunOutcome.REFUSED:
        # Not "a mistake": nothing ran above the precision used. Its points follow the first run alone (no
        # mistake may pass for an unstable formula), and the student is told how to let the grader tell.
        return (
            f"{how}{ratio}; {worst.note}: beyond rounding, but no rerun above {worst.precision.value} showed "
            "whether from a mistake or from an unstable formula; to let the grader rerun it in higher "
            "precision, accept any float ndarray (isinstance(x, np.ndarray), np.issubdtype(x.dtype, "
            "np.floating))"
        ), bool(ratio) or worst.rerun.speaks_of_envelopes
    return f"{how}{ratio}; {worst.note}: a mistake in the formula, not rounding", (
        bool(ratio) or worst.rerun.speaks_of_envelopes
    )
