"""What a class run hands its backend to grade, and how it is graded wherever it runs: a leaf below both
the class run (classrun.py) and the Dask cluster's two sides (cluster/), which share these types.

A job is one student's hand-in with the exercises it attempts, in the order they were planned, so that
one worker grades a student's exercises together (grading.iter_grade_file: the files imported once). The
gradebook still keys each result by (student, exercise): a job's tasks. A task that ends without a result
(the grader's own failure) does not stop the next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from grader.exercise.settings import Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise
from grader.gradebook import Key
from grader.grading import grade, iter_grade_file
from grader.handin.prepare import Submission
from grader.results import SubmissionResult
from grader.sandbox.warm import WorkerPool

if TYPE_CHECKING:
    from grader.exercise.reference import References


@dataclass(frozen=True)
class Task:
    """One (student, exercise) of a class run: what the gradebook keeps one result of."""

    exercise: Exercise
    student: str
    path: Path
    submission: Submission | None  # None: the hand-in is unusable, `problem` says why
    problem: str
    key: Key


@dataclass(frozen=True)
class Job:
    """What a backend runs: one student's hand-in (`path`) and the tasks of it to grade, in order."""

    student: str
    path: Path
    tasks: tuple[Task, ...]

    def only(self, exercises: Collection[str]) -> Job:
        """The job with only the tasks of these exercises (in the same order)."""
        return replace(self, tasks=tuple(t for t in self.tasks if t.exercise.id in exercises))


def jobs_of(tasks: Sequence[Task]) -> list[Job]:
    """One job per student, in the order the students first come in `tasks`, each with its tasks in the
    order they come."""
    by_student: dict[str, list[Task]] = {}
    for task in tasks:
        by_student.setdefault(task.student, []).append(task)
    return [Job(student, found[0].path, tuple(found)) for student, found in by_student.items()]


@dataclass(frozen=True)
class Unfinished:
    """A task that ended without a result to keep: `message` says why (the grader's failure, never the
    student's). Not recorded: the next run grades it again."""

    message: str


TaskResult = SubmissionResult | Unfinished  # how a task ended: one per task of its job, in order


class JobLost(Exception):
    """A job its backend could not finish (every worker that ran it died); the message says why, to each
    student of it as is."""


class Backend(Protocol):
    """Runs jobs, `slots` at once: `submit` returns at once, its future resolves to the job's outcomes (one
    per task, in order), or to the exception that kept the whole job from finishing (JobLost)."""

    @property
    def slots(self) -> int: ...

    def prestart(self, count: int) -> None: ...

    def share(self, references: SharedReferences) -> None:
        """An exercise's references, not in the cache, before its first job is submitted: where to
        compute them (by default, in this process, by the first grading that needs them)."""

    def submit(
        self, job: Job, settings: Settings, references: Mapping[str, SharedReferences]
    ) -> Future[tuple[TaskResult, ...]]:
        """`settings`: the run's; `references`: by exercise id, those of every task of the job."""
        ...

    def drain(self) -> None:
        """Start nothing that has not started yet (the jobs in flight finish)."""

    def close(self) -> None: ...


def grade_job(
    job: Job,
    settings: Settings,
    references: Mapping[str, References | SharedReferences],
    pool: WorkerPool,
) -> tuple[TaskResult, ...]:
    """The job's tasks graded in one worker from `pool` (grading.iter_grade_file: the student's files
    imported once), here or on a cluster's worker. A task's failure (the grader's, or its exercise's
    references) is its own: the task it stopped on and those after it are graded again one by one, each
    failure kept to its task."""
    assert all(t.submission is not None for t in job.tasks)  # an unusable hand-in: classrun wrote it
    handed = [(t.exercise, t.submission) for t in job.tasks if t.submission is not None]
    outcomes: dict[int, TaskResult] = {}
    with contextlib.suppress(Exception):  # whatever stopped it is met again below, by its task alone
        for number, result in iter_grade_file(handed, settings, _held(references), pool):
            outcomes[number] = result
    for number, (exercise, submission) in enumerate(handed):
        if number in outcomes:
            continue
        try:
            held = references[exercise.id]
            outcomes[number] = grade(exercise, submission, settings, references=held, pool=pool)
        except Exception as exc:
            failed = f"the grader failed on this submission (not the student's fault): {exc!r}"
            outcomes[number] = Unfinished(failed)
    return tuple(outcomes[number] for number in range(len(handed)))


def _held(
    references: Mapping[str, References | SharedReferences],
) -> Callable[[Exercise], References | SharedReferences]:
    return lambda exercise: references[exercise.id]
