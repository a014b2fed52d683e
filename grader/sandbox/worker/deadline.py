"""A call's deadlines, watched by the worker itself."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from types import FrameType

_DEADLINE_TICK = 0.25  # seconds between checks of the running call's deadlines


class TrialTimeout(BaseException):
    """Raised in student code at a trial's deadline; a BaseException, so `except Exception` won't eat it.

    `deadline` says which passed: "cpu" (the call's CPU deadline) or "wall" (its wall-clock cap).
    """

    def __init__(self, deadline: str = "cpu") -> None:
        super().__init__(deadline)
        self.deadline = deadline


class _Deadline:
    """The running call's deadlines, checked a few times a second by a SIGALRM that repeats for the whole
    run (arming a timer around every trial cost two system calls per trial).

    A call may use `trial_seconds` of the process's CPU time (all its threads), `first_call_seconds` for
    the first call after the import, which pays the lazy imports of what the code uses: CPU time, since a
    loaded machine stretches the wall time of correct code. Its wall time is capped at `wall_cap_factor`
    times that, so that code that sleeps or waits ends too, and is told where it waited. Native code that
    never returns to Python never sees the alarm: the grader kills it at the wall cap from outside.
    """

    def __init__(self) -> None:
        self.first_call = True  # the next call is the exercise's first since the import
        self._trial_seconds = self._first_call_seconds = self._wall_cap_factor = 0.0
        self._note: Callable[[float], None] = lambda seconds: None
        self._cpu_start = 0.0
        self._cpu_until: float | None = None  # None between calls, where the alarm does nothing
        self._wall_until = 0.0

    def watch(self, deadlines: dict[str, float], note: Callable[[float], None]) -> None:
        """Start the alarm for an exercise's calls (again for each: the one before may have changed the
        handler); `note` is told the running call's CPU seconds at every check. The exercise's first call
        has the first call's deadline: it pays the lazy imports of what its functions use."""
        self.first_call = True
        self._trial_seconds = float(deadlines["trial_seconds"])
        self._first_call_seconds = float(deadlines["first_call_seconds"])
        self._wall_cap_factor = float(deadlines["wall_cap_factor"])
        self._note = note
        signal.signal(signal.SIGALRM, self._on_alarm)
        tick = min(_DEADLINE_TICK, self._trial_seconds / 4)
        signal.setitimer(signal.ITIMER_REAL, tick, tick)

    def start(self) -> None:
        """A call begins: its deadlines run from now."""
        allowed = self._first_call_seconds if self.first_call else self._trial_seconds
        self._wall_until = time.monotonic() + self._wall_cap_factor * allowed
        self._cpu_start = time.process_time()
        self._cpu_until = self._cpu_start + allowed

    def stop(self) -> None:
        """The call is over (returned or raised): the alarm does nothing until the next one."""
        self._cpu_until = None
        self.first_call = False

    def used(self) -> float:
        """The CPU seconds the call that is running, or the last one, has used."""
        return time.process_time() - self._cpu_start

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self._cpu_until is None:
            return
        cpu = time.process_time()
        self._note(cpu - self._cpu_start)
        if cpu >= self._cpu_until:
            passed = "cpu"
        elif time.monotonic() >= self._wall_until:
            passed = "wall"
        else:
            return
        self._cpu_until = None
        raise TrialTimeout(passed)


DEADLINE = _Deadline()
