"""The worker's resource limits."""

from __future__ import annotations

import contextlib
import resource
from typing import Any


def apply_limits(limits: dict[str, Any]) -> None:
    """The hand-in's limits, for the life of the worker: its `cpu_seconds` are those of every exercise it
    may serve together (the hard limit, which only goes down); each exercise lowers the soft limit to its
    own (`exercise_cpu`)."""

    def cap(which: int, value: int) -> None:
        # A limit the platform does not support is skipped: the parent's deadlines still hold.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_CORE, 0)
    # No POSIX message queue: outside a sandbox of its own one would outlive the job, unlisted (Landlock
    # refuses to open it, but not to create it).
    cap(resource.RLIMIT_MSGQUEUE, 0)
    cap(resource.RLIMIT_AS, int(limits["memory_mb"]) << 20)
    cap(resource.RLIMIT_FSIZE, int(limits["file_mb"]) << 20)
    cap(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    if limits["processes"] is not None:  # sent only where the kernel counts this sandbox alone
        cap(resource.RLIMIT_NPROC, int(limits["processes"]))
    cpu = int(limits["cpu_seconds"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def exercise_cpu(seconds: float) -> None:
    """The CPU an exercise may use from now on, on top of what the worker used before it (the import,
    earlier exercises): the soft limit, whose SIGXCPU ends the worker. A backstop only: the grader counts
    each exercise's CPU from outside (cpu_watch.py), where the student cannot raise a limit."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = int(used + seconds) + 1
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard - 1), hard))
