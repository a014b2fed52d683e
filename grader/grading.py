"""Grade one submission on one exercise, step by step, each step a value for the next:

    hand-in → prepared files → worker started → trials and references, and the trials of the autograd
    check → first pass (carried on by a fresh worker where a trial's deadline stopped it) → rerun plan
    (the checked trials run once more as they first ran) → reruns → worker closed → the checked trials
    in a checked worker of their own (judging/provenance.py) → judged result

and one student's hand-in on several exercises (`grade_file`: a layers.py that defines the functions of
twelve), in one worker per hand-in: its files imported once, then each exercise graded as above in turn.

Nothing here decides a verdict: that is the judging modules' (grader/judging/).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from grader.errors import GraderError
from grader.exercise import reference_cache
from grader.exercise.expected import DeferredSpreads
from grader.exercise.settings import OnMiss, Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.sources import find_references
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial, student_seed
from grader.handin.prepare import Prepared, Submission, prepare
from grader.judging import provenance, settling
from grader.judging.judge import judge, not_run
from grader.judging.reruns.plan import RerunPlan, plan_reruns
from grader.outcomes import Failure, FailureKind
from grader.results import SubmissionResult
from grader.sandbox import course_view, isolation, torch_use
from grader.sandbox.report import Pass, RerunRequest, WorkerReport
from grader.sandbox.runner import HandinWorker, RunningWorker
from grader.sandbox.warm import WorkerPool, shared_pool
from grader.sandbox.zygote_references import computed_all_in_zygote, spreads_filled

if TYPE_CHECKING:
    from grader.exercise.reference import References


class Runner(Protocol):
    """What runs the student's code: a sandboxed worker (RunningWorker), or the student's own Python
    process for the functions a notebook hands in (in_process.InProcessRunner)."""

    def send(self, trials: Sequence[Trial]) -> None: ...

    def first_pass(self) -> Pass: ...

    def rerun(self, request: RerunRequest) -> WorkerReport: ...

    def report(self) -> WorkerReport: ...

    def close(self) -> None: ...


# Starts a runner: from the student's seed (trials.student_seed), and the report of an earlier runner
# whose first pass a trial's deadline stopped (None for the first), which it runs on from.
StartRunner = Callable[[int, WorkerReport | None], Runner]
# Starts the autograd check's worker (judging/provenance.py), from the student's seed; None where the
# runner has none (the student's own process: grader.check in a notebook).
StartChecked = Callable[[int], Runner] | None
# An exercise's references for `grade_file`: None to take them from the cache (computed on a miss).
ReferencesFor = Callable[[Exercise], "References | SharedReferences | None"]


def grade(
    exercise: Exercise,
    submission: Submission,
    settings: Settings,
    references: References | SharedReferences | None = None,
    inputs_as: str | None = None,
    pool: WorkerPool | None = None,
    start: StartRunner | None = None,
) -> SubmissionResult:
    """Grade under `settings`; pass `references` (from compute_references, or a class's SharedReferences,
    computed here if no grading has yet) to share them across submissions, else they come from the
    settings' cache (reference_cache.py), computed on a miss while the worker runs the trials.

    `inputs_as="float32"` hands the code float32 inputs: how validation checks a solution's float32 variant.
    The worker comes from `pool`, by default the process's shared pool of warm workers; `start` runs the
    code otherwise (the submission's files are then not run).
    """
    handin = prepare(submission)

    def sandboxed(student: int, after: WorkerReport | None) -> Runner:
        return RunningWorker(exercise, handin, inputs_as, pool, student, after=after)

    def checked(student: int) -> Runner:
        return RunningWorker(exercise, handin, inputs_as, pool, student, checked=True)

    ordinary = _ordinary(exercise, submission, handin, settings, references, start or sandboxed)
    return _judged(ordinary, _checked(ordinary, checked if start is None else None))


def grade_file(
    handed: Sequence[tuple[Exercise, Submission]],
    settings: Settings,
    references_for: ReferencesFor | None = None,
    pool: WorkerPool | None = None,
) -> list[SubmissionResult]:
    """Grade one student's hand-in on several exercises, each result as `grade` gives it alone, in the
    order of `handed` (each exercise with the hand-in as discovered for it: its entry's file first).

    One worker per hand-in: its files imported once, then every exercise's trials and reruns in turn,
    each under its own deadlines, seed, checked trials and budgets. An exercise that crashes the worker,
    overruns a deadline or otherwise ends it is graded as alone (a trial's overrun run on in a fresh
    worker, once), and the exercises after it go on in a fresh worker, which imports the files again. What
    the exercises share is what one student's file shares anyway: module state, set by one exercise's calls
    and seen by the next's. Exercises whose files differ (a notebook's cells chosen per exercise) or that
    differ in the limits of a process or their support files get a worker each.
    """
    results = dict(iter_grade_file(handed, settings, references_for, pool))
    return [results[number] for number in range(len(handed))]


def iter_grade_file(
    handed: Sequence[tuple[Exercise, Submission]],
    settings: Settings,
    references_for: ReferencesFor | None = None,
    pool: WorkerPool | None = None,
) -> Iterator[tuple[int, SubmissionResult]]:
    """`grade_file`'s results as each is judged, with its place in `handed`: the exercises one worker
    serves in their order, one worker after the other (a worker holds one of the pool's slots)."""
    prepared = [prepare(submission) for _, submission in handed]
    groups: dict[Hashable, list[int]] = {}
    for number, (exercise, _) in enumerate(handed):
        groups.setdefault(_worker_key(exercise, prepared[number]), []).append(number)
    for numbers in groups.values():
        exercises = [handed[n][0] for n in numbers]
        ordinary: list[_Ordinary] = []
        worker = HandinWorker(prepared[numbers[0]], exercises, pool)
        try:
            for number in numbers:
                exercise, submission = handed[number]
                references = references_for(exercise) if references_for is not None else None
                start = _starter(worker, exercise)
                run = (settings, references, start)
                ordinary.append(_ordinary(exercise, submission, prepared[number], *run))
        finally:
            worker.close()  # before the checked worker: it takes the same slot, after the zygote's clean-up
        # The autograd check's worker, one for the hand-in's exercises with checked trials, fresh from the
        # zygote: it never saw the ordinary run (judging/provenance.py).
        checked = [o for o in ordinary if o.checks]
        checker = HandinWorker(prepared[numbers[0]], [o.exercise for o in checked], pool, checked=True)
        try:
            for number, done in zip(numbers, ordinary, strict=True):
                yield number, _judged(done, _checked(done, _checked_starter(checker, done.exercise)))
        finally:
            checker.close()


def references_first(
    exercises: Sequence[Exercise], settings: Settings, pool: WorkerPool | None = None, deferred: bool = False
) -> ReferencesFor:
    """The exercises' references for a grading about to start (`grader check`), by exercise: those the
    cache lacks computed now, all in one fork of a warm zygote of `pool` (the shared pool by default),
    before that zygote serves the hand-in's worker; the grader's own process never imports torch then.
    Those the fork could not compute are computed here by the first grading that asks; an exercise whose
    trials cannot be drawn is left out (its grading finds out again, and says why). Where every exercise's
    are stored, they are read in a thread, in order, while the worker runs the exercises before.

    `deferred` (a hand-in whose worker has no torch): the fork computes the expected values alone, in a
    zygote of its own that has torch, and the spreads are computed there where judging needs them
    (judging/settling.py); so are those of references a cold check stored with some spreads only."""
    chosen = pool or shared_pool()
    if all(_at_hand(exercise, settings) for exercise in exercises):
        return _read_ahead(exercises, settings, chosen)
    found = {e.id: shared for e in exercises if (shared := _found(e, settings, chosen)) is not None}
    missing = [shared for shared in found.values() if not shared.ready]
    if missing:
        try:
            zygote = chosen.acquire(references=deferred)
        except Exception:  # a sandbox that cannot start: computed here; the grading reports the sandbox
            return lambda exercise: found.get(exercise.id)
        asked = [(shared.exercise, settings.seed, shared.trials) for shared in missing]
        computed_all = computed_all_in_zygote(chosen, zygote, settings.cache, asked, deferred)
        for shared, computed in zip(missing, computed_all, strict=True):
            if computed is not None:
                shared.try_first(partial(_given, computed))
    return lambda exercise: found.get(exercise.id)


def sandbox_ahead(handed: Sequence[tuple[Exercise, Submission]], pool: WorkerPool | None = None) -> None:
    """Make, in a thread, what the first workers of these hand-ins will ask for once the grader is ready
    to start them: their views of the installed packages (course_view.py), laid out in the idle
    zygotes' slots. Only a saving: a worker makes what is not ready when it starts."""
    if isolation.current().walls is isolation.Walls.NONE:
        return
    chosen = pool or shared_pool()

    def make() -> None:
        with contextlib.suppress(Exception):  # a worker's own start reports what fails here
            seen: set[tuple[str, ...]] = set()
            for exercise, submission in handed:  # a course's exercises share their view: its first's
                if exercise.allowed_distributions not in seen:
                    seen.add(exercise.allowed_distributions)
                    torch = torch_use.needed(prepare(submission), [exercise])
                    chosen.stage_ahead(course_view.view_for(exercise.allowed_distributions, torch=torch))

    threading.Thread(target=make, name="grader-sandbox-ahead", daemon=True).start()


def _at_hand(exercise: Exercise, settings: Settings) -> bool:
    count = settings.trial_count(exercise)
    return reference_cache.at_hand(settings.cache, exercise, settings.seed, count, settings.only_trial)


def _read_ahead(exercises: Sequence[Exercise], settings: Settings, pool: WorkerPool) -> ReferencesFor:
    """Stored references read in a thread, in the exercises' order, each handed out once read: reading
    A2's twelve (17 MB, their HMACs, 10,500 trials) took 0.2 s, before the worker's first trial; now
    beside the trials of the exercises before (hashlib and numpy's copies leave the GIL)."""
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grader-references")
    reads = {exercise.id: reader.submit(_found, exercise, settings, pool) for exercise in exercises}
    reader.shutdown(wait=False)

    def read(exercise: Exercise) -> SharedReferences | None:
        pending = reads.get(exercise.id)
        return None if pending is None else pending.result()

    return read


def _found(exercise: Exercise, settings: Settings, pool: WorkerPool) -> SharedReferences | None:
    """find_references, or None where it raises: the grading finds out again, and says why. Stored
    references whose spreads a cold check left deferred compute them in `pool`'s zygotes."""
    try:
        found = find_references(exercise, settings, partial=True)
    except GraderError:
        return None
    held = found.stored
    refused = settings.cache.on_miss is OnMiss.REFUSE  # told so by what reference_cache attached
    if held is not None and isinstance(held.spread, DeferredSpreads) and not refused:
        held.spread.attach(spreads_filled(pool, exercise, held.trials, held.expected))
    return found


def _given(references: References, *_: object) -> References:
    return references


def _starter(worker: HandinWorker, exercise: Exercise) -> StartRunner:
    def start(student: int, after: WorkerReport | None) -> Runner:
        return worker.start(exercise, None, student, after)

    return start


def _checked_starter(worker: HandinWorker, exercise: Exercise) -> StartChecked:
    def start(student: int) -> Runner:
        return worker.start(exercise, None, student, None)

    return start


def _worker_key(exercise: Exercise, handin: Prepared) -> Hashable:
    """What exercises must share to be served by one worker: the files it imports, what a process is
    allowed (its memory, files and processes, whether it may start others), and the support files beside
    the hand-in."""
    limits = exercise.spec.limits
    support = tuple(str(path.resolve()) for path in exercise.support_paths)
    return (
        handin.files,
        handin.imports,
        (limits.memory_mb, limits.file_mb, limits.open_files, limits.processes),
        support,
        exercise.allowed_modules,  # what the worker lets student code import, set once per worker
        exercise.allows_subprocesses,  # the seccomp filter, installed once per worker and for good
    )


@dataclass(frozen=True)
class _Ordinary:
    """An exercise's ordinary run, done: what judging it and its autograd check need."""

    exercise: Exercise
    submission: Submission
    handin: Prepared
    settings: Settings
    student: int
    references: References
    report: WorkerReport
    plan: RerunPlan
    checks: tuple[int, ...]  # the trials of the autograd check


def _ordinary(
    exercise: Exercise,
    submission: Submission,
    handin: Prepared,
    settings: Settings,
    references: References | SharedReferences | None,
    start: StartRunner,
) -> _Ordinary:
    """The ordinary worker's run: every trial (the checked ones as plain trials: the worker is told
    nothing of them), then the reruns, the checked trials among them once more as they first ran."""
    student = student_seed(exercise, settings.seed)
    # First: its start-up overlaps ours.
    worker = start(student, None)
    try:
        if references is None:
            references = find_references(exercise, settings)
        # Drawn from the seed (secret in every grading that counts); never sent to this worker.
        checks = provenance.pick_checks(exercise, references.trials, settings.seed, settings.only_trial)
        worker.send(references.trials)
        if isinstance(references, SharedReferences):
            references = references.get()  # after the send: computing them imports torch
        first = worker.first_pass()
        if first.torch_wanted:
            # torch imported under a name built from pieces, in a worker without it: the hand-in runs
            # again, from its import, in one with torch (the autograd check's too).
            torch_use.asked_for(handin)
            worker.close()
            worker = start(student, None)
            worker.send(references.trials)
            first = worker.first_pass()
        if first.overrun is not None:
            # A trial past its deadline may be the machine's load, not the code: a fresh worker runs the
            # trials on from it, once. Closed first: the pool may have no other slot to give.
            earlier = worker.report()
            worker.close()
            worker = start(student, earlier)
            worker.send(references.trials)
            first = worker.first_pass()
        references = _settled(exercise, references, first, checks, settings)
        plan = plan_reruns(exercise, references, first)
        report = worker.rerun(provenance.with_again(plan.request, checks, first))
        report = report.relocated(handin.relocated)
        report = replace(report, failed_cells=tuple(handin.located(c) for c in report.failed_cells))
    finally:
        worker.close()
    run = (references, report, plan, checks)
    return _Ordinary(exercise, submission, handin, settings, student, *run)


def _settled(
    exercise: Exercise, references: References, first: Pass, checks: Sequence[int], settings: Settings
) -> References:
    """settling.settled's references; the spreads it computed kept in the cache for the next check."""
    spreads = references.spread
    if not isinstance(spreads, DeferredSpreads):
        return references
    before = len(spreads.known())
    judged_by = settling.settled(exercise, references, first, checks)
    if len(spreads.known()) > before:
        reference_cache.store_spreads(settings.cache, exercise, settings.seed, references)
    return judged_by


def _checked(done: _Ordinary, start: StartChecked) -> provenance.Checks:
    """The checked trials run again in the checked worker, started by `start` after the ordinary one
    closed; a trial's deadline overrun there is run once more in a fresh one (the machine's load)."""
    if not done.checks:
        return provenance.Checks(())
    references = provenance.restricted(done.references, done.checks)
    ordinary = done.report.first.restricted(frozenset(done.checks))
    if start is None:
        return provenance.Checks(done.checks, references, ordinary, run=provenance.CheckRun.NOT_HERE)
    if done.report.first.stopped is not None:
        # Every return errs already: a checked run could only spend the hand-in's CPU again (a call that
        # burns to its deadline would burn a third time there).
        return provenance.Checks(done.checks, references, ordinary, run=provenance.CheckRun.NEEDLESS)
    trials = provenance.checked_trials(done.references.trials, done.checks)
    first = Pass()
    for _ in range(2):
        worker = start(done.student)
        try:
            worker.send(trials)
            first = worker.first_pass()
            if first.overrun is None:
                # Its last word, read so that a hand-in's checked worker may serve the next exercise.
                first = worker.rerun(RerunRequest()).first
                break
        finally:
            worker.close()
    first = first.relocated(done.handin.relocated)
    return provenance.Checks(done.checks, references, ordinary, done.report.again, first)


def _judged(done: _Ordinary, checks: provenance.Checks) -> SubmissionResult:
    return judge(
        done.exercise,
        done.submission,
        done.settings.seed,
        done.references,
        done.report,
        done.plan,
        done.settings.only_trial,
        checks,
    )


def not_runnable(
    exercise: Exercise,
    student: str,
    path: Path,
    settings: Settings,
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
    return judge(exercise, Submission(student, path, ()), settings.seed, references, report, plan)


def not_started(
    exercise: Exercise,
    student: str,
    path: Path,
    settings: Settings,
    message: str,
    kind: FailureKind = FailureKind.MISSING_FUNCTION,
) -> SubmissionResult:
    """`not_runnable`'s result without its references, nor a look at each of the settings' trials: for
    what nobody handed in, at no cost (no failing case is named: nothing ran)."""
    handin, failure = Submission(student, path, ()), Failure(kind, message)
    trials = settings.trial_count(exercise)
    return not_run(exercise, handin, settings.seed, trials, failure, isolation.current().used())
