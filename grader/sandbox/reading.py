"""Reading one exercise's passes from its worker: output streams and result frames, as they come, under the
exercise's deadlines (deadlines.py), into the values the grader judges (report.py).

Every byte is the hand-in's: the frames are decoded by protocol.py (which raises ProtocolError only) and
their headers validated by payload.py; a trial answered out of order, a malformed frame, a message out of
place end the pass as corrupted. What the results take is counted as it arrives (RETURNS_BUDGET_BYTES).
"""

from __future__ import annotations

import itertools
import secrets
import select
import time
from collections.abc import Sequence

import numpy as np
from pydantic import ValidationError

from grader.exercise.spec import Exercise
from grader.outcomes import FailedCell, Failure, FailureKind
from grader.sandbox import failures
from grader.sandbox.deadlines import Deadlines
from grader.sandbox.pass_state import Reading
from grader.sandbox.payload import (
    MESSAGE,
    Done,
    Fatal,
    PassDone,
    Ready,
    ReturnedArray,
    ReturnProblem,
    TorchWanted,
    TrialFailed,
    Trials,
    located,
)
from grader.sandbox.process import Capture, WorkerProcess, read
from grader.sandbox.protocol import Column, Frame, ProtocolError, Run
from grader.sandbox.report import Overrun, Returns
from grader.sandbox.worker.imports import UNNAMED_TORCH

PACE_SECONDS = 0.005  # how long small results may gather in the pipe before the grader reads them
# The most bytes of results one exercise of a hand-in may send over all its trials and reruns, counted as
# they arrive: the grader keeps every trial's returns until the exercise is judged (judging compares them
# as columns), and judges it before it reads the next exercise's, so this bounds what one hand-in makes the
# grader hold. The library's solutions send 0.61 MiB (graph2), 0.31 (batchnorm_backward) and 0.25
# (two_layer_net) at their 1000 trials, reruns included (2026-12-03): 256 MiB is 400 times that, room for
# exercises of larger shapes. What one hand-in's results occupy in the grader (the arrays kept and the
# bytes not yet decoded) is thus at most 256 MiB, and for a moment twice that while a frame is decoded
# (its payload is copied out of the buffer once).
RETURNS_BUDGET_BYTES = 256 << 20


