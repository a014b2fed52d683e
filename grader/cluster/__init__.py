"""Grading a class on a Dask cluster (`grader run --cluster`): an optional extra,
`pip install gradient-grader[dask]`.

The client (backend.py) plans, computes each exercise's references once and shares them with every
worker, and records each result in the gradebook as it arrives; each Dask worker process (worker.py)
keeps its own warm zygotes and grades one job per thread under its machine's isolation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.errors import UsageError

if TYPE_CHECKING:
    from grader.cluster.backend import DaskBackend


def connect(address: str) -> DaskBackend:
    """A backend on the cluster at `address`: a scheduler's `tcp://HOST:PORT`, or `local:N` for a
    LocalCluster of N worker processes started here (and stopped with the backend)."""
    try:
        import distributed  # noqa: F401 - only to tell a missing extra from any other failure
    except ImportError as exc:
        raise UsageError(
            f"--cluster {address}: Dask is not installed in this environment ({exc}); "
            "install the extra with `pip install gradient-grader[dask]`, or grade here without --cluster"
        ) from exc
    from grader.cluster.backend import DaskBackend

    return DaskBackend.connect(address)
