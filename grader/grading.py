"""Grade one submission on one exercise: trials → sandboxed run → compare → classify → result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from grader.classify import classify_return
from grader.compare import Comparison, compare_many
from grader.results import ErrorInfo, ReturnResult, SubmissionResult, display_path, student_location
from grader.sandbox import Failure, Problem, RunningWorker, Submission, WorkerReport
from grader.spec import Exercise, ReturnSpec, Verdict
from grader.trials import make_trials

if TYPE_CHECKING:
    from grader.reference import References


def grade(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    trial_count: int | None = None,
    only_trial: int | None = None,
    references: References | None = None,
) -> SubmissionResult:
    """Grade; pass `references` (from compute_references) to share them across submissions."""
    worker = RunningWorker(exercise, submission)  # first: its start-up (importing torch) overlaps ours
    if references is None:
        trials = make_trials(exercise, seed, trial_count or exercise.spec.trials, only_trial)
        worker.send(trials)
        # Imported only now, for the same overlap: torch is the grader's slowest import too.
        from grader.reference import compute_references

        references = compute_references(exercise, trials)
    else:
        worker.send(references.trials)
    report = worker.collect()
    return judge(exercise, submission, seed, references, report, only_trial)


def not_runnable(
    exercise: Exercise, student: str, path: Path, seed: int, references: References, message: str
) -> SubmissionResult:
    """The result for a hand-in that cannot even be started (no Python files, say): every return errs."""
    report = WorkerReport(
        outputs={},
        failures={},
        fatal=Failure("missing-function", message),
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
) -> SubmissionResult:
    trials, expected = references.trials, references.expected
    by_index = {t.index: t for t in trials}
    error = _error_info(report.fatal) if report.fatal is not None else None
    returns: list[ReturnResult] = []
    for spec in exercise.spec.returns:
        comparisons, got = _judge_return(spec, references, report, error)
        returns.append(classify_return(exercise, spec.name, comparisons, by_index, expected, got))
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


def _judge_return(
    spec: ReturnSpec,
    references: References,
    report: WorkerReport,
    fatal: ErrorInfo | None,
) -> tuple[list[Comparison], dict[int, np.ndarray]]:
    """Comparisons of one return over all trials, in trial order; the arrays compared, by trial."""
    trials, expected, spread = references.trials, references.expected, references.spread
    judged: dict[int, Comparison] = {}
    got: dict[int, np.ndarray] = {}
    dtypes: dict[int, str] = {}
    for trial in trials:
        output = report.outputs.get(trial.index)
        if output is None:
            failure = report.failures.get(trial.index)
            if failure is not None:
                problem = _failure_text(failure)
            else:
                problem = f"not run: {fatal.kind} ({fatal.message})" if fatal is not None else "no result"
            judged[trial.index] = Comparison(trial.index, Verdict.ERROR, problem=problem)
            continue
        item = next(r for r in output.returns if r.name == spec.name)
        if isinstance(item, Problem):
            judged[trial.index] = Comparison(
                trial.index, Verdict.ERROR, problem=f"{spec.name} {item.problem}"
            )
        else:
            got[trial.index], dtypes[trial.index] = item.array, item.dtype
    compared = list(got)
    for comparison in compare_many(
        spec,
        compared,
        [expected[i][spec.name] for i in compared],
        [got[i] for i in compared],
        [dtypes[i] for i in compared],
        [spread[i][spec.name] for i in compared],
    ):
        judged[comparison.trial] = comparison
    return [judged[t.index] for t in trials], got


def _failure_text(failure: Failure) -> str:
    where = student_location(failure.traceback)
    return f"{failure.message} ({where})" if where else failure.message


def _error_info(failure: Failure) -> ErrorInfo:
    return ErrorInfo(failure.kind, failure.message, failure.traceback, failure.index)