class FrameReader:
    """One exercise's reading of its worker: the read loop, and what each message means."""

    def __init__(
        self,
        process: WorkerProcess,
        exercise: Exercise,
        deadlines: Deadlines,
        captures: dict[int, Capture],
        received: int = 0,
    ) -> None:
        """`captures`: the worker's stdout and stderr kept for this exercise, by descriptor (what its
        import printed, where an earlier exercise imported the files); `received`: bytes of results that
        count against RETURNS_BUDGET_BYTES already (an earlier worker's, kept)."""
        self._process = process
        self.job = secrets.token_hex(16)  # this exercise's job, as its worker's "ready" must name it
        self._names = exercise.return_names
        self._limits = exercise.spec.limits
        self.deadlines = deadlines
        self.captures = captures
        self._received = received
        self.import_seconds = 0.0  # how long importing took, as the worker measured it
        self.skipped_imports: tuple[str, ...] = ()  # a `definitions` notebook's, for want of the module
        self.failed_cells: tuple[FailedCell, ...] = ()  # cells of a notebook run whole, failed
        self.finished = False  # the worker said it is done with the exercise: it takes no rerun request
        self.stopped = False  # a pass stopped early: the worker serves no other exercise

    def read(self, reading: Reading) -> None:
        """Read output streams and result frames until the pass is over, a deadline passes, or the worker
        ends; what it learns goes into `reading`. A process of the hand-in that the kernel ended for want
        of memory (the budget of all its processes together, cgroups.py) makes the pass a memory error,
        whatever the worker made of it (a worker whose child was killed may carry on)."""
        self._read_pass(reading)
        if reading.stopped is None or reading.stopped.kind is not FailureKind.MEMORY:
            self._over_memory(reading, reading.stopped.trial if reading.stopped is not None else None)
        if reading.stopped is not None:
            self.stopped = True
            self._process.unusable()

    def _over_memory(self, reading: Reading, trial: int | None) -> bool:
        """Whether the kernel ended a process of the hand-in for passing its memory budget: then the pass
        stops there, at `trial` (the results that arrive with the news are not kept), and the worker is
        killed. Asked as each piece of results arrives (a read of the group's OOM count: microseconds)."""
        process = self._process
        if not process.out_of_memory() or not process.tell_memory_once():
            return False
        reading.stopped = failures.out_of_memory(self._limits.memory_mb, process.memory_held(), trial)
        process.kill()
        return True

    def _read_pass(self, reading: Reading) -> None:
        process, deadlines = self._process, self.deadlines
        frames = process.take_unread()
        if frames:
            self._receive_frames(reading, frames)
            if reading.over:
                return
        trickling = False
        while process.open and not reading.over:
            now = time.monotonic()
            if now >= deadlines.cpu_next:
                deadlines.check_cpu(reading, now)
                if reading.over:
                    return
            deadline = deadlines.deadline(reading)
            if now >= deadline:
                deadlines.time_out(reading, now)
                return
            wait = min(deadline, deadlines.cpu_next) - now
            readable, _, _ = select.select(list(process.open), [], [], wait)
            if readable == [process.results] and trickling:
                # Small results one at a time: let a few accumulate and take them in one read, which
                # halves the grader's work per trial. Each still reaches the pipe before the next trial.
                time.sleep(PACE_SECONDS)
            for fd in readable:
                chunk = read(fd)
                if chunk is None:  # drained meanwhile (what the import printed, at its "ready")
                    continue
                if fd == process.results:
                    trickling = 0 < len(chunk) < 1 << 15
                if not chunk:
                    process.open.discard(fd)
                elif fd in self.captures:
                    self.captures[fd].add(chunk)
                    if sum(c.total for c in self.captures.values()) > failures.OUTPUT_HARD_LIMIT:
                        reading.stopped = failures.printed_too_much(deadlines.running(reading))
                else:
                    self._receive_chunk(reading, chunk)
                if reading.over:
                    return
        if not reading.over:
            reading.stopped = process.ended(deadlines.running(reading))

    def _receive_chunk(self, reading: Reading, chunk: bytes) -> None:
        # The kill came after the last piece's check, so in a trial whose results had not arrived then:
        # the first one owed, or a later one (results travel a few trials at a time).
        if self._over_memory(reading, reading.current()):
            return
        self._received += len(chunk)
        if self._received > RETURNS_BUDGET_BYTES:
            # Counted before decoding: nothing past the budget is kept, and the worker sends no more.
            self._process.kill()
            reading.stopped = failures.returned_too_much(
                self._received, RETURNS_BUDGET_BYTES, len(reading.outputs), self.deadlines.running(reading)
            )
            return
        try:
            frames = self._process.decoder.feed(chunk)
        except ProtocolError as exc:
            reading.stopped = failures.corrupted(
                f"the result channel was corrupted: {exc}", self.deadlines.running(reading)
            )
            return
        self._receive_frames(reading, frames)

    def _receive_frames(self, reading: Reading, frames: list[Frame]) -> None:
        for number, frame in enumerate(frames):
            self.deadlines.last_frame = time.monotonic()
            self._receive(reading, frame)
            if reading.over:
                self._process.keep_unread(frames[number + 1 :])
                return

    def _receive(self, reading: Reading, frame: Frame) -> None:
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
        if reading.closing and not isinstance(message, Done):
            reading.stopped = failures.corrupted(f"a {message.type!r} message after the exercise's reruns")
        elif isinstance(message, Ready) and message.job != self.job:
            reading.stopped = failures.corrupted("a 'ready' message for another job than the one sent")
        elif isinstance(message, Ready):
            self._ready(message)
        elif isinstance(message, TorchWanted) and self._process.torch:
            # torch is never refused where it is loaded: not the worker's own word
            reading.stopped = failures.corrupted("a worker with torch asked to be run again with torch")
        elif isinstance(message, TorchWanted):
            # The grading runs the hand-in again with torch; what this pass stops with is never shown.
            reading.stopped = Failure(FailureKind.IMPORT, UNNAMED_TORCH)
            reading.torch_wanted = True
        elif isinstance(message, Fatal):
            reading.stopped = failures.fatal(message)
        elif isinstance(message, PassDone):
            if reading.run is not Run.FIRST or reading.pending:
                reading.stopped = failures.corrupted(f"first pass ended before trial {reading.current()}")
            reading.done = True
        elif isinstance(message, Done):
            # The worker's last word: after its reruns, or instead of them (nothing more to ask it); never
            # in a first pass (which "pass-done" ends), nor before a rerun's last answer.
            if reading.run is Run.FIRST or reading.pending:
                reading.stopped = failures.corrupted(
                    f"the worker said it was done before trial {reading.current()}"
                )
            self.finished = reading.done = True
        elif isinstance(message, TrialFailed):
            self._trial_failed(reading, message)
        else:
            self._receive_trials(reading, message, frame)

    def _ready(self, message: Ready) -> None:
        process = self._process
        self.deadlines.ready_at = self.deadlines.last_frame
        self.import_seconds = message.import_seconds
        self.skipped_imports = tuple(message.skipped_imports)
        self.failed_cells = tuple(FailedCell(c.file, 0, c.line, c.error) for c in message.failed_cells)
        if process.import_output is None:
            # What the import printed, before this frame: every exercise the files are graded on shows it,
            # as it would graded alone.
            process.drain_output(self.captures)
            process.keep_import_output(self.captures)

    def _trial_failed(self, reading: Reading, message: TrialFailed) -> None:
        if not _in_order(reading, message.trial, message.run):
            return
        kind = FailureKind(message.kind)
        location = located(message.location)
        failure = Failure(kind, message.message, message.traceback, message.trial, location)
        overran = message.overrun
        if overran is not None:
            allowed = self.deadlines.allowed(overran.first_call)
            # The worker's own count misses its children's CPU: the grader's, where more. A call past its
            # CPU deadline by that count overran it, whichever deadline the worker saw.
            cpu = max(overran.cpu_seconds, self.deadlines.cpu_spent(reading, message.trial))
            deadline = "cpu" if cpu > allowed else overran.deadline
            overrun = Overrun(message.trial, deadline, allowed, cpu, overran.first_call)
            failure = failures.overran(overrun, message.traceback, location)
            reading.overrun = None if reading.run is not Run.FIRST else overrun
        reading.failures[message.trial] = failure
        reading.pending.pop(0)
        if kind is FailureKind.TIMEOUT:  # it would loop again on every trial: stop here
            reading.stopped = failure

    def _receive_trials(self, reading: Reading, message: Trials, frame: Frame) -> None:
        try:
            trials, seconds, rows, columns = _columns_of(message, frame, len(self._names))
        except ProtocolError as exc:
            reading.stopped = failures.corrupted(str(exc), reading.current())
            return
        # The trials answered must be those owed, in order: checked for the whole frame at once.
        owed = reading.pending[: len(trials)] if message.run is reading.run else []
        answered = trials[: len(owed)]
        count = len(owed) if answered == owed else next(n for n, t in enumerate(answered) if t != owed[n])
        names = self._names
        done = 0
        trial = trials[0]  # the one a malformed frame is reported at
        try:
            layouts: dict[tuple[int, ...], tuple[ReturnedArray | ReturnProblem, ...]] = {}
            carried = [0] * len(names)  # arrays per return
            if count and rows[:count].count(rows[0]) == count:  # the common case: every trial's alike
                alike = layouts[rows[0]] = _layout(message.kinds, rows[0], names)
                chosen = [alike] * count
                carried = [count * (type(kind) is ReturnedArray) for kind in alike]
            else:
                chosen = []
                for key in rows[:count]:
                    layout = layouts.get(key)
                    if layout is None:
                        layout = layouts[key] = _layout(message.kinds, key, names)
                    chosen.append(layout)
                    for position, kind in enumerate(layout):
                        carried[position] += type(kind) is ReturnedArray
            for position, column in enumerate(columns):
                held = sum(len(c) for c in column)
                needed = carried[position]
                if needed > held or (needed < held and count == len(trials)):
                    raise ProtocolError(
                        f"the frame's trials declare {needed} arrays of return {names[position]!r}; "
                        f"it carries {held}"
                    )
            answered = trials[:count]
            returned = [reading.returned.setdefault(name, Returns()) for name in names]
            if len(layouts) == 1:  # every trial's returns alike, added as columns
                (layout,) = layouts.values()
                for column, kind, kept in zip(columns, layout, returned, strict=True):
                    if not isinstance(kind, ReturnedArray):
                        continue
                    if len(column) == 1 and len(column[0]) == count:  # kept whole, split when asked
                        kept.add_column(answered, [kind] * count, column[0])
                    else:
                        split = (a for c in column for a in c.arrays())
                        kept.add(answered, [kind] * count, list(itertools.islice(split, count)))
            else:
                arrays_of = [iter([a for c in column for a in c.arrays()]) for column in columns]
                for trial, layout in zip(answered, chosen, strict=True):
                    for arrays, kind, kept in zip(arrays_of, layout, returned, strict=True):
                        if isinstance(kind, ReturnedArray):
                            kept.add([trial], [kind], [next(arrays)])
            reading.outputs.add(answered, seconds[:count], chosen)
            done = count
        except ProtocolError as exc:
            del reading.pending[:done]
            reading.stopped = failures.corrupted(str(exc), trial)
            return
        del reading.pending[:done]
        if count < len(trials):
            _in_order(reading, trials[count], message.run)  # not the answer owed: the run is corrupted


