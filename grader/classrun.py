"""Grading a whole class: every (student, exercise), in parallel, through the class's gradebook.

A ClassRun opens the gradebook, starts a run in it, and is its only writer until it is closed. A task
(student, exercise) whose submission, exercise, settings and grader version are unchanged since it was
last graded is taken from the gradebook; the rest are graded, a job per student (jobs.py), and each
result is written to the gradebook the moment its job ends. What nobody handed in (no file attempts the
exercise) and what cannot be used is written at once, with no worker, no references and no trials: a
course's library of exercises costs nothing beside the one a class hands in. References are computed only
for the exercises a hand-in of which is graded, once (exercise/sources.py): for a local run in a fork of
a warm zygote, before any hand-in of the exercise takes that slot (sandbox/zygote_references.py), so that
this process never imports torch. Ctrl-C cancels what has not started and lets what is in flight finish;
everything finished is kept. The results come back by student, then exercise, whatever order they were
graded in.

Where the jobs run is a Backend's: this machine's threads and warm workers (local.py), or a Dask
cluster's workers (grader/cluster/); all the rest is the same for both.
"""

from __future__ import annotations

import contextlib
import gc
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from grader.collector import collecting_seldom
from grader.errors import GraderError
from grader.exercise.settings import Settings
from grader.exercise.sources import ClassReferences
from grader.exercise.spec import Exercise, exercise_hash
from grader.gradebook import Gradebook, Key, Stopped, settings_key, submission_hash
from grader.grading import not_runnable, not_started
from grader.handin.discover import may_define, read_handin, submission_of, untagged_hint
from grader.handin.prepare import Submission
from grader.jobs import Backend, Job, JobLost, Task, TaskResult, Unfinished, jobs_of
from grader.local import LocalBackend
from grader.outcomes import FailureKind
from grader.results import SubmissionResult


@dataclass(frozen=True)
class RunOutcome:
    """What a class run ended with."""

    results: tuple[SubmissionResult, ...]  # by student, then exercise, as planned
    reused: int  # taken from the gradebook
    graded: int  # graded now, or written at once (nothing to grade)
    interrupted: bool  # by Ctrl-C: what was in flight finished, the rest is left for the next run
    broken: tuple[GraderError, ...]  # exercises whose references fail: their graph, on its own inputs
    # Of `reused` and `graded`, the hand-ins (a readable hand-in, some file of which attempts the
    # exercise): what the summary counts, since a course's library holds many exercises nobody hands in
    # (9 students x 46 exercises is 414 results for 35 hand-ins).
    reused_handins: int = 0
    graded_handins: int = 0


Progress = Callable[[SubmissionResult], None]  # told of each result, graded or from the gradebook


def plan(
    exercises: Sequence[Exercise], students: Sequence[tuple[str, Path]], settings: Settings
) -> list[Task]:
    """The run's tasks, by student then exercise (a student's job takes them in this order); with
    `settings.secret` the gradebook keys leave the seed out, so that unchanged hand-ins keep their results
    and seeds."""
    keys = {e.id: (exercise_hash(e), settings_key(settings, e)) for e in exercises}
    tasks = []
    for name, path in students:
        handin, unreadable = _usable(path, partial(read_handin, path))
        for exercise in exercises:
            entry, selection = exercise.spec.entry, exercise.spec.notebook.selection
            submission: Submission | None = None
            problem = unreadable
            if handin is not None:
                submission, problem = _usable(
                    path, partial(submission_of, handin, entry, name, selection, exercise.file_rule)
                )
            exercise_key, kept_under = keys[exercise.id]
            key = Key(name, exercise.id, submission_hash(submission, path), exercise_key, kept_under)
            tasks.append(Task(exercise, name, path, submission, problem, key))
    return tasks


Made = TypeVar("Made")


def _usable(path: Path, make: Callable[[], Made]) -> tuple[Made | None, str]:
    """What `make` makes of a student's hand-in, or None and why it is unusable."""
    try:
        return make(), ""
    except GraderError as exc:  # this student's hand-in is unusable; the others are still graded
        return None, str(exc)
    except Exception as exc:  # anything else in reading it is still this student's alone
        return None, f"{path}: the hand-in could not be read ({type(exc).__name__}: {exc})"


