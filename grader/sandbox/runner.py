"""Run one submission's trials in an isolated worker process and read back what it returned.

The worker is forked for this submission alone by a warm zygote (warm.py) under the current isolation:
stdin from /dev/null, a clean environment, a scratch folder as cwd, the submission's files read-only
beside it, resource limits set before student code runs, deadlines enforced from outside, results over a
dedicated pipe (never stdout), and student output captured with a cap.

Two steps, each returning a value: `first_pass()` reads every trial's result; `rerun(request)` asks for
the reruns the grader chose from that first pass and reads them. Wording what went wrong is failures.py's.

A trial's deadlines are the worker's CPU time, which it checks itself, and a wall-clock cap several times
larger, which the read loop here enforces by killing the worker (native code that never returns to Python
never sees the worker's own alarm). The read loop also counts the CPU of the worker's processes itself
(cpu_watch.py), children and threads included, against the running trial's deadline and the submission's
budget, and kills the worker past them: a hand-in that switches the worker's alarm off, or does its work
in other processes, still meets its CPU deadline.

A first pass stopped by a trial's deadline says so (`Pass.overrun`); a worker started `after=` that
report runs the trials on from there in a fresh process (after calling the first trial again, to pay the
lazy imports as the earlier one had), and its first pass is the whole first pass: the timeout confirmed
if the same trial overruns again, gone if not.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import mmap
import os
import select
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from grader.errors import WorkerStartError
from grader.exercise.spec import WALL_CAP_FACTOR, Exercise
from grader.exercise.trials import Trial
from grader.handin.prepare import Prepared
from grader.memo import PerObject
from grader.outcomes import Failure, FailureKind
from grader.sandbox import cpu_watch, failures, isolation, warm
from grader.sandbox.isolation import ProcessLimit
from grader.sandbox.payload import (
    MESSAGE,
    Done,
    Fatal,
    PassDone,
    Ready,
    ReturnedArray,
    ReturnProblem,
    TrialFailed,
    Trials,
)
from grader.sandbox.protocol import PROGRESS, Frame, FrameDecoder, ProtocolError, Run, encode
from grader.sandbox.report import (
    Overrun,
    Pass,
    RerunRequest,
    Returned,
    ReturnItem,
    TrialOutput,
    WorkerReport,
)

KILL_GRACE_SECONDS = 1.0
# CPU seconds past a call's deadline before the grader kills the worker itself: twice the worker's alarm
# tick (0.25 s), within which its own deadline stops the call with the line it was stuck on.
CPU_GRACE_SECONDS = 0.5
# How often the read loop samples the worker's CPU, at most. A sample reads /proc: 0.10 ms for a cgroup of
# one process, 4.0 ms for the scan of 104 processes where the worker has no cgroup (2026-12-03, loaded).
CPU_SAMPLE_SECONDS = 0.25
PACE_SECONDS = 0.005  # how long small results may gather in the pipe before the grader reads them
PIPE_BYTES = 1 << 20  # Linux lets any user make a pipe this large (fs/pipe-max-size)
_DRAIN_READS = 16  # reads of what is left in the output pipes once the worker is done (each up to 1 MiB)
# The most bytes of results one hand-in may send over all its trials and reruns, counted as they arrive:
# the grader keeps every trial's returns until the hand-in is judged (judging compares them as columns),
# so this bounds what one hand-in makes the grader hold. The library's solutions send 0.61 MiB (graph2),
# 0.31 (batchnorm_backward) and 0.25 (two_layer_net) at their 1000 trials, reruns included (2026-12-03):
# 256 MiB is 400 times that, room for exercises of larger shapes. What one hand-in's results occupy in
# the grader (the arrays kept and the bytes not yet decoded) is thus at most 256 MiB, and for a moment
# twice that while a frame is decoded (its payload is copied out of the buffer once).
RETURNS_BUDGET_BYTES = 256 << 20


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.total > len(self.data):
            text += f"\n... [{self.total - len(self.data)} more bytes not shown]"
        return text


@dataclass
class _Reading:
    """The pass being read: the trials still owed, in order, and what came back so far."""

    run: Run
    pending: list[int]
    outputs: dict[int, TrialOutput] = field(default_factory=dict)
    returned: dict[str, dict[int, Returned]] = field(default_factory=dict)  # Pass.by_return, as they come
    failures: dict[int, Failure] = field(default_factory=dict)
    stopped: Failure | None = None
    overrun: Overrun | None = None  # when a trial's deadline stopped the pass
    done: bool = False  # the worker said the pass is over

    @property
    def over(self) -> bool:
        # A rerun is over at its last answer: the extended run's answers follow without a marker.
        return self.done or self.stopped is not None or (self.run is not Run.FIRST and not self.pending)

    def current(self) -> int | None:
        return self.pending[0] if self.pending else None

    @property
    def answered(self) -> bool:
        return bool(self.outputs or self.failures)

    def result(self) -> Pass:
        returned: dict[str, Mapping[int, Returned]] = dict(self.returned)
        if self.run is Run.FIRST:
            return Pass(self.outputs, self.failures, self.stopped, self.overrun, by_return=returned)
        # A rerun that ends early is no failure of the submission, whose first pass is complete: what it
        # says of its trial is kept, the rest were simply not rerun.
        stopped = self.stopped
        if stopped is not None and stopped.trial is not None:
            self.failures[stopped.trial] = stopped
        return Pass(self.outputs, self.failures, by_return=returned)


class RunningWorker:
    """A started worker: its channels (job, results, stdout, stderr, progress page) and the read loop.

    Always `close()` it (it kills the worker and everything it started, and cleans its folder).
    """

    def __init__(
        self,
        exercise: Exercise,
        handin: Prepared,
        inputs_as: str | None = None,
        pool: warm.WorkerPool | None = None,
        seed: int = 0,
        after: WorkerReport | None = None,
    ) -> None:
        """Start the worker at once (a zygote may still be importing torch while the caller prepares
        trials and references).

        `inputs_as` ("float32") hands the code its float inputs in that dtype instead of float64;
        `seed` (trials.student_seed) seeds the student's own randomness. `after`: the report of a worker
        whose first pass a trial's deadline stopped (`Pass.overrun`); this one runs the trials on from
        that one, once more, to tell the machine's load from code that never ends.
        """
        self._seed = seed
        self._earlier = after
        self._kept = after.first.before_overrun() if after is not None else Pass()
        self._exercise = exercise
        self._handin = handin
        self._inputs_as = inputs_as
        self._limits = exercise.spec.limits
        self._order: list[int] = []
        self._writer: threading.Thread | None = None
        self._started = time.monotonic()
        self._ready_at: float | None = None  # when the submission had imported
        self._import_seconds = 0.0  # how long that took, as the worker measured it
        self._skipped_imports: tuple[str, ...] = ()  # a `definitions` notebook's, for want of the module
        self._last_frame = self._started
        self._first: Pass | None = None
        self._finished = False  # the worker said it is done: it takes no rerun request
        self._process_limit = isolation.current().process_limit
        self._pool = pool or warm.shared_pool()
        self._zygote = self._pool.acquire()
        self._results = self._jobs = self._stdout = self._stderr = -1
        self._jobs_room = 0
        try:
            _stage(handin, self._zygote.slot / "submission")
            _stage_support(exercise, self._zygote.slot / "support")
            group = self._zygote.group.path if self._zygote.group is not None else None
            self._cpu = cpu_watch.CpuWatch(cpu_watch.Source(group, self._zygote.process.pid))
            self._process = self._start()
        except BaseException:
            self._pool.release(self._zygote, None)
            raise
        kept = self._limits.output_kb << 10
        self._captures = {self._stdout: _Capture(kept), self._stderr: _Capture(kept)}
        self._decoder = FrameDecoder()
        # Bytes read from the result channel, all passes together (RETURNS_BUDGET_BYTES); after an earlier
        # worker, what this one keeps of it counts too: the budget is the hand-in's, not a worker's.
        earlier = self._kept.outputs.values()
        self._received = sum(
            r.array.nbytes for o in earlier for r in o.by_name.values() if isinstance(r, Returned)
        )
        self._memory_told = False  # the hand-in's memory error was found (once is enough)
        # Frames read with the end of one pass that belong to the next (the reruns follow one another
        # without a marker): the next pass reads them first.
        self._unread: list[Frame] = []
        self._open = {self._results, self._stdout, self._stderr}
        self._cpu_tick = min(CPU_SAMPLE_SECONDS, self._limits.trial_seconds / 4)
        self._cpu_next = 0.0  # when the read loop samples the CPU next
        # The call the CPU is counted for: its pass and its place in the pass (trials answered before it),
        # the CPU used when it was first seen running, and whether the last sample was over its deadline.
        self._cpu_call: tuple[_Reading, int] | None = None
        self._cpu_from = 0.0
        self._cpu_over = False

    def send(self, trials: Sequence[Trial], checks: Sequence[int] = ()) -> None:
        """Hand the trials to the worker; a thread writes them, since the worker reads only once it is up.
        `checks`: the trials on which it changes what autograd gives (judging/provenance.py).

        After an earlier worker (`after`), the same trials: this one runs those it did not answer, after
        the first it did: the first call pays the lazy imports again, and the call that overran is judged
        under the deadline it had then."""
        order = [t.index for t in trials]
        skipped = self._skipped
        self._order = [order[0], *order[skipped:]] if skipped else order
        data = self._job_bytes(trials, checks)

        def write() -> None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._jobs, view) :]
            except OSError:
                pass  # the worker is gone; the read loop reports why

        if len(data) <= self._jobs_room:  # the empty pipe takes it all at once: no thread to start
            write()
            return
        self._writer = threading.Thread(target=write, name="grader-job-writer", daemon=True)
        self._writer.start()

    @property
    def _skipped(self) -> int:
        """How many trials, in order, an earlier worker answered before the one that overran."""
        return len(self._kept.outputs) + len(self._kept.failures)

    def first_pass(self) -> Pass:
        """Every trial's result, under the deadlines; `stopped` says why the pass ended early, if it did.

        After an earlier worker, the results of both: a timeout confirmed where the same trial overran
        again."""
        reading = _Reading(Run.FIRST, pending=list(self._order))
        self._read(reading)
        self._first = reading.result()
        if self._earlier is not None and self._earlier.first.overrun is not None:
            self._first = _ran_on(self._kept, self._earlier.first.overrun, self._first)
        return self._first

    def rerun(self, request: RerunRequest) -> WorkerReport:
        """Run `request` (trials again at float64, probes, trials again in extended precision) after a
        complete first pass; the report of every pass. After a first
        pass that stopped early, nothing more runs; after a rerun that did, nothing more of it."""
        first = self._first if self._first is not None else self.first_pass()
        passes: dict[Run, Pass] = {}
        if first.stopped is None and not self._finished:
            self._request(request)
            owed = {
                Run.FLOAT64: [*request.trials, *(p.index for p in request.probes)],
                Run.EXTENDED: list(request.extended),
            }
            for run, pending in owed.items():  # in the worker's order; after one stops, nothing more
                reading = _Reading(run, pending)
                self._read(reading)
                passes[run] = reading.result()
                if reading.stopped is not None:
                    break
        return self._report(first, passes)

    def report(self) -> WorkerReport:
        """What the worker ran so far, asking it for nothing more: after a first pass that stopped early,
        all there is (the `after` of a worker that carries on from it)."""
        return self._report(self._first if self._first is not None else self.first_pass(), {})

    def _report(self, first: Pass, passes: Mapping[Run, Pass]) -> WorkerReport:
        self._drain_output()
        stdout, stderr = self._captures[self._stdout], self._captures[self._stderr]
        report = WorkerReport(
            first=first,
            reruns=passes.get(Run.FLOAT64, Pass()),
            extended=passes.get(Run.EXTENDED, Pass()),
            stdout=stdout.text(),
            stderr=stderr.text(),
            output_bytes=stdout.total + stderr.total,
            seconds=time.monotonic() - self._started,
            import_seconds=self._import_seconds,
            skipped_imports=self._skipped_imports,
        )
        return report if self._earlier is None else report.after(self._earlier)

    def close(self) -> None:
        """Kill the worker and everything it started, and remove its files; safe to call again."""
        if self._results < 0:
            return
        self._process.kill()
        for fd in (self._results, self._stdout, self._stderr):
            os.close(fd)
        self._results = self._stdout = self._stderr = -1
        if self._writer is not None:
            self._writer.join(timeout=5)
        self._close_jobs()
        self._progress.close()
        self._pool.release(self._zygote, self._process)

    # --- starting -------------------------------------------------------------------------------------

    def _job_bytes(self, trials: Sequence[Trial], checks: Sequence[int]) -> bytes:
        limits = self._limits
        job = {
            "type": "job",
            "files": list(self._handin.imports),
            **calls_job(self._exercise, self._inputs_as, self._seed),
            "trial_count": len(trials),
            "first_pass": None if self._earlier is None else self._order,  # None: every trial, in order
            "checks": list(checks),
            "deadlines": {
                "trial_seconds": limits.trial_seconds,
                "first_call_seconds": limits.first_call_cpu_seconds,
                "wall_cap_factor": WALL_CAP_FACTOR,
            },
            "limits": {
                "memory_mb": limits.memory_mb,
                "file_mb": limits.file_mb,
                "open_files": limits.open_files,
                "cpu_seconds": limits.import_seconds + limits.submission_seconds,
                "processes": limits.processes if self._process_limit is ProcessLimit.RLIMIT else None,
            },
        }
        return encode(job) + _encoded_trials(trials)

    def _start(self) -> warm.Job:
        pipes = [os.pipe() for _ in range(4)]
        for _, write_end in pipes[:2]:  # the job and the results in few large reads, not many small ones
            with contextlib.suppress(OSError):
                fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        (jobs_read, self._jobs), (self._results, results_write) = pipes[0], pipes[1]
        self._jobs_room = fcntl.fcntl(self._jobs, fcntl.F_GETPIPE_SZ)
        (self._stdout, stdout_write), (self._stderr, stderr_write) = pipes[2], pipes[3]
        progress = os.memfd_create("grader-progress")
        os.ftruncate(progress, PROGRESS.size)
        self._progress = mmap.mmap(progress, PROGRESS.size)
        PROGRESS.pack_into(self._progress, 0, -1, 0.0)
        passed = [jobs_read, results_write, progress, stdout_write, stderr_write]
        try:
            return self._zygote.start(passed, self._limits.processes, memory_mb=self._limits.memory_mb)
        finally:
            for fd in passed:
                os.close(fd)

    def _request(self, request: RerunRequest) -> None:
        if self._writer is not None:
            self._writer.join()  # the worker has read every trial before it finished the first pass
        header = {
            "type": "rerun",
            "trials": list(request.trials),
            "extended": list(request.extended),
            "probes": [[p.index, list(p.inputs)] for p in request.probes],
        }
        arrays = [array for p in request.probes for array in p.inputs.values()]
        data = memoryview(encode(header, arrays))
        with contextlib.suppress(OSError):  # a worker that died meanwhile is reported by the read loop
            while data:
                data = data[os.write(self._jobs, data) :]
        self._close_jobs()
        # The worker has waited for this since its last frame: its first rerun's wall-clock cap starts now,
        # not while the grader was planning the reruns.
        self._last_frame = time.monotonic()

    def _close_jobs(self) -> None:
        # Closed once only: other threads' pipes may reuse the number as soon as it is free.
        if self._jobs >= 0:
            with contextlib.suppress(OSError):
                os.close(self._jobs)
            self._jobs = -1

    # --- the read loop --------------------------------------------------------------------------------

    def _read(self, reading: _Reading) -> None:
        """Read output streams and result frames until the pass is over, a deadline passes, or the worker
        ends; what it learns goes into `reading`. A process of the hand-in that the kernel ended for want
        of memory (the budget of all its processes together, cgroups.py) makes the pass a memory error,
        whatever the worker made of it (a worker whose child was killed may carry on)."""
        self._read_pass(reading)
        if reading.stopped is None or reading.stopped.kind is not FailureKind.MEMORY:
            self._over_memory(reading, reading.stopped.trial if reading.stopped is not None else None)

    def _over_memory(self, reading: _Reading, trial: int | None) -> bool:
        """Whether the kernel ended a process of the hand-in for passing its memory budget: then the pass
        stops there, at `trial` (the results that arrive with the news are not kept), and the worker is
        killed. Asked as each piece of results arrives (a read of the group's OOM count: microseconds)."""
        if self._memory_told or not self._process.out_of_memory():
            return False
        self._memory_told = True
        reading.stopped = failures.out_of_memory(self._limits.memory_mb, self._process.memory_held(), trial)
        self._process.kill()
        return True

    def _read_pass(self, reading: _Reading) -> None:
        if self._unread:
            frames, self._unread = self._unread, []
            self._receive_frames(reading, frames)
            if reading.over:
                return
        trickling = False
        while self._open and not reading.over:
            now = time.monotonic()
            if now >= self._cpu_next:
                self._check_cpu(reading, now)
                if reading.over:
                    return
            deadline = self._deadline(reading)
            if now >= deadline:
                self._time_out(reading, now)
                return
            wait = min(deadline, self._cpu_next) - now
            readable, _, _ = select.select(list(self._open), [], [], wait)
            if readable == [self._results] and trickling:
                # Small results one at a time: let a few accumulate and take them in one read, which
                # halves the grader's work per trial. Each still reaches the pipe before the next trial.
                time.sleep(PACE_SECONDS)
            for fd in readable:
                chunk = os.read(fd, 1 << 20)
                if fd == self._results:
                    trickling = 0 < len(chunk) < 1 << 15
                if not chunk:
                    self._open.discard(fd)
                elif fd in self._captures:
                    self._captures[fd].add(chunk)
                    if sum(c.total for c in self._captures.values()) > failures.OUTPUT_HARD_LIMIT:
                        reading.stopped = failures.printed_too_much(self._running(reading))
                else:
                    self._receive_chunk(reading, chunk)
                if reading.over:
                    return
        if not reading.over:
            reading.stopped = self._ended_early(self._running(reading))

    def _drain_output(self) -> None:
        """Take what the worker printed before its last frame: it flushes its output before each frame,
        so all of it is in the pipes by now, but the loop may have stopped before reading it."""
        streams = [fd for fd in (self._stdout, self._stderr) if fd in self._open]
        for _ in range(_DRAIN_READS):  # bounded: a process left behind may still be printing
            readable, _, _ = select.select(streams, [], [], 0)
            if not readable:
                return
            for fd in readable:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    self._captures[fd].add(chunk)
                else:
                    streams.remove(fd)

    def _receive_chunk(self, reading: _Reading, chunk: bytes) -> None:
        # The kill came after the last piece's check, so in a trial whose results had not arrived then:
        # the first one owed, or a later one (results travel a few trials at a time).
        if self._over_memory(reading, reading.current()):
            return
        self._received += len(chunk)
        if self._received > RETURNS_BUDGET_BYTES:
            # Counted before decoding: nothing past the budget is kept, and the worker sends no more.
            self._process.kill()
            reading.stopped = failures.returned_too_much(
                self._received, RETURNS_BUDGET_BYTES, len(reading.outputs), self._running(reading)
            )
            return
        try:
            frames = self._decoder.feed(chunk)
        except ProtocolError as exc:
            reading.stopped = failures.corrupted(
                f"the result channel was corrupted: {exc}", self._running(reading)
            )
            return
        self._receive_frames(reading, frames)

    def _receive_frames(self, reading: _Reading, frames: list[Frame]) -> None:
        for number, frame in enumerate(frames):
            self._last_frame = time.monotonic()
            self._receive(reading, frame)
            if reading.over:
                self._unread = frames[number + 1 :]
                return

    def _allowed(self, first_call: bool) -> float:
        """The CPU seconds a call may use."""
        return self._limits.first_call_cpu_seconds if first_call else self._limits.trial_seconds

    def _first_call(self, reading: _Reading) -> bool:
        """Whether the call running is the worker's first since the import: no trial answered yet, and
        none after the first noted (results travel a few at a time, so the first may be over already)."""
        if reading.run is not Run.FIRST or reading.answered:
            return False
        noted: int = PROGRESS.unpack_from(self._progress)[0]
        return noted < 0 or not self._order or noted == self._order[0]

    def _deadline(self, reading: _Reading) -> float:
        """When the worker is killed: the import's deadline, the whole run's, or the running call's wall
        cap (counted from the last frame, which the worker sends at most a batch's time before the call
        began), past the grace the worker has to stop it itself."""
        limits = self._limits
        if self._ready_at is None:
            return self._started + limits.import_seconds
        cap = WALL_CAP_FACTOR * self._allowed(self._first_call(reading))
        per_trial = self._last_frame + cap + KILL_GRACE_SECONDS
        return min(self._ready_at + limits.submission_seconds, per_trial)

    def _check_cpu(self, reading: _Reading, now: float) -> None:
        """Sample the CPU the worker's processes used: past the submission's budget, or the running call
        past its deadline in two samples in a row, the pass stops and the worker is killed."""
        self._cpu_next = now + self._cpu_tick
        used = self._cpu.sample()
        limits = self._limits
        budget = limits.import_seconds + limits.submission_seconds  # as the worker's RLIMIT_CPU
        if used > budget + CPU_GRACE_SECONDS:
            reading.stopped = failures.run_timed_out(limits, self._running(reading))
            self._process.kill()
            return
        trial = self._running(reading)
        if self._ready_at is None or trial is None:
            self._cpu_call = None
            return
        # Its place in the pass: the page that names the running trial is the student's to write, so a
        # call's count starts again only when the pass moves on, never back to one counted already.
        place = len(reading.outputs) + len(reading.failures) + reading.pending.index(trial)
        call = self._cpu_call
        if call is None or call[0] is not reading or place > call[1]:
            self._cpu_call, self._cpu_from, self._cpu_over = (reading, place), used, False
            return
        first_call = self._first_call(reading)
        allowed = self._allowed(first_call)
        spent = used - self._cpu_from
        over = spent > allowed + CPU_GRACE_SECONDS
        if over and self._cpu_over:
            overrun = Overrun(trial, "cpu", allowed, spent, first_call, stopped=False)
            reading.stopped = failures.overran(overrun)
            reading.overrun = None if reading.run is not Run.FIRST else overrun
            self._process.kill()
        self._cpu_over = over

    def _cpu_spent(self, reading: _Reading, trial: int) -> float:
        """The CPU the grader counted for the running call, `trial`, until now (0 if not counted)."""
        call = self._cpu_call
        if call is None or call[0] is not reading or trial not in reading.pending:
            return 0.0
        if call[1] != len(reading.outputs) + len(reading.failures) + reading.pending.index(trial):
            return 0.0
        return max(self._cpu.sample() - self._cpu_from, 0.0)

    def _time_out(self, reading: _Reading, now: float) -> None:
        """A deadline of `_deadline` has passed: the pass stops, and says which."""
        limits = self._limits
        trial = self._running(reading)
        if self._ready_at is None:
            reading.stopped = failures.import_timed_out(limits)
        elif trial is None or now >= self._ready_at + limits.submission_seconds:
            reading.stopped = failures.run_timed_out(limits, trial)
        else:
            noted_trial, cpu = PROGRESS.unpack_from(self._progress)
            # The page is the worker's, so the student's to write: only ever words in its own message.
            cpu = cpu if noted_trial == trial and math.isfinite(cpu) and cpu >= 0 else 0.0
            # What the grader counted itself, where more: the worker's note misses its children, and a
            # hand-in that blocks the worker's alarm stops the notes.
            cpu = max(cpu, self._cpu_spent(reading, trial))
            first_call = self._first_call(reading)
            allowed = self._allowed(first_call)
            deadline: Literal["cpu", "wall"] = "cpu" if cpu > allowed else "wall"
            overrun = Overrun(trial, deadline, allowed, cpu, first_call, stopped=False)
            reading.stopped = failures.overran(overrun)
            reading.overrun = None if reading.run is not Run.FIRST else overrun

    def _receive(self, reading: _Reading, frame: Frame) -> None:
        try:
            message = MESSAGE.validate_python(frame.header)
        except ValidationError as exc:
            reading.stopped = failures.corrupted(
                f"malformed message from the worker: {exc.errors()[0]['msg']}"
            )
            return
        except (RecursionError, ValueError, TypeError) as exc:  # whatever a forged header makes of pydantic
            reading.stopped = failures.corrupted(f"malformed message from the worker ({type(exc).__name__})")
            return
        if isinstance(message, Ready):
            self._ready_at = self._last_frame
            self._import_seconds = message.import_seconds
            self._skipped_imports = tuple(message.skipped_imports)
        elif isinstance(message, Fatal):
            reading.stopped = failures.fatal(message)
        elif isinstance(message, PassDone):
            if reading.run is not Run.FIRST or reading.pending:
                reading.stopped = failures.corrupted(f"first pass ended before trial {reading.current()}")
            reading.done = True
        elif isinstance(message, Done):
            # The worker's last word: after its reruns, or instead of them (nothing more to ask it).
            self._finished = reading.done = True
        elif isinstance(message, TrialFailed):
            if _in_order(reading, message.trial, message.run):
                kind = FailureKind(message.kind)
                failure = Failure(kind, message.message, message.traceback, message.trial)
                overran = message.overrun
                if overran is not None:
                    allowed = self._allowed(overran.first_call)
                    # The worker's own count misses its children's CPU: the grader's, where more. A call
                    # past its CPU deadline by that count overran it, whichever deadline the worker saw.
                    cpu = max(overran.cpu_seconds, self._cpu_spent(reading, message.trial))
                    deadline = "cpu" if cpu > allowed else overran.deadline
                    overrun = Overrun(message.trial, deadline, allowed, cpu, overran.first_call)
                    failure = failures.overran(overrun, message.traceback)
                    reading.overrun = None if reading.run is not Run.FIRST else overrun
                reading.failures[message.trial] = failure
                reading.pending.pop(0)
                if kind is FailureKind.TIMEOUT:  # it would loop again on every trial: stop here
                    reading.stopped = failure
        else:
            self._receive_trials(reading, message, frame.arrays)

    def _receive_trials(self, reading: _Reading, message: Trials, arrays: tuple[np.ndarray, ...]) -> None:
        items = message.items
        # The trials answered must be those owed, in order: checked for the whole frame at once.
        owed = reading.pending[: len(items)] if message.run is reading.run else []
        answered = [item[0] for item in items[: len(owed)]]
        count = len(owed) if answered == owed else next(n for n, t in enumerate(answered) if t != owed[n])
        layouts: dict[tuple[int, ...], tuple[ReturnedArray | ReturnProblem, ...]] = {}
        names = self._exercise.return_names
        outputs = reading.outputs
        done = 0
        trial = items[0][0]  # the one a malformed frame is reported at
        try:
            chosen = []
            carried = [0] * len(names)  # arrays per return: they travel return by return (worker.Channel)
            for item in items[:count]:
                trial, key = item[0], tuple(item[2])
                layout = layouts.get(key)
                if layout is None:
                    layout = layouts[key] = _layout(message.kinds, key, names)
                chosen.append(layout)
                for position, kind in enumerate(layout):
                    carried[position] += type(kind) is ReturnedArray
            declared = sum(carried)
            if declared > len(arrays):
                raise ProtocolError(f"the frame's trials declare {declared} arrays; it carries {len(arrays)}")
            columns = []
            start = 0
            for number in carried:
                columns.append(iter(arrays[start : start + number]))
                start += number
            returned = [reading.returned.setdefault(name, {}) for name in names]
            for (trial, seconds, _kinds), layout in zip(items[:count], chosen, strict=True):
                by_name: dict[str, ReturnItem] = {}
                for column, kind, arrays_of in zip(columns, layout, returned, strict=True):
                    if isinstance(kind, ReturnProblem):
                        by_name[kind.name] = kind
                    else:
                        by_name[kind.name] = arrays_of[trial] = Returned.of(kind, next(column))
                outputs[trial] = TrialOutput(trial, by_name, seconds)
                done += 1
        except ProtocolError as exc:
            del reading.pending[:done]
            reading.stopped = failures.corrupted(str(exc), trial)
            return
        del reading.pending[:done]
        if count < len(items):
            _in_order(reading, items[count][0], message.run)  # not the answer owed: the run is corrupted
        elif start != len(arrays):
            reading.stopped = failures.corrupted(f"{len(arrays) - start} arrays beyond the trials' returns")

    def _running(self, reading: _Reading) -> int | None:
        """The trial the worker is in: the one it last noted in the shared progress page, if still
        unanswered (results travel a few at a time, so the first unanswered one may be done already)."""
        noted: int = PROGRESS.unpack_from(self._progress)[0]
        return noted if noted in reading.pending else reading.current()

    def _ended_early(self, trial: int | None) -> Failure:
        code = self._process.wait(KILL_GRACE_SECONDS)
        if code is None:
            self._process.kill()
            code = self._process.wait(KILL_GRACE_SECONDS)
        if self._process.zygote_gone and self._process.pid is None:
            raise WorkerStartError(self._zygote.failure_log())
        return failures.ended(code, trial)


def _ran_on(kept: Pass, overrun: Overrun, later: Pass) -> Pass:
    """The first pass of a worker that ran on from where an earlier one overran a deadline: the earlier
    results before that trial, this worker's from it on (what it says of the trial it called first again
    is left out). The same trial overrunning again is a confirmed timeout; anything else is what this
    worker saw. Never confirmed again: the pass has no overrun."""
    answered = kept.outputs.keys() | kept.failures.keys()
    outputs = {**kept.outputs, **{i: o for i, o in later.outputs.items() if i not in answered}}
    found = {**kept.failures, **{i: f for i, f in later.failures.items() if i not in answered}}
    stopped = later.stopped
    again = later.overrun
    if again is not None and again.trial == overrun.trial and stopped is not None:
        stopped = failures.overran_twice(overrun, again, stopped.traceback)
        if again.trial in found:
            found[again.trial] = stopped
    return Pass(outputs, found, stopped)


def _in_order(reading: _Reading, trial: int, run: Run) -> bool:
    """Whether this is the answer the grader waits for; the run ends as corrupted otherwise."""
    if trial == reading.current() and run is reading.run:
        return True
    reading.stopped = failures.corrupted(
        f"answer for trial {trial} while trial {reading.current()} was running"
    )
    return False


def _layout(
    kinds: Sequence[ReturnedArray | ReturnProblem], chosen: tuple[int, ...], names: Sequence[str]
) -> tuple[ReturnedArray | ReturnProblem, ...]:
    """The returns of a trial, from its frame's kinds: one per return of the exercise, in its order."""
    if any(k >= len(kinds) for k in chosen):
        raise ProtocolError(f"a trial names return kind {max(chosen)}; the frame has {len(kinds)}")
    found = [kinds[k].name for k in chosen]
    if found != list(names):
        raise ProtocolError(f"a trial's returns are named {found}; the exercise's are {list(names)}")
    return tuple(kinds[k] for k in chosen)


def calls_job(exercise: Exercise, inputs_as: str | None, seed: int) -> dict[str, Any]:
    """What the worker's trials read of its job (but its limits): the calls and their returns, how the
    inputs are handed, the student's seed. Shared with the in-process runner (in_process.py)."""
    spec = exercise.spec
    return {
        "calls": exercise.wire_calls(),
        "returns": list(exercise.return_names),
        "inputs_as": inputs_as,
        # Inputs handed out otherwise than as float64 numpy arrays: name -> {type, dtype}.
        "handed": {
            **{
                name: {"type": s.type, "dtype": s.dtype}
                for name, s in spec.inputs.items()
                if (s.type, s.dtype) != ("numpy", "float64")
            },
            **{name: {"type": "python", "dtype": "float64"} for name in exercise.sizes_handed},
        },
        "seed": seed,
    }


_TRIALS_PER_FRAME = 200
_encoded: PerObject[bytes] = PerObject(kept=8)


def _encoded_trials(trials: Sequence[Trial]) -> bytes:
    """The trials' frames, encoded once for every submission graded on the same trials (a class)."""
    return _encoded.get(trials, None, lambda: _encode_trials(trials))


def _encode_trials(trials: Sequence[Trial]) -> bytes:
    parts = []
    for start in range(0, len(trials), _TRIALS_PER_FRAME):  # a frame per trial would cost more to read
        batch = trials[start : start + _TRIALS_PER_FRAME]
        header = {"type": "inputs", "trials": [[t.index, list(t.inputs)] for t in batch]}
        parts.append(encode(header, [array for t in batch for array in t.inputs.values()]))
    return b"".join(parts)


def _stage(handin: Prepared, target: Path) -> None:
    """Write the hand-in's files into the worker's submission folder, readable by the worker's uid."""
    target.mkdir(exist_ok=True)
    for relative, content in handin.files:
        destination = target / relative
        for folder in reversed(destination.relative_to(target).parents[:-1]):
            (target / folder).mkdir(mode=0o755, exist_ok=True)
        destination.write_bytes(content)
        destination.chmod(0o644)


def _stage_support(exercise: Exercise, target: Path) -> None:
    """The exercise's support files (a course's util.py), importable by the submission."""
    target.mkdir(exist_ok=True)
    for relative in exercise.spec.support:
        source = exercise.path_of(relative)
        if source.is_dir():
            shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target / source.name)