def _in_order(reading: Reading, trial: int, run: Run) -> bool:
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


def _columns_of(
    message: Trials, frame: Frame, width: int
) -> tuple[list[int], list[float], list[tuple[int, ...]], list[list[Column]]]:
    """A trials frame's trial numbers, seconds and kind of each return (per trial), and each return's
    columns, in order; a ProtocolError for a frame whose arrays are not those a trials frame carries.
    Each check is of whole arrays, not trial by trial."""
    if len(frame.arrays) != 3:
        raise ProtocolError(
            f"a trials frame carries 3 arrays (trials, seconds, kinds), not {len(frame.arrays)}"
        )
    trials, seconds, kinds = frame.arrays
    count = len(trials) if trials.ndim == 1 else 0
    if (
        count == 0
        or trials.dtype != np.int64
        or seconds.dtype != np.float64
        or seconds.shape != (count,)
        or kinds.dtype != np.int64
        or kinds.shape != (count, width)
    ):
        raise ProtocolError(
            f"a trials frame's arrays are {[(str(a.dtype), a.shape) for a in frame.arrays]}; expected "
            f"int64 (n,), float64 (n,), int64 (n, {width}) for n > 0"
        )
    if trials.min() < 0 or not (seconds >= 0).all():  # NaN fails too
        raise ProtocolError("a trials frame holds a negative trial number or time")
    if kinds.min() < 0 or kinds.max() >= len(message.kinds):
        raise ProtocolError(f"a trial names a return kind outside the frame's {len(message.kinds)}")
    if len(message.returns) != len(frame.columns):
        raise ProtocolError(f"{len(frame.columns)} columns, of which {len(message.returns)} are named")
    columns: list[list[Column]] = [[] for _ in range(width)]
    for position, column in zip(message.returns, frame.columns, strict=True):
        if position >= width:
            raise ProtocolError(f"a column of return {position}; the exercise has {width}")
        columns[position].append(column)
    rows = list(map(tuple, kinds.tolist()))
    return trials.tolist(), seconds.tolist(), rows, columns
