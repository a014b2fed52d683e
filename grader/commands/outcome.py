"""How a command ended: what its exit code is chosen from, by `cli.main` alone."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum


class Outcome(Enum):
    PASSED = "passed"  # everything graded or checked passed; or the command did what it was asked
    FAILED = "failed"  # something graded or checked failed
    BROKEN = "broken"  # an input could not be used (a spec, a pool's reference): the rest was done
    INTERRUPTED = "interrupted"  # stopped by the user; the same command again finishes the work

    @staticmethod
    def of(passed: Iterable[bool], broken: bool = False) -> Outcome:
        """A broken input first (the work is incomplete), then whether everything passed."""
        if broken:
            return Outcome.BROKEN
        return Outcome.PASSED if all(passed) else Outcome.FAILED
