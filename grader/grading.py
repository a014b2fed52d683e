"""Grade one submission on one exercise: trials → sandboxed run → compare → classify → result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec, Verdict
from grader.exercise.trials import make_trials
from grader.judging import consistency, diagnosis
from grader.judging.classify import Rerun, classify_return, resolve_with_rerun
from grader.judging.compare import PRECISIONS, Comparison, Flattened, compare_many, flatten
from grader.memo import PerObject
from grader.results import ErrorInfo, ReturnResult, SubmissionResult, display_path, student_location
from grader.sandbox.runner import (
    Failure,
    Problem,
    RerunRequest,
    RerunSelector,
    Returned,
    RunningWorker,
    Submission,
    TrialOutput,
    WorkerReport,
)
from grader.sandbox.warm import WorkerPool

RERUN_LIMIT = 200  # trials rerun at float64 per submission; the rest follow them (see below)
# The expected values end to end, per return and trials compared: a class shares them.
_flattened: PerObject[Flattened] = PerObject(kept=32)

if TYPE_CHECKING:
    from grader.exercise.reference import References


def grade(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    trial_count: int | None = None,
    only_trial: int | None = None,
    references: References | None = None,
    inputs_as: str | None = None,
    pool: WorkerPool | None = None,
) -> SubmissionResult:
    """Grade; pass `references` (from compute_references) to share them across submissions.

    `inputs_as="float32"` hands the code float32 inputs: how validation checks a solution's float32 variant.
    The worker comes from `pool`, by default the process's shared pool of warm workers.
    """
    worker = RunningWorker(exercise, submission, inputs_as, pool)  # first: its start-up overlaps ours
    try:
        if references is None:
            trials = make_trials(exercise, seed, trial_count or exercise.spec.trials, only_trial)
            worker.send(trials)
            # Imported only now, for the same overlap: torch is the grader's slowest import too.
            from grader.exercise.reference import compute_references

            references = compute_references(exercise, trials)
        else:
            worker.send(references.trials)
    except BaseException:
        worker.close()
        raise
    first_pass = FirstPass()
    report = worker.collect(rerun_selector(exercise, references, first_pass))
    return judge(exercise, submission, seed, references, report, only_trial, first_pass)


def not_runnable(
    exercise: Exercise,
    student: str,
    path: Path,
    seed: int,
    references: References,
    message: str,
    kind: str = "missing-function",
) -> SubmissionResult:
    """The result for a hand-in that cannot even be started (no Python files, say): every return errs.

    `kind` "not-submitted" marks an exercise the student's files do not attempt at all.
    """
    report = WorkerReport(
        outputs={},
        failures={},
        fatal=Failure(kind, message),
        stdout="",
        stderr="",
        output_bytes=0,
        seconds=0.0,
    )
    return judge(exercise, Submission(student, path, ()), seed, references, report)


def judge(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    references: References,
    report: WorkerReport,
    only_trial: int | None = None,
    first_pass: FirstPass | None = None,
) -> SubmissionResult:
    trials, expected = references.trials, references.expected
    by_index = {t.index: t for t in trials}
    error = _error_info(report.fatal) if report.fatal is not None else None
    returns: list[ReturnResult] = []
    for spec in exercise.spec.returns:
        comparisons, got = _judge_return(
            spec, references, report, error, first_pass.comparisons.get(spec.name) if first_pass else None
        )
        judged = classify_return(exercise, spec.name, comparisons, by_index, expected, got)
        if judged.verdict is Verdict.LOGIC:
            judged = _diagnosed(exercise, references, spec, report, judged, comparisons)
        returns.append(judged)
    for probe in first_pass.probes if first_pass is not None else []:
        returns = _checked_for_consistency(returns, probe, report)
    first_failure = next((report.failures[t.index] for t in trials if t.index in report.failures), None)
    if error is None and report.failures and len(report.failures) == len(trials):
        error = _error_info(first_failure)  # type: ignore[arg-type]
    return SubmissionResult(
        exercise=exercise.id,
        exercise_dir=display_path(exercise.root),
        submission=display_path(submission.path),
        student=submission.name,
        seed=seed,
        trials=len(trials),
        returns=tuple(returns),
        error=error,
        isolation=report.isolation,
        first_trial_error=_error_info(first_failure) if first_failure is not None else None,
        stdout=report.stdout,
        stderr=report.stderr,
        seconds=report.seconds,
        only_trial=only_trial,
    )


@dataclass
class FirstPass:
    """What the rerun selection learnt from the first pass, kept for judging (nothing compared twice)."""

    comparisons: dict[str, dict[int, Comparison]] = field(default_factory=dict)
    probes: list[consistency.Probe] = field(default_factory=list)


def _checked_for_consistency(
    returns: list[ReturnResult], probe: consistency.Probe, report: WorkerReport
) -> list[ReturnResult]:
    """A wrong gradient that is the derivative of the student's own, wrong, value is named so: the
    forward computation is what to fix first."""
    by_name = {r.name: r for r in returns}
    value, gradient = probe.pair.value.name, probe.pair.gradient.name
    output = report.outputs.get(probe.trial)
    if output is None or by_name[value].verdict is not Verdict.LOGIC:
        return returns
    item = _item(output, gradient)
    values = {
        index: found.array
        for index in (probe.plus.index, probe.minus.index)
        if index in report.reruns and isinstance(found := _item(report.reruns[index], value), Returned)
    }
    if not isinstance(item, Returned) or consistency.consistent(probe, item.array, values) is not True:
        return returns
    judged = by_name[gradient]
    why = (
        f"finite differences of the {value} you return agree with your {gradient}: it is the right "
        f"derivative of the function you computed, but that function is not the exercise's. Fix the "
        f"computation of {value} first."
    )
    if judged.misconception is None:
        name = f"the derivative of your own {value}, which is wrong"
        judged = replace(judged, misconception=name, feedback=why)
    else:  # the name says how it is wrong; this says where the mistake is
        judged = replace(judged, feedback=f"{judged.feedback}. Also, {why}" if judged.feedback else why)
    return [judged if r.name == gradient else r for r in returns]


def _diagnosed(
    exercise: Exercise,
    references: References,
    spec: ReturnSpec,
    report: WorkerReport,
    judged: ReturnResult,
    comparisons: list[Comparison],
) -> ReturnResult:
    returned = _returned(report.outputs, spec.name)
    found = diagnosis.diagnose(exercise, references, spec, returned, {c.trial: c for c in comparisons})
    if found is None:
        return judged
    return replace(judged, misconception=found.name, feedback=found.feedback)


def _judge_return(
    spec: ReturnSpec,
    references: References,
    report: WorkerReport,
    fatal: ErrorInfo | None,
    first_pass: Mapping[int, Comparison] | None,
) -> tuple[list[Comparison], dict[int, np.ndarray]]:
    """Comparisons of one return over all trials, in trial order; the arrays compared, by trial."""
    judged: dict[int, Comparison] = {}
    for trial in references.trials:
        output = report.outputs.get(trial.index)
        if output is None:
            failure = report.failures.get(trial.index)
            if failure is not None:
                problem = _failure_text(failure)
            else:
                problem = f"not run: {fatal.kind} ({fatal.message})" if fatal is not None else "no result"
            judged[trial.index] = Comparison(trial.index, Verdict.ERROR, problem=problem)
            continue
        item = _item(output, spec.name)
        if isinstance(item, Problem):
            judged[trial.index] = Comparison(
                trial.index, Verdict.ERROR, problem=f"{spec.name} {item.problem}"
            )
    got = {i: item.array for i, item in _returned(report.outputs, spec.name).items()}
    compared = first_pass if first_pass is not None else _compare_outputs(spec, references, report.outputs)
    judged.update(compared)
    judged.update(_resolve_beyond_rounding(spec, references, report, compared, got))
    return [judged[t.index] for t in references.trials], got


def _item(output: TrialOutput, name: str) -> Returned | Problem:
    return output.by_name[name]


def _returned(outputs: Mapping[int, TrialOutput], name: str) -> dict[int, Returned]:
    items = {index: _item(output, name) for index, output in outputs.items()}
    return {index: item for index, item in items.items() if isinstance(item, Returned)}


def _compare_outputs(
    spec: ReturnSpec, references: References, outputs: Mapping[int, TrialOutput]
) -> dict[int, Comparison]:
    returned = _returned(outputs, spec.name)
    compared = list(returned)
    expected = [references.expected[i][spec.name] for i in compared]
    spreads = [references.spread[i][spec.name] for i in compared]
    flat = _flattened.get(references, (spec.name, tuple(compared)), lambda: flatten(expected, spreads))
    comparisons = {
        c.trial: c
        for c in compare_many(
            spec,
            compared,
            expected,
            [returned[i].array for i in compared],
            [returned[i].dtype for i in compared],
            spreads,
            flattened=flat,
        )
    }
    # float64 values beyond float64 rounding but within float32's: float32 work widened before returning
    # (numpy makes float32 times int64 float64, and a rerun cannot lift astype(np.float32)). That is
    # correct code, as the same work returned in float32 would be; `grader validate` makes sure every
    # standard mistake lands beyond float32 rounding, so none hides here.
    widened = [i for i, c in comparisons.items() if c.verdict is Verdict.LOGIC and c.precision == "float64"]
    at_float32 = compare_many(
        spec,
        widened,
        [references.expected[i][spec.name] for i in widened],
        [returned[i].array for i in widened],
        ["float64"] * len(widened),
        [references.spread[i][spec.name] for i in widened],
        at=PRECISIONS["float32"],
    )
    for comparison in at_float32:
        if comparison.verdict in (Verdict.PASS, Verdict.PRECISION):
            note = "float64 values within float32 rounding: computed partly in float32"
            comparisons[comparison.trial] = replace(comparison, note=note)
    return comparisons


def _resolve_beyond_rounding(
    spec: ReturnSpec,
    references: References,
    report: WorkerReport,
    compared: Mapping[int, Comparison],
    got: Mapping[int, np.ndarray],
) -> dict[int, Comparison]:
    """Trials beyond rounding: their reruns at float64 decide between instability and logic."""
    beyond = [c for c in compared.values() if c.verdict is Verdict.LOGIC]
    resolved: dict[int, Comparison] = {}
    for comparison in beyond:
        index = comparison.trial
        rerun: Rerun = None
        if index in report.reruns:
            item = _item(report.reruns[index], spec.name)
            rerun = item.problem if isinstance(item, Problem) else (item.array, item.dtype)
        elif index in report.rerun_failures:
            rerun = report.rerun_failures[index].message
        else:
            continue
        resolved[index] = resolve_with_rerun(
            comparison,
            spec,
            references.expected[index][spec.name],
            references.spread[index][spec.name],
            got[index],
            rerun,
        )
    # Beyond the rerun limit, trials follow those rerun: one still wrong at float64 is enough for logic.
    confirmed = [r for r in resolved.values() if r.verdict is Verdict.LOGIC]
    for comparison in beyond:
        if comparison.trial in resolved:
            continue
        if resolved and not confirmed:
            note = f"like the {len(resolved)} trials rerun at float64, which were right there"
            resolved[comparison.trial] = replace(comparison, verdict=Verdict.INSTABILITY, note=note)
        else:
            resolved[comparison.trial] = replace(comparison, note="it was not rerun at float64")
    return resolved


def rerun_selector(exercise: Exercise, references: References, first_pass: FirstPass) -> RerunSelector:
    """Picks the trials to rerun at float64: those beyond rounding, worst first.

    Code that already returns float64 is rerun too: what it returned may have been computed in float32
    and overflowed (an infinity says nothing about its precision), and the rerun costs little.

    The first pass's comparisons are kept in `first_pass` for judging, so nothing is compared twice; so are
    the consistency probes asked for where a value and its gradient are both wrong.
    """

    by_index = {t.index: t for t in references.trials}

    def select(outputs: Mapping[int, TrialOutput]) -> RerunRequest:
        worst: dict[int, float] = {}
        for spec in exercise.spec.returns:
            first_pass.comparisons[spec.name] = _compare_outputs(spec, references, outputs)
            for c in first_pass.comparisons[spec.name].values():
                if c.verdict is Verdict.LOGIC:
                    worst[c.trial] = max(worst.get(c.trial, 0.0), c.max_ratio)
        # A value and its gradient both wrong: is the gradient at least that of the student's own value?
        for number, pair in enumerate(consistency.pairs(exercise)):
            values, gradients = (first_pass.comparisons[r.name] for r in (pair.value, pair.gradient))
            both = [
                t
                for t, c in gradients.items()
                if c.verdict is Verdict.LOGIC and t in values and values[t].verdict is Verdict.LOGIC
            ]
            if both:
                first_pass.probes.append(consistency.make_probe(pair, by_index[min(both)], number))
        trials = sorted(sorted(worst, key=lambda t: -worst[t])[:RERUN_LIMIT])
        return RerunRequest(trials, [moved for p in first_pass.probes for moved in (p.plus, p.minus)])

    return select


def _failure_text(failure: Failure) -> str:
    where = student_location(failure.traceback)
    return f"{failure.message} ({where})" if where else failure.message


def _error_info(failure: Failure) -> ErrorInfo:
    return ErrorInfo(failure.kind, failure.message, failure.traceback, failure.index)
