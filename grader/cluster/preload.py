"""`dask worker ... --preload grader.cluster.preload`: the worker's warm zygotes start with it.

Without it they start when a client first registers the grader's plugin, so a cluster's first
`grader run` waits for them to import torch. With it, a cluster started ahead of grading is warm for its
first run as for the next ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.cluster.worker import start_with_worker

if TYPE_CHECKING:
    from distributed import Worker


def dask_setup(worker: Worker) -> None:
    start_with_worker(worker)
