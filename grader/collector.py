"""How seldom the garbage collector runs while the grader works: a leaf, so that the command's first step
(launch.py, before any other import) and a class run called from Python (classrun.py) share one number.

The grader makes few reference cycles and many objects that live until a submission is judged (parsed
frames, per-trial results): at Python's default of 700 new objects the collector walked them again and
again, a large part of the grader's CPU time in a `grader check` and in a class run (see
docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

COLLECT_EVERY = 100_000  # new objects between collections


def collect_seldom() -> None:
    """For the rest of the process (the `grader` command, from its first line)."""
    gc.set_threshold(COLLECT_EVERY, *gc.get_threshold()[1:])


@contextlib.contextmanager
def collecting_seldom() -> Iterator[None]:
    """While the block runs (a class run called from Python), at most as often as the command does; the
    caller's thresholds are put back after."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(COLLECT_EVERY, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
