"""Grade one submission on one exercise, step by step, each step a value for the next:

    hand-in → prepared files → worker started → trials and references, and the trials of the autograd
    check → first pass (carried on by a fresh worker where a trial's deadline stopped it) → the checked
    trials split off → rerun plan → reruns → judged result

Nothing here decides a verdict: that is the judging modules' (grader/judging/).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from grader.exercise.reference_cache import stored_references
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial, make_trials, student_seed
from grader.handin.prepare import Submission, prepare
from grader.judging import provenance
from grader.judging.judge import judge, not_run
from grader.judging.reruns import plan_reruns
from grader.outcomes import Failure, FailureKind
from grader.results import SubmissionResult
from grader.sandbox import isolation
from grader.sandbox.report import Pass, RerunRequest, WorkerReport
from grader.sandbox.runner import RunningWorker
from grader.sandbox.warm import WorkerPool

if TYPE_CHECKING:
    from grader.exercise.reference import References


class Runner(Protocol):
    """What runs the student's code: a sandboxed worker (RunningWorker), or the student's own Python
    process for the functions a notebook hands in (in_process.InProcessRunner)."""

    def send(self, trials: Sequence[Trial], checks: Sequence[int] = ()) -> None: ...

    def first_pass(self) -> Pass: ...

    def rerun(self, request: RerunRequest) -> WorkerReport: ...

    def report(self) -> WorkerReport: ...

    def close(self) -> None: ...


# Starts a runner: from the student's seed (trials.student_seed), and the report of an earlier runner
# whose first pass a trial's deadline stopped (None for the first), which it runs on from.
StartRunner = Callable[[int, WorkerReport | None], Runner]


def grade(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    trial_count: int | None = None,
    only_trial: int | None = None,
    references: References | SharedReferences | None = None,
    inputs_as: str | None = None,
    pool: WorkerPool | None = None,
    start: StartRunner | None = None,
) -> SubmissionResult:
    """Grade; pass `references` (from compute_references, or a class's SharedReferences, computed here if
    no grading has yet) to share them across submissions, else they come from the cache
    (reference_cache.py), computed on a miss while the worker runs the trials.

    `inputs_as="float32"` hands the code float32 inputs: how validation checks a solution's float32 variant.
    The worker comes from `pool`, by default the process's shared pool of warm workers; `start` runs the
    code otherwise (the submission's files are then not run).
    """
    handin = prepare(submission)
    student = student_seed(exercise, seed)

    def sandboxed(student: int, after: WorkerReport | None) -> Runner:
        return RunningWorker(exercise, handin, inputs_as, pool, student, after=after)

    start = start or sandboxed
    # First: its start-up overlaps ours.
    worker = start(student, None)
    try:
        if references is None:
            count = trial_count or exercise.spec.trials
            references = stored_references(exercise, seed, count, only_trial) or SharedReferences(
                exercise, seed, make_trials(exercise, seed, count, only_trial)
            )
        # Drawn from the seed (secret in every grading that counts): the worker learns them with the job,
        # the hand-in cannot tell them from the others (judging/provenance.py).
        checks = provenance.pick_checks(exercise, references.trials, seed, only_trial)
        worker.send(references.trials, checks)
        if isinstance(references, SharedReferences):
            references = references.get()  # after the send: computing them imports torch
        first = worker.first_pass()
        if first.overrun is not None:
            # A trial past its deadline may be the machine's load, not the code: a fresh worker runs the
            # trials on from it, once. Closed first: the pool may have no other slot to give.
            earlier = worker.report()
            worker.close()
            worker = start(student, earlier)
            worker.send(references.trials, checks)  # the same checks: a trial is checked or not
            first = worker.first_pass()
        ordinary, first, checked = provenance.split(references, first, checks)
        plan = plan_reruns(exercise, ordinary, first)
        report = worker.rerun(provenance.with_reruns(plan.request, exercise, checked))
        report = report.relocated(handin.relocated)
    finally:
        worker.close()
    # Split again from the report's first pass: a runner may have rewritten its failures' places (a
    # notebook's cells).
    _, first, checked = provenance.split(references, report.first, checks)
    checked = replace(checked, reruns=report.reruns, extended=report.extended)
    return judge(
        exercise, submission, seed, ordinary, replace(report, first=first), plan, only_trial, checked
    )


def not_runnable(
    exercise: Exercise,
    student: str,
    path: Path,
    seed: int,
    references: References,
    message: str,
    kind: FailureKind = FailureKind.MISSING_FUNCTION,
) -> SubmissionResult:
    """The result for a hand-in that cannot even be started (no Python files, say): every return errs.

    `kind` NOT_SUBMITTED marks an exercise the student's files do not attempt at all.
    """
    first = Pass(stopped=Failure(kind, message))
    report = WorkerReport(first=first, reruns=Pass())
    plan = plan_reruns(exercise, references, first)
    return judge(exercise, Submission(student, path, ()), seed, references, report, plan)


def not_started(
    exercise: Exercise,
    student: str,
    path: Path,
    seed: int,
    trials: int,
    message: str,
    kind: FailureKind = FailureKind.MISSING_FUNCTION,
) -> SubmissionResult:
    """`not_runnable`'s result without its references, nor a look at each of the `trials`: for what
    nobody handed in, at no cost (no failing case is named: nothing ran)."""
    handin, failure = Submission(student, path, ()), Failure(kind, message)
    return not_run(exercise, handin, seed, trials, failure, isolation.current().description)
