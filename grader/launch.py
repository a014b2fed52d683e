"""The `grader` command's first step: for `check` and `repro`, the sandboxed worker's zygote starts
before anything else is imported, so that its import of torch (the longest step of a check) overlaps the
grader's own imports (pydantic, yaml, rich: a few hundred milliseconds) and its loading of the exercise.
"""

from __future__ import annotations

import contextlib
import gc
import sys

# New objects between garbage collections. The grader makes few reference cycles and many objects that
# live until a submission is judged (parsed frames, per-trial results): at Python's default of 700 the
# collector walked them again and again, 137 collections and a quarter of a `grader check`'s CPU time
# (graph2, 1000 trials: 205-228 ms of the grader's CPU instead of 270-331).
COLLECT_EVERY = 100_000


def entry() -> None:
    gc.set_threshold(COLLECT_EVERY, *gc.get_threshold()[1:])
    if sys.argv[1:2] in (["check"], ["repro"]):
        from grader.sandbox.warm import shared_pool

        # A sandbox that cannot start fails again when the check needs it, where the error is reported.
        with contextlib.suppress(Exception):
            shared_pool().prestart(1)
    from grader.cli import entry as command

    command()
