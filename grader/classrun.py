"""Grading a whole class: every (student, exercise), in parallel, through the gradebook.

A (student, exercise) whose submission, exercise, settings and grader version are unchanged since it was
last graded is taken from the gradebook; the rest are graded in parallel, and each result is written to
the gradebook the moment it exists. What nobody handed in (no file attempts the exercise) and what cannot
be used is written at once, with no worker, no references and no trials: a course's library of exercises
costs nothing beside the one a class hands in. References are computed only for the exercises a hand-in
of which is graded, once (exercise/shared.py): here in a fork of a warm zygote, before any hand-in of the
exercise takes that slot (sandbox/zygote_references.py), so that this process never imports torch.
Ctrl-C cancels what has not started and lets what is in flight finish; everything finished is kept.
The results come back by student, then exercise, whatever order they were graded in.

Where the gradings run is a Backend's: this machine's threads and warm workers (LocalBackend), or a Dask
cluster's workers (grader/cluster/); all the rest is the same for both.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from grader.errors import GraderError
from grader.exercise.reference_cache import stored_references
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise
from grader.exercise.trials import make_trials
from grader.gradebook import Gradebook, Key, exercise_hash, settings, submission_hash
from grader.grading import grade, not_runnable, not_started
from grader.handin.discover import may_define, read_handin, submission_of, untagged_hint
from grader.handin.prepare import Submission
from grader.launch import COLLECT_EVERY
from grader.outcomes import FailureKind
from grader.results import SubmissionResult
from grader.sandbox.warm import WorkerPool, started_shared_pool
from grader.sandbox.zygote_references import computable, computed_in_zygote

if TYPE_CHECKING:
    from grader.exercise.reference import References


@dataclass(frozen=True)
class Job:
    exercise: Exercise
    student: str
    path: Path
    submission: Submission | None  # None: the hand-in is unusable, `problem` says why
    problem: str
    key: Key


@dataclass
class ClassRun:
    results: list[SubmissionResult] = field(default_factory=list)
    reused: int = 0
    graded: int = 0
    interrupted: bool = False
    broken: list[GraderError] = field(default_factory=list)  # exercises whose references fail


class Backend(Protocol):
    """Runs gradings, `slots` at once: `submit` returns at once, its future resolves to the result, or to
    the exception that kept the grading from finishing (JobLost: said to the student as is)."""

    @property
    def slots(self) -> int: ...

    def prestart(self, count: int) -> None: ...

    def share(self, references: SharedReferences) -> None:
        """An exercise's references, not in the cache, before its first job is submitted: where to
        compute them (by default, in this process, by the first grading that needs them)."""

    def submit(self, job: Job, seed: int, references: SharedReferences) -> Future[SubmissionResult]: ...

    def drain(self) -> None:
        """Start nothing that has not started yet (the gradings in flight finish)."""

    def close(self) -> None: ...


class JobLost(Exception):
    """A grading its backend could not finish (every worker that ran it died); the message says why."""


class LocalBackend:
    """This machine: `workers` threads, each grading one job at a time in a warm worker."""

    def __init__(self, workers: int) -> None:
        self.slots = workers
        self._workers = WorkerPool(limit=workers)
        started = started_shared_pool()
        if started is not None:  # zygotes the `grader run` command started before its own imports
            self._workers.adopt(started)
        self._threads = ThreadPoolExecutor(max_workers=workers)

    def prestart(self, count: int) -> None:
        self._workers.prestart(count)

    def share(self, references: SharedReferences) -> None:
        """Computed at once, in a fork of a warm zygote (zygote_references.py: this process never imports
        torch), whose slot is taken now, before any job of the exercise takes one: a grading that waits
        for them holds a slot of its own, never the one that computes them."""
        if not computable(references.exercise):  # computed here, by the first grading that asks
            return
        try:
            zygote = self._workers.acquire()
        except Exception:  # a sandbox that cannot start: computed here; each grading reports the sandbox
            return
        references.try_first(partial(computed_in_zygote, self._workers, zygote))

        def compute() -> None:
            with contextlib.suppress(GraderError):  # told by every grading that asks for them
                references.get()

        threading.Thread(target=compute, name=f"references of {references.exercise.id}", daemon=True).start()

    def submit(self, job: Job, seed: int, references: SharedReferences) -> Future[SubmissionResult]:
        return self._threads.submit(grade_job, job, seed, references, self._workers)

    def drain(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._workers.close()


Progress = Callable[[SubmissionResult], None]  # told of each result, graded or from the gradebook


def plan(
    exercises: Sequence[Exercise],
    students: Sequence[tuple[str, Path]],
    seed: int,
    trials: int | None,
    secret: bool = False,
) -> list[Job]:
    """The run's jobs; `secret`: `seed` was drawn for this run (exercise.trials.secret_seed), and the
    gradebook keys leave it out, so that unchanged hand-ins keep their results and seeds."""
    handins = {name: _usable(path, partial(read_handin, path)) for name, path in students}
    jobs = []
    for exercise in exercises:
        exercise_key = exercise_hash(exercise)
        grading = settings(None if secret else seed, trials or exercise.spec.trials)
        entry, selection = exercise.spec.entry, exercise.spec.notebook.selection
        for name, path in students:
            handin, problem = handins[name]
            submission: Submission | None = None
            if handin is not None:
                submission, problem = _usable(path, partial(submission_of, handin, entry, name, selection))
            key = Key(name, exercise.id, submission_hash(submission, path), exercise_key, grading)
            jobs.append(Job(exercise, name, path, submission, problem, key))
    return jobs


Made = TypeVar("Made")


def _usable(path: Path, make: Callable[[], Made]) -> tuple[Made | None, str]:
    """What `make` makes of a student's hand-in, or None and why it is unusable."""
    try:
        return make(), ""
    except GraderError as exc:  # this student's hand-in is unusable; the others are still graded
        return None, str(exc)
    except Exception as exc:  # anything else in reading it is still this student's alone
        return None, f"{path}: the hand-in could not be read ({type(exc).__name__}: {exc})"


