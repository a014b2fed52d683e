"""A class run's backend on this machine (`grader run` without --cluster): `workers` threads, each
grading one job at a time in warm workers of one pool, whose zygotes the command may have started before
its own imports (launch.py). Its Dask counterpart is grader/cluster/.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

from grader.errors import GraderError
from grader.exercise.settings import Settings
from grader.exercise.shared import SharedReferences
from grader.jobs import Job, TaskResult, grade_job
from grader.sandbox.warm import WorkerPool, started_shared_pool
from grader.sandbox.zygote_references import computed_in_zygote


class LocalBackend:
    """This machine: `workers` threads, each grading one job at a time in warm workers."""

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
        try:
            zygote = self._workers.acquire()
        except Exception:  # a sandbox that cannot start: computed here; each grading reports the sandbox
            return
        references.try_first(partial(computed_in_zygote, self._workers, zygote))

        def compute() -> None:
            with contextlib.suppress(GraderError):  # told by every grading that asks for them
                references.get()

        threading.Thread(target=compute, name=f"references of {references.exercise.id}", daemon=True).start()

    def submit(
        self, job: Job, settings: Settings, references: Mapping[str, SharedReferences]
    ) -> Future[tuple[TaskResult, ...]]:
        return self._threads.submit(grade_job, job, settings, references, self._workers)

    def drain(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._workers.close()
