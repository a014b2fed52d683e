"""The `grader` command's first step: for `check` and `repro`, the sandboxed worker's zygote starts
before anything else is imported, so that its import of torch (the longest step of a check) overlaps the
grader's own imports (pydantic, yaml, rich: a few hundred milliseconds) and its loading of the exercise.
"""

from __future__ import annotations

import contextlib
import sys


def entry() -> None:
    if sys.argv[1:2] in (["check"], ["repro"]):
        from grader.sandbox.warm import shared_pool

        # A sandbox that cannot start fails again when the check needs it, where the error is reported.
        with contextlib.suppress(Exception):
            shared_pool().prestart(1)
    from grader.cli import entry as command

    command()