def run_class(
    jobs: Sequence[Job],
    gradebook: Gradebook,
    run_id: int,
    seed: int,
    trials: int | None,
    workers: int,
    progress: Progress | None = None,
    backend: Backend | None = None,
) -> ClassRun:
    """Grade the jobs not in the gradebook, `workers` at once here, or on `backend` (which it closes)."""
    outcome = ClassRun()
    backend = backend or LocalBackend(workers)
    pending: list[Job] = []
    for job in jobs:
        stored = gradebook.stored(job.key)
        if stored is None:
            pending.append(job)
            continue
        outcome.results.append(stored)
        outcome.reused += 1
        if progress is not None:
            progress(stored)

    queue: list[Job] = []
    # Hand-ins that were being graded when an earlier run died (gradebook.Gradebook.grading): one of them
    # may be what killed it. Each is graded alone, after everyone else: the class's results are all
    # written before it can kill this run too, and if it does, it is the only one in flight, so the next
    # run blames it and no bystander. Found in flight a second time, it is not graded again.
    stopped = gradebook.stopped(run_id)
    suspects: list[Job] = []
    stops: dict[Key, int] = {}  # how many runs each suspect stopped so far
    # By exercise, the results of what is not handed in or cannot be used: written once the exercise's
    # references hold where some hand-in of it is graded (one whose references fail is skipped whole).
    unstarted: dict[str, list[tuple[Key, SubmissionResult]]] = {}
    for job in pending:
        found = stopped.pop((job.student, job.exercise.id), None)
        result = _not_started(job, seed, trials)
        if result is None and found is not None and found.submission_hash == job.key.submission_hash:
            if found.times >= STOPPED_LIMIT:
                result = _stopped_grader(job, seed, trials, found.times)
            else:
                suspects.append(job)
                stops[job.key] = found.times
                continue
        if result is None:
            queue.append(job)
        else:
            unstarted.setdefault(job.exercise.id, []).append((job.key, result))
    gradebook.forget(list(stopped))  # graded since, or no longer in the class: nothing to blame

    def write_unstarted(exercise: str) -> None:
        written = unstarted.pop(exercise, [])
        gradebook.record_all(run_id, written)
        for _, result in written:
            outcome.results.append(result)
            outcome.graded += 1
            if progress is not None:
                progress(result)

    for exercise in {job.exercise.id for job in pending} - {job.exercise.id for job in queue + suspects}:
        write_unstarted(exercise)

    if queue:  # their torch imports overlap the references' computation
        backend.prestart(min(backend.slots, len(queue)))
    references: dict[str, SharedReferences] = {}
    settled: set[str] = set()  # exercises whose references were found to hold, or to fail

    def references_for(exercise: Exercise) -> SharedReferences:
        """The exercise's trials at once; its references computed once, where the backend shares them."""
        if exercise.id not in references:
            count = trials or exercise.spec.trials
            try:
                stored = stored_references(exercise, seed, count)
                drawn = stored.trials if stored is not None else make_trials(exercise, seed, count)
                references[exercise.id] = SharedReferences(exercise, seed, drawn, stored)
                if stored is None:
                    backend.share(references[exercise.id])
            except GraderError as exc:  # its inputs cannot be drawn: grade the other exercises
                references[exercise.id] = SharedReferences(exercise, seed, (), failure=exc)
            settle()
        return references[exercise.id]

    def settle() -> None:
        """What waits on an exercise's references: once they hold, the results of those who handed in
        nothing are written; once they fail, the exercise is reported (its graph fails on its own
        inputs) and the others are graded."""
        for exercise, shared in references.items():
            if exercise in settled:
                continue
            if shared.ready:
                settled.add(exercise)
                # They and torch's modules live as long as the run: out of the collector's sight, the
                # collections that grading thousands of trials triggers stay cheap.
                gc.freeze()
                write_unstarted(exercise)
            elif shared.failure is not None:
                settled.add(exercise)
                outcome.broken.append(shared.failure)

    def submit(job: Job, refs: SharedReferences) -> Future[SubmissionResult]:
        """The job's result once it is in the gradebook."""
        recorded: Future[SubmissionResult] = Future()

        def record(graded: Future[SubmissionResult]) -> None:
            if graded.cancelled():
                gradebook.landed(job.key)
                recorded.cancel()
                return
            try:
                result = graded.result()
                gradebook.record(run_id, job.key, result)  # at once: a run killed later keeps it
            except Exception as exc:
                with contextlib.suppress(Exception):  # the gradebook's own failure is told by `record`
                    gradebook.landed(job.key)
                recorded.set_exception(exc)
            else:
                recorded.set_result(result)

        jobs_of[recorded] = (job, refs)
        gradebook.grading(run_id, job.key, stops.get(job.key, 0))  # before it starts: see `stopped`
        backend.submit(job, seed, refs).add_done_callback(record)
        return recorded

    def result_of(future: Future[SubmissionResult]) -> SubmissionResult | None:
        """The job's result; None where its exercise's references failed (the exercise is reported)."""
        exc = future.exception()
        if exc is None:
            return future.result()
        job, refs = jobs_of[future]
        # The grader's own failure on this one (not recorded: the next run grades it again): report it,
        # grade the others.
        message = (
            str(exc)
            if isinstance(exc, JobLost)
            else f"the grader failed on this submission (not the student's fault): {exc!r}"
        )
        try:
            held = refs.get()
        except GraderError:
            return None
        return not_runnable(job.exercise, job.student, job.path, seed, held, message, FailureKind.INTERNAL)

    jobs_of: dict[Future[SubmissionResult], tuple[Job, SharedReferences]] = {}
    running: set[Future[SubmissionResult]] = set()
    # Grading one submission makes tens of thousands of objects that live until it is judged; at the
    # default threshold (700 new objects) the collector walks each of them many times over, a sixth of
    # the grader's time. Collections that come seldom find most of them freed already. (The `grader`
    # command collects as seldom from its start; called from Python, a class run does so while it runs.)
    thresholds = gc.get_threshold()
    gc.set_threshold(max(COLLECT_EVERY, thresholds[0]), *thresholds[1:])
    try:
        while queue or running or suspects:
            while queue and len(running) < backend.slots:
                job = queue.pop(0)
                refs = references_for(job.exercise)
                if refs.failure is None:
                    running.add(submit(job, refs))
            if not queue and not running and suspects:  # alone, once every other grading is done
                job = suspects.pop(0)
                refs = references_for(job.exercise)
                if refs.failure is None:
                    running.add(submit(job, refs))
            if not running:
                continue
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                result = result_of(future)
                if result is None:
                    continue
                outcome.results.append(result)
                outcome.graded += 1
                if progress is not None:
                    progress(result)
            settle()
    except KeyboardInterrupt:
        # Nothing new starts; the gradings in flight finish (within their deadlines) and count as done.
        # A second Ctrl-C abandons them.
        outcome.interrupted = True
        backend.drain()
        wait(running)
        for future in running:
            if not future.cancelled() and future.exception() is None:
                outcome.results.append(future.result())
                outcome.graded += 1
    finally:
        backend.close()
        gc.set_threshold(*thresholds)
    gradebook.finish_run(run_id)  # ended on its own: what it left in flight did not stop it
    # A result taken from the gradebook of an exercise whose references fail now goes with it.
    broken = {exercise for exercise, refs in references.items() if refs.failure is not None}
    outcome.results = [r for r in outcome.results if r.exercise not in broken]
    outcome.results.sort(key=_table_order(jobs))
    return outcome