class ClassRun:
    """A class's gradebook for one run: opened, a run started in it (`command`, the settings' seed), its
    only writer until `close`. `grade` grades what changed and records each result as it comes."""

    def __init__(self, gradebook: Path, command: str, settings: Settings) -> None:
        self.settings = settings
        self.gradebook = gradebook
        self._book = Gradebook(gradebook)
        self._run_id = self._book.start_run(command, settings.seed)

    def __enter__(self) -> ClassRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._book.close()

    def graded_at(self) -> dict[tuple[str, str], str]:
        """When each (student, exercise) the gradebook holds was graded, for the exports."""
        return self._book.graded_at()

    def grade(
        self,
        tasks: Sequence[Task],
        workers: int = 1,
        progress: Progress | None = None,
        backend: Backend | None = None,
    ) -> RunOutcome:
        """Grade the tasks the gradebook does not hold, `workers` at once here, or on `backend` (which it
        closes); the run is then finished in the gradebook (what it left in flight did not stop it)."""
        backend = backend or LocalBackend(workers)
        grading = _Grading(self._book, self._run_id, self.settings, backend, progress)
        try:
            grading.run(tasks)
        finally:
            backend.close()
        self._book.finish_run(self._run_id)
        return grading.outcome(tasks)


@dataclass(frozen=True)
class _Triage:
    """The tasks the gradebook does not hold, sorted by what is done with them."""

    to_grade: tuple[Task, ...]
    suspects: tuple[Task, ...]  # in flight when an earlier run died: graded alone, after the others
    stops: Mapping[Key, int]  # how many runs each suspect stopped so far
    unstarted: tuple[tuple[Task, SubmissionResult], ...]  # nothing to run: their results made at once
    stale: tuple[tuple[str, str], ...]  # found in flight, but graded since or no longer in the class


def _triage(
    pending: Sequence[Task], stopped: Mapping[tuple[str, str], Stopped], settings: Settings
) -> _Triage:
    """Hand-ins that were being graded when an earlier run died (gradebook.Gradebook.grading): one of them
    may be what killed it. Each is graded alone, after everyone else: the class's results are all written
    before it can kill this run too, and if it does, it is the only one in flight, so the next run blames
    it and no bystander. Found in flight a second time, it is not graded again."""
    left = dict(stopped)
    to_grade: list[Task] = []
    suspects: list[Task] = []
    stops: dict[Key, int] = {}
    unstarted: list[tuple[Task, SubmissionResult]] = []
    for task in pending:
        found = left.pop((task.student, task.exercise.id), None)
        result = _not_started(task, settings)
        if result is None and found is not None and found.submission_hash == task.key.submission_hash:
            if found.times >= STOPPED_LIMIT:
                result = _stopped_grader(task, settings, found.times)
            else:
                suspects.append(task)
                stops[task.key] = found.times
                continue
        if result is None:
            to_grade.append(task)
        else:
            unstarted.append((task, result))
    return _Triage(tuple(to_grade), tuple(suspects), stops, tuple(unstarted), tuple(left))


