"""One exercise's deadlines on its worker, enforced from outside.

A trial's deadlines are the worker's CPU time, which it checks itself, and a wall-clock cap several times
larger, which the read loop enforces by killing the worker (native code that never returns to Python
never sees the worker's own alarm). The read loop also counts the CPU of the worker's processes itself
(cpu_watch.py), children and threads included, against the running trial's deadline and the exercise's
budget, and kills the worker past them: a hand-in that switches the worker's alarm off, or does its work
in other processes, still meets its CPU deadline.

Each exercise a worker serves has its own: its import (the files it needs that an earlier exercise did
not import), its whole run, its first call, and its CPU budget, counted from when it began.
"""

from __future__ import annotations

import math
from typing import Literal

from grader.exercise.spec import WALL_CAP_FACTOR, Limits
from grader.sandbox import cpu_watch, failures
from grader.sandbox.pass_state import Reading
from grader.sandbox.process import KILL_GRACE_SECONDS, WorkerProcess
from grader.sandbox.protocol import Run
from grader.sandbox.report import Overrun

# CPU seconds past a call's deadline before the grader kills the worker itself: twice the worker's alarm
# tick (0.25 s), within which its own deadline stops the call with the line it was stuck on.
CPU_GRACE_SECONDS = 0.5
# How often the read loop samples the worker's CPU, at most. A sample reads /proc: 0.10 ms for a cgroup of
# one process, 4.0 ms for the scan of 104 processes where the worker has no cgroup (2026-12-03, loaded).
CPU_SAMPLE_SECONDS = 0.25


class Deadlines:
    """When the worker is killed while it serves one exercise, and what the pass then says."""

    def __init__(
        self, process: WorkerProcess, limits: Limits, started: float, cpu: cpu_watch.CpuWatch
    ) -> None:
        """`started`: when the exercise began (the worker's start for its first); `cpu` counts from then."""
        self._process = process
        self._limits = limits
        self.started = started
        self.ready_at: float | None = None  # when the exercise's functions were found (imported if need be)
        self.last_frame = started  # when the last frame arrived
        self.order: list[int] = []  # the first pass's trials, in order
        self._cpu = cpu
        self._cpu_tick = min(CPU_SAMPLE_SECONDS, limits.trial_seconds / 4)
        self.cpu_next = 0.0  # when the read loop samples the CPU next
        # The call the CPU is counted for: its pass and its place in the pass (trials answered before it),
        # the CPU used when it was first seen running, and whether the last sample was over its deadline.
        self._cpu_call: tuple[Reading, int] | None = None
        self._cpu_from = 0.0
        self._cpu_over = False

    def begin(self, started: float, cpu: cpu_watch.CpuWatch) -> None:
        """The exercise begins now, `started`, and its CPU counts from `cpu`'s start: one that is not its
        worker's first, whose deadlines and budget count from when it is sent."""
        self.started = self.last_frame = started
        self._cpu = cpu

    def allowed(self, first_call: bool) -> float:
        """The CPU seconds a call may use."""
        return self._limits.first_call_cpu_seconds if first_call else self._limits.trial_seconds

    def first_call(self, reading: Reading) -> bool:
        """Whether the call running is the exercise's first: no trial answered yet, and none after the
        first noted (results travel a few at a time, so the first may be over already)."""
        if reading.run is not Run.FIRST or reading.answered:
            return False
        noted = self._process.noted()[0]
        return noted < 0 or not self.order or noted == self.order[0]

    def running(self, reading: Reading) -> int | None:
        """The trial the worker is in: the one it last noted in the shared progress page, if still
        unanswered (results travel a few at a time, so the first unanswered one may be done already)."""
        noted = self._process.noted()[0]
        return noted if noted in reading.pending else reading.current()

    def deadline(self, reading: Reading) -> float:
        """When the worker is killed: the import's deadline, the whole run's, or the running call's wall
        cap (counted from the last frame, which the worker sends at most a batch's time before the call
        began), past the grace the worker has to stop it itself."""
        limits = self._limits
        if self.ready_at is None:
            return self.started + limits.import_seconds
        cap = WALL_CAP_FACTOR * self.allowed(self.first_call(reading))
        per_trial = self.last_frame + cap + KILL_GRACE_SECONDS
        return min(self.ready_at + limits.submission_seconds, per_trial)

    def check_cpu(self, reading: Reading, now: float) -> None:
        """Sample the CPU the worker's processes used: past the exercise's budget, or the running call
        past its deadline in two samples in a row, the pass stops and the worker is killed."""
        self.cpu_next = now + self._cpu_tick
        used = self._cpu.sample()
        limits = self._limits
        budget = limits.import_seconds + limits.submission_seconds  # as the worker's RLIMIT_CPU
        if used > budget + CPU_GRACE_SECONDS:
            reading.stopped = failures.run_timed_out(limits, self.running(reading))
            self._process.kill()
            return
        trial = self.running(reading)
        if self.ready_at is None or trial is None:
            self._cpu_call = None
            return
        # Its place in the pass: how many trials were answered. The page that names the running trial is the
        # student's to write (later trial numbers written there would start a fresh count with every
        # write), so a call's count starts again only when a result arrives; a result travels at most
        # the worker's batching late (worker/channel.py: _BATCH_SECONDS), which the count may hold too.
        place = len(reading.outputs) + len(reading.failures)
        call = self._cpu_call
        if call is None or call[0] is not reading or place > call[1]:
            self._cpu_call, self._cpu_from, self._cpu_over = (reading, place), used, False
            return
        first_call = self.first_call(reading)
        allowed = self.allowed(first_call)
        spent = used - self._cpu_from
        over = spent > allowed + CPU_GRACE_SECONDS
        if over and self._cpu_over:
            overrun = Overrun(trial, "cpu", allowed, spent, first_call, stopped=False)
            reading.stopped = failures.overran(overrun)
            reading.overrun = None if reading.run is not Run.FIRST else overrun
            self._process.kill()
        self._cpu_over = over

    def cpu_spent(self, reading: Reading, trial: int) -> float:
        """The CPU the grader counted for the running call, `trial`, until now (0 if not counted)."""
        call = self._cpu_call
        if call is None or call[0] is not reading or trial not in reading.pending:
            return 0.0
        if call[1] != len(reading.outputs) + len(reading.failures):
            return 0.0
        return max(self._cpu.sample() - self._cpu_from, 0.0)

    def time_out(self, reading: Reading, now: float) -> None:
        """A deadline of `deadline` has passed: the pass stops, and says which."""
        limits = self._limits
        trial = self.running(reading)
        if self.ready_at is None:
            reading.stopped = failures.import_timed_out(limits)
        elif trial is None or now >= self.ready_at + limits.submission_seconds:
            reading.stopped = failures.run_timed_out(limits, trial)
        else:
            noted_trial, cpu = self._process.noted()
            # The page is the worker's, so the student's to write: only ever words in its own message.
            cpu = cpu if noted_trial == trial and math.isfinite(cpu) and cpu >= 0 else 0.0
            # What the grader counted itself, where more: the worker's note misses its children, and a
            # hand-in that blocks the worker's alarm stops the notes.
            cpu = max(cpu, self.cpu_spent(reading, trial))
            first_call = self.first_call(reading)
            allowed = self.allowed(first_call)
            deadline: Literal["cpu", "wall"] = "cpu" if cpu > allowed else "wall"
            overrun = Overrun(trial, deadline, allowed, cpu, first_call, stopped=False)
            reading.stopped = failures.overran(overrun)
            reading.overrun = None if reading.run is not Run.FIRST else overrun