def _table_order(jobs: Sequence[Job]) -> Callable[[SubmissionResult], tuple[int, int]]:
    """Results by student, then exercise, in the order they were planned (as the class table shows them):
    the same whatever order the gradings finished in."""
    students = {name: rank for rank, name in enumerate(dict.fromkeys(job.student for job in jobs))}
    exercises = {name: rank for rank, name in enumerate(dict.fromkeys(job.exercise.id for job in jobs))}
    return lambda result: (students[result.student], exercises[result.exercise])


def _not_started(job: Job, seed: int, trials: int | None) -> SubmissionResult | None:
    """The result of a job with nothing to run (the hand-in cannot be used, or none of its files attempts
    the exercise: no need to start a worker to learn that), or None: it is to be graded."""
    exercise, entry = job.exercise, job.exercise.spec.entry
    count = trials or exercise.spec.trials
    if job.submission is None:
        return not_started(exercise, job.student, job.path, seed, count, job.problem)
    if not may_define(job.submission, entry):
        hint = untagged_hint(job.submission, entry)  # written, but in a cell the exercise does not grade
        message = f"not handed in: none of the files defines {entry}()" + (f"; {hint}" if hint else "")
        kind = FailureKind.NOT_SUBMITTED
        return not_started(exercise, job.student, job.path, seed, count, message, kind)
    return None