class _Grading:
    """One `ClassRun.grade`: the jobs in flight and what came of them. Each job's results are written to
    the gradebook from the backend's callback, the moment the job ends (a run killed later keeps them);
    this object's own state is touched by the caller's thread alone."""

    def __init__(
        self, book: Gradebook, run_id: int, settings: Settings, backend: Backend, progress: Progress | None
    ) -> None:
        self._book, self._run_id, self._settings = book, run_id, settings
        self._backend, self._progress = backend, progress
        self._references = ClassReferences(settings, backend.share)
        self._settled: set[str] = set()  # exercises whose references were found to hold, or to fail
        # By exercise, the results of what is not handed in or cannot be used: written once the exercise's
        # references hold where some hand-in of it is graded (one whose references fail is skipped whole).
        self._unstarted: dict[str, list[tuple[Key, SubmissionResult]]] = {}
        self._stops: Mapping[Key, int] = {}
        self._running: dict[Future[tuple[TaskResult, ...]], Job] = {}
        self._results: list[SubmissionResult] = []
        self._reused = self._graded = 0
        self._reused_pairs: set[tuple[str, str]] = set()  # (student, exercise) taken from the gradebook
        self._broken: list[GraderError] = []
        self._interrupted = False

    def run(self, tasks: Sequence[Task]) -> None:
        pending: list[Task] = []
        for task in tasks:
            stored = self._book.stored(task.key)
            if stored is None:
                pending.append(task)
            else:
                self._reused += 1
                self._reused_pairs.add((task.student, task.exercise.id))
                self._add(stored)
        triage = _triage(pending, self._book.stopped(self._run_id), self._settings)
        self._book.forget(triage.stale)
        self._stops = triage.stops
        for task, result in triage.unstarted:
            self._unstarted.setdefault(task.exercise.id, []).append((task.key, result))
        to_run = {task.exercise.id for task in triage.to_grade + triage.suspects}
        for exercise in {task.exercise.id for task in pending} - to_run:
            self._write_unstarted(exercise)
        queue = deque(jobs_of(triage.to_grade))
        # A suspect alone is one task: it alone is in flight, it alone is blamed if the grader dies again.
        suspects = deque(Job(task.student, task.path, (task,)) for task in triage.suspects)
        with collecting_seldom():
            self._loop(queue, suspects)

    def _loop(self, queue: deque[Job], suspects: deque[Job]) -> None:
        if queue:  # their torch imports overlap the references' computation
            self._backend.prestart(min(self._backend.slots, len(queue)))
        try:
            while queue or self._running or suspects:
                while queue and len(self._running) < self._backend.slots:
                    self._submit(queue.popleft())
                if not queue and not self._running and suspects:  # alone, once every other job is done
                    self._submit(suspects.popleft())
                if not self._running:
                    continue
                done, _ = wait(self._running, return_when=FIRST_COMPLETED)
                for future in done:
                    self._finished(self._running.pop(future), future)
                self._settle()
        except KeyboardInterrupt:
            # Nothing new starts; the jobs in flight finish (within their deadlines) and count as done.
            # A second Ctrl-C abandons them.
            self._interrupted = True
            self._backend.drain()
            wait(self._running)
            for future in self._running:
                if not future.cancelled() and future.exception() is None:
                    for ended in future.result():
                        if isinstance(ended, SubmissionResult):
                            self._graded += 1
                            self._results.append(ended)

    def _submit(self, job: Job) -> None:
        """The job's tasks whose exercise's references may hold, in flight in the gradebook, then started."""
        references = {task.exercise.id: self._references.of(task.exercise) for task in job.tasks}
        self._settle()
        held = {exercise: shared for exercise, shared in references.items() if shared.failure is None}
        job = job.only(held)
        if not job.tasks:
            return
        for task in job.tasks:  # before it starts: see _triage
            self._book.grading(self._run_id, task.key, self._stops.get(task.key, 0))
        recorded: Future[tuple[TaskResult, ...]] = Future()
        self._backend.submit(job, self._settings, held).add_done_callback(
            partial(self._record, job, recorded)
        )
        self._running[recorded] = job  # once it is sure to resolve: a Ctrl-C waits for what is here

    def _record(
        self, job: Job, recorded: Future[tuple[TaskResult, ...]], graded: Future[tuple[TaskResult, ...]]
    ) -> None:
        """On the backend's thread, as the job ends: its results in the gradebook at once, its unfinished
        tasks out of flight; then `recorded` resolves to what `graded` did."""
        if graded.cancelled():
            self._book.landed([task.key for task in job.tasks])
            recorded.cancel()
            return
        try:
            ended = graded.result()
            pairs = list(zip(job.tasks, ended, strict=True))
            graded_now = [(t.key, r) for t, r in pairs if isinstance(r, SubmissionResult)]
            self._book.record_all(self._run_id, graded_now)
            self._book.landed([t.key for t, r in pairs if isinstance(r, Unfinished)])
        except Exception as exc:
            with contextlib.suppress(Exception):  # the gradebook's own failure is told by `record_all`
                self._book.landed([task.key for task in job.tasks])
            recorded.set_exception(exc)
        else:
            recorded.set_result(ended)

    def _finished(self, job: Job, future: Future[tuple[TaskResult, ...]]) -> None:
        if future.cancelled():
            return
        exc = future.exception()  # the grader's own failure on the whole job: each task unfinished
        ended = future.result() if exc is None else tuple(Unfinished(_lost(exc)) for _ in job.tasks)
        for task, end in zip(job.tasks, ended, strict=True):
            result = end if isinstance(end, SubmissionResult) else self._unfinished(task, end)
            if result is not None:
                self._graded += 1
                self._add(result)

    def _unfinished(self, task: Task, end: Unfinished) -> SubmissionResult | None:
        """The grader's failure on a task, reported as such; None where its exercise's references failed
        (the exercise is reported)."""
        try:
            held = self._references.of(task.exercise).get()
        except GraderError:
            return None
        return not_runnable(
            task.exercise, task.student, task.path, self._settings, held, end.message, FailureKind.INTERNAL
        )

    def _add(self, result: SubmissionResult) -> None:
        self._results.append(result)
        if self._progress is not None:
            self._progress(result)

    def _write_unstarted(self, exercise: str) -> None:
        written = self._unstarted.pop(exercise, [])
        self._book.record_all(self._run_id, written)
        for _, result in written:
            self._graded += 1
            self._add(result)

    def _settle(self) -> None:
        """What waits on an exercise's references: once they hold, the results of those who handed in
        nothing are written; once they fail, the exercise is reported (its graph fails on its own
        inputs) and the others are graded."""
        for shared in self._references:
            exercise = shared.exercise.id
            if exercise in self._settled:
                continue
            if shared.ready:
                self._settled.add(exercise)
                # They and torch's modules live as long as the run: out of the collector's sight, the
                # collections that grading thousands of trials triggers stay cheap.
                gc.freeze()
                self._write_unstarted(exercise)
            elif shared.failure is not None:
                self._settled.add(exercise)
                self._broken.append(shared.failure)

    def outcome(self, tasks: Sequence[Task]) -> RunOutcome:
        # A result taken from the gradebook of an exercise whose references fail now goes with it.
        broken = {shared.exercise.id for shared in self._references if shared.failure is not None}
        results = sorted((r for r in self._results if r.exercise not in broken), key=_table_order(tasks))
        handins = {(t.student, t.exercise.id) for t in tasks if _handed_in(t)}
        pairs = [(r.student, r.exercise) for r in results]
        reused_handins = sum(p in handins and p in self._reused_pairs for p in pairs)
        graded_handins = sum(p in handins and p not in self._reused_pairs for p in pairs)
        return RunOutcome(
            tuple(results),
            self._reused,
            self._graded,
            self._interrupted,
            tuple(self._broken),
            reused_handins,
            graded_handins,
        )


