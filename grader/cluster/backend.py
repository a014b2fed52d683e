"""The client's side of a Dask cluster: jobs submitted, references shared, results handed back.

Each exercise's references are computed once, on this machine before its first job is submitted, and
sent to the cluster once, as a task that returns them; each job then names that task, so a worker fetches
them once (from a peer that has them), and a worker lost with them has them made again from the task
(scattered data could not be). A job travels whole: its exercise's spec and its submission's files
(their bytes, read here); a worker reads only the exercise's support files, at the same path.
A worker that dies mid-job has its job run again on another by Dask's scheduler; a job that kills every
worker that runs it (distributed.scheduler.allowed-failures + 1 of them) ends as that student's error.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import signal
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

import distributed
from distributed.scheduler import KilledWorker

from grader.cluster.worker import PLUGIN, WarmWorkers, describe, grade_on_worker, grader_identity
from grader.errors import GraderError, UsageError
from grader.jobs import Job, JobLost, TaskResult, Unfinished

if TYPE_CHECKING:
    from grader.exercise.reference import References
    from grader.exercise.settings import Settings
    from grader.exercise.shared import SharedReferences

Pending = concurrent.futures.Future[tuple[TaskResult, ...]]
LOCAL = "local:"
CONNECT_SECONDS = 30
COUNT_EVERY = 1.0  # seconds between counts of the cluster's worker threads


class DaskBackend:
    """A class run's Backend (jobs.Backend) on a Dask cluster, one job per worker thread at a time."""

    def __init__(self, client: distributed.Client, cluster: distributed.LocalCluster | None) -> None:
        self._client = client
        self._cluster = cluster  # started for this run: stopped with it
        self._shared: dict[int, tuple[SharedReferences, distributed.Future[References]]] = {}
        self._tasks: dict[Pending, distributed.Future[tuple[TaskResult, ...]]] = {}
        self._slots, self._counted = 1, -math.inf
        self._identity = grader_identity()
        try:
            _check_workers(client, self._identity)
        except UsageError:
            client.close()
            if cluster is not None:
                cluster.close()
            raise
        if hasattr(client, "register_plugin"):  # since Dask 2023.9
            client.register_plugin(WarmWorkers(), name=PLUGIN)
        else:
            client.register_worker_plugin(WarmWorkers(), name=PLUGIN)  # type: ignore[attr-defined]

    @classmethod
    def connect(cls, address: str) -> DaskBackend:
        if address.startswith(LOCAL):
            count = address.removeprefix(LOCAL)
            if not count.isdigit() or int(count) < 1:
                raise UsageError(f"--cluster {address} is not local:N with N workers, 1 or more")
            # Started with Ctrl-C ignored, which they inherit: a terminal's Ctrl-C reaches the whole
            # process group, and this run's workers must finish the gradings in flight, not die with them.
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                cluster = distributed.LocalCluster(
                    n_workers=int(count),
                    processes=True,
                    threads_per_worker=1,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,  # a lost worker is told in its job's result
                )
            finally:
                signal.signal(signal.SIGINT, previous)
            return cls(distributed.Client(cluster), cluster)
        try:
            client = distributed.Client(address, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as exc:
            raise UsageError(
                f"--cluster {address}: no Dask scheduler answered there within {CONNECT_SECONDS} s "
                f"({exc}); start one (`dask scheduler`, README 'On a Dask cluster') and pass the address "
                "it prints, tcp://HOST:PORT, or use --cluster local:N"
            ) from exc
        return cls(client, None)

    @property
    def slots(self) -> int:
        # Asked again each second: workers may join (a batch job starting) or leave during the run.
        now = time.monotonic()
        if now - self._counted >= COUNT_EVERY:
            threads: dict[str, int] = self._client.nthreads()
            self._slots, self._counted = max(1, sum(threads.values())), now
        return self._slots

    def prestart(self, count: int) -> None:
        """Nothing to do: each worker's plugin started its zygotes when it was installed."""

    def share(self, references: SharedReferences) -> None:
        """Nothing to do: the first job's submit computes them, here."""

    def submit(self, job: Job, settings: Settings, references: Mapping[str, SharedReferences]) -> Pending:
        result: Pending = concurrent.futures.Future()
        held = {
            exercise: task
            for exercise, task in ((e, self._sent(shared)) for e, shared in references.items())
            if task is not None
        }
        sent = job.only(held)
        if not sent.tasks:
            result.set_result(tuple(_BROKEN for _ in job.tasks))
            return result
        # The settings travel pickled, the reference cache's place with them: a worker reads no setting
        # of the client's from its own environment.
        task = self._client.submit(grade_on_worker, sent, settings, held, self._identity, pure=False)
        self._tasks[result] = task
        task.add_done_callback(lambda done: _settle(result, done, job, sent))
        return result

    def _sent(self, references: SharedReferences) -> distributed.Future[References] | None:
        """The cluster's task that holds an exercise's references, made by its first job (they are computed
        here, once); None where they fail (its graph, on its own inputs: the class run reports it)."""
        shared = self._shared.get(id(references))
        if shared is None:
            try:
                computed = references.get()
            except GraderError:
                return None
            shared = self._shared[id(references)] = (
                references,
                self._client.submit(_given, computed, pure=False, key=f"references-{uuid.uuid4().hex}"),
            )
        return shared[1]

    def drain(self) -> None:
        """Nothing to cancel: the scheduler holds no more jobs than the workers run."""

    def close(self) -> None:
        unfinished = [task for future, task in self._tasks.items() if not future.done()]
        with contextlib.suppress(Exception):  # a scheduler already gone has nothing left to cancel
            self._client.cancel(unfinished)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def _check_workers(client: distributed.Client, mine: dict[str, str]) -> None:
    """Every worker of the cluster runs this client's grader: another would grade by other rules, or fail
    to read the jobs. Refused before anything is graded, naming each worker that differs."""
    try:
        theirs: dict[str, dict[str, str]] = client.run(grader_identity)
    except Exception as exc:  # a worker without the grader cannot even load the check
        raise UsageError(
            f"--cluster: a Dask worker could not run this client's grader ({type(exc).__name__}: {exc}); "
            "install the same grader on every worker (`pip install gradient-grader[dask]` in its "
            "environment), "
            "then run the same command again"
        ) from exc
    others = {address: identity for address, identity in theirs.items() if identity["code"] != mine["code"]}
    if not others:
        return
    listed = "; ".join(f"{address} runs {describe(identity)}" for address, identity in sorted(others.items()))
    raise UsageError(
        f"--cluster: {len(others)} of the cluster's {len(theirs)} Dask workers run another grader than this "
        f"client's {describe(mine)}: {listed}. Install the same grader on every worker (the same version, "
        "or the same checkout at the same commit), or stop those workers, then run the same command again"
    )


def _given(references: References) -> References:
    return references


# A task whose exercise's references fail: the class run finds out from them, and reports the exercise.
_BROKEN = Unfinished("the exercise's references could not be computed")


def _settle(result: Pending, done: distributed.Future[tuple[TaskResult, ...]], job: Job, sent: Job) -> None:
    """Hand the Dask task's end to the class run's future (on the client's callback thread): one outcome per
    task of `job`, of which those `sent` to the cluster."""
    if done.cancelled():  # by the scheduler (this client cancels only once nobody waits any more)
        result.set_exception(JobLost(_dropped(job)))
        return
    try:
        graded = {t.exercise.id: end for t, end in zip(sent.tasks, done.result(), strict=True)}
    except KilledWorker as exc:
        result.set_exception(JobLost(_killed(job, exc)))
    except Exception as exc:
        result.set_exception(exc)
    else:
        result.set_result(tuple(graded.get(task.exercise.id, _BROKEN) for task in job.tasks))


def _dropped(job: Job) -> str:
    return (
        f"{job.path}: the Dask cluster cancelled grading this hand-in on {_exercises(job)} before it "
        "finished (its scheduler restarted, or what the job needed was lost with a worker); nothing is "
        "wrong with the hand-in: run the same command again to grade it"
    )


def _killed(job: Job, exc: KilledWorker) -> str:
    tries = getattr(exc, "allowed_failures", None)
    count = (
        "every Dask worker that tried it"
        if not isinstance(tries, int)
        else ("the Dask worker that tried it" if tries == 0 else f"{tries + 1} Dask workers")
    )
    return (
        f"{job.path}: {count} died while grading this hand-in on {_exercises(job)}, so the cluster "
        "stopped trying (distributed.scheduler.allowed-failures). Likely cause: the hand-in exhausts the "
        "worker's memory or kills its process, or the workers were stopped meanwhile. Grade it alone "
        f"here to see what it does: grader check {job.tasks[0].exercise.root} {job.path}"
    )


def _exercises(job: Job) -> str:
    return ", ".join(task.exercise.id for task in job.tasks)