STOPPED_LIMIT = 2  # runs a hand-in may be found in flight in: once may be a bystander, twice alone is not


def _stopped_grader(job: Job, seed: int, trials: int | None, times: int) -> SubmissionResult:
    """The result of a hand-in that was being graded, the last time alone, when `times` runs died."""
    message = (
        f"grading this hand-in stopped the grader {'twice' if times == 2 else f'{times} times'} (the "
        "grader's own process died while grading it, the last time with no other hand-in in flight: "
        "killed by the system's out-of-memory killer, by a signal, or by what the hand-in returned or "
        "printed); it was not graded again. Likely cause: returns or output that exhaust the grader's "
        "memory. To grade it again, change the hand-in (a new hand-in is graded as any other), or run "
        "with another --seed"
    )
    count = trials or job.exercise.spec.trials
    return not_started(job.exercise, job.student, job.path, seed, count, message, FailureKind.INTERNAL)


def grade_job(
    job: Job, seed: int, references: References | SharedReferences, pool: WorkerPool
) -> SubmissionResult:
    """One job's result, graded in a worker from `pool`: here, or on a cluster's worker."""
    assert job.submission is not None  # an unusable hand-in is not graded: _not_started wrote its result
    return grade(job.exercise, job.submission, seed, references=references, pool=pool)