def _handed_in(task: Task) -> bool:
    """Whether the task is a hand-in to grade: readable, and some file of it attempts the exercise."""
    return task.submission is not None and may_define(task.submission, task.exercise.spec.entry)


def _lost(exc: BaseException) -> str:
    if isinstance(exc, JobLost):
        return str(exc)
    return f"the grader failed on this submission (not the student's fault): {exc!r}"


def _table_order(tasks: Sequence[Task]) -> Callable[[SubmissionResult], tuple[int, int]]:
    """Results by student, then exercise, in the order they were planned (as the class table shows them):
    the same whatever order the gradings finished in."""
    students = {name: rank for rank, name in enumerate(dict.fromkeys(task.student for task in tasks))}
    exercises = {name: rank for rank, name in enumerate(dict.fromkeys(task.exercise.id for task in tasks))}
    return lambda result: (students[result.student], exercises[result.exercise])


def _not_started(task: Task, settings: Settings) -> SubmissionResult | None:
    """The result of a task with nothing to run (the hand-in cannot be used, or none of its files attempts
    the exercise: no need to start a worker to learn that), or None: it is to be graded."""
    exercise, entry = task.exercise, task.exercise.spec.entry
    if task.submission is None:
        return not_started(exercise, task.student, task.path, settings, task.problem)
    if not may_define(task.submission, entry):
        hint = untagged_hint(task.submission, entry)  # written, but in a cell the exercise does not grade
        message = f"not handed in: none of the files defines {entry}()" + (f"; {hint}" if hint else "")
        kind = FailureKind.NOT_SUBMITTED
        return not_started(exercise, task.student, task.path, settings, message, kind)
    return None


STOPPED_LIMIT = 2  # runs a hand-in may be found in flight in: once may be a bystander, twice alone is not


def _stopped_grader(task: Task, settings: Settings, times: int) -> SubmissionResult:
    """The result of a hand-in that was being graded, the last time alone, when `times` runs died."""
    message = (
        f"grading this hand-in stopped the grader {'twice' if times == 2 else f'{times} times'} (the "
        "grader's own process died while grading it, the last time with no other hand-in in flight: "
        "killed by the system's out-of-memory killer, by a signal, or by what the hand-in returned or "
        "printed); it was not graded again. Likely cause: returns or output that exhaust the grader's "
        "memory. To grade it again, change the hand-in (a new hand-in is graded as any other), or run "
        "with another --seed"
    )
    return not_started(task.exercise, task.student, task.path, settings, message, FailureKind.INTERNAL)
