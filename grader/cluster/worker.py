"""A Dask worker process's side: its warm zygotes, and the grading of one job in one of them.

The plugin is installed once per worker process (and again in a worker that restarts), and stays: a
later run on the same cluster finds its zygotes warm. Its pool is the same WorkerPool a local run uses,
under this machine's isolation (bubblewrap or the fallback), with one zygote per worker thread; the
worker's teardown stops them.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from distributed import WorkerPlugin, get_worker

import grader
from grader.jobs import Job, JobLost, TaskResult, grade_job
from grader.sandbox.warm import WorkerPool

if TYPE_CHECKING:
    from distributed import Worker

    from grader.exercise.reference import References
    from grader.exercise.settings import Settings

PLUGIN = "grader-warm-workers"


class WarmWorkers(WorkerPlugin):
    """One WorkerPool per Dask worker process, as many zygotes as it has threads, started at once."""

    name = PLUGIN
    idempotent = True  # registered again by each run: the zygotes already there are kept

    def __init__(self) -> None:
        self.pool: WorkerPool | None = None  # made on the worker: zygotes do not travel

    def setup(self, worker: Worker) -> None:
        # Zygotes the worker started with (`--preload grader.cluster.preload`) are taken over, warm.
        self.pool = _started_with_worker.pop(id(worker), None) or start_pool(worker)

    def teardown(self, worker: Worker) -> None:
        if self.pool is not None:
            self.pool.close()


def start_pool(worker: Worker) -> WorkerPool:
    """A pool of as many zygotes as the worker has threads, their start begun. Their torch imports overlap
    the client's references. This process itself imports torch only to name a mistake (diagnosis.py):
    importing it here at once cost every cold worker a torch import beside its zygotes'."""
    threads = int(worker.state.nthreads)
    pool = WorkerPool(limit=threads)
    pool.prestart(threads)
    return pool


# Pools the preload started before any client registered the plugin, by worker (its object's id: the
# address may not be known yet when the preload runs).
_started_with_worker: dict[int, WorkerPool] = {}


def start_with_worker(worker: Worker) -> None:
    """The preload's step (preload.py): the zygotes start as the worker does, for the plugin to take."""
    _started_with_worker[id(worker)] = start_pool(worker)


@functools.cache
def grader_identity() -> dict[str, str]:
    """This process's grader: its version, a hash of its modules' source (a checkout under development
    keeps its version while its code changes) and where it is installed."""
    package = Path(grader.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return {"version": grader.__version__, "code": digest.hexdigest()[:12], "where": str(package)}


def describe(identity: dict[str, str]) -> str:
    return f"grader {identity['version']} (code {identity['code']}, in {identity['where']})"


def grade_on_worker(
    job: Job, settings: Settings, references: Mapping[str, References], client: dict[str, str]
) -> tuple[TaskResult, ...]:
    """The job graded here, in this worker process's warm zygotes, by the same grader as the client's
    (`client`: its grader_identity). `references`: by exercise id, each fetched from the cluster once."""
    worker = get_worker()
    if grader_identity()["code"] != client["code"]:
        # A worker that joined after the client checked them all (backend._check_workers).
        raise JobLost(
            f"Dask worker {worker.address} runs {describe(grader_identity())}, the client "
            f"{describe(client)}: a hand-in is graded only by the grader that computed its references; "
            "install the client's grader on that worker, or stop it, and run the same command again"
        )
    plugin = worker.plugins.get(PLUGIN)
    if not isinstance(plugin, WarmWorkers) or plugin.pool is None:
        raise JobLost(
            f"Dask worker {worker.address}: the grader's plugin is not installed there, so it has no "
            "sandboxed workers to grade in; run the same command again (the client installs it on every "
            "worker it connects to)"
        )
    missing = next((t.exercise.root for t in job.tasks if not t.exercise.root.is_dir()), None)
    if missing is not None:
        # Submissions travel with the job; the exercise's support files are read where it runs.
        raise JobLost(
            f"Dask worker {worker.address}: the exercise folder {missing} is not there; every "
            "worker needs the exercises at the same path as the machine running `grader run` (README, "
            "'On a Dask cluster')"
        )
    return grade_job(job, settings, references, plugin.pool)
