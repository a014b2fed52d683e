"""The result pipe and what a trial puts in it."""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import time
from typing import Any, Protocol

import numpy as np

from grader.sandbox.protocol import PROGRESS, Run, WireArray, encode, encode_wire, to_wire

_BATCH_SECONDS = 0.01  # trial results gathered at most this long before they are sent
_BATCH_BYTES = 1 << 20
Converted = tuple[str, str | None, str, np.ndarray | None]  # name, dtype label or None, source or problem


class TrialSink(Protocol):
    """Where `run_trial` puts what a trial gave: the result pipe (`Channel`) in the sandboxed worker, a
    collector in the grader's own process where a notebook grades its functions (in_process.py)."""

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None: ...

    def starting(self, trial: int) -> None: ...

    def queue(self, trial: int, run: Run, seconds: float, returns: list[Converted]) -> None: ...


def return_kind(name: str, label: str | None, source: str) -> dict[str, Any]:
    """A return's description as it travels (payload.ReturnKind): an array's dtype label and source, or
    (label None) the problem with it."""
    if label is None:
        return {"name": name, "ok": False, "problem": source}
    return {"name": name, "ok": True, "dtype": label, "source": source}


class Channel:
    """The result pipe. Trial results travel a few at a time (one frame, one write for the lot); before
    each trial, the worker notes its number in the shared progress page, so that a process that dies
    mid-trial is still known to have died in that trial.

    A frame of trial results lists each distinct description of a return once (its `kinds`: name, dtype
    and source, or the problem), and each trial as [trial, seconds, [kind of each return]]. Its arrays
    travel return by return (every trial's first return, then every trial's second...): a return keeps
    its dtype from trial to trial, and the arrays of one dtype in a row are described and read as one run.
    """

    def __init__(self, fd: int, progress_fd: int) -> None:
        self._fd = fd
        self._owner = os.getpid()
        self._progress = mmap.mmap(progress_fd, PROGRESS.size)
        os.close(progress_fd)
        self._trial = -1
        self._run = Run.FIRST
        self._kinds: dict[tuple[str, str | None, str], int] = {}
        self._items: list[list[Any]] = []
        self._columns: list[list[WireArray]] = []  # per return, its arrays in the frame's trials
        self._queued_bytes = 0
        self._since = 0.0
        self._forked = False
        os.register_at_fork(after_in_child=self._mark_forked)

    def starting(self, trial: int) -> None:
        self._guard()
        self._trial = trial
        PROGRESS.pack_into(self._progress, 0, trial, 0.0)

    def note_cpu(self, seconds: float) -> None:
        """The CPU seconds the running trial has used so far, for the grader to tell if it must kill it."""
        PROGRESS.pack_into(self._progress, 0, self._trial, seconds)

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None:
        self._guard()
        self.flush()
        self._write(encode(header, arrays or []))

    def queue(self, trial: int, run: Run, seconds: float, returns: list[Converted]) -> None:
        """A trial's result, sent with the next ones unless enough time or data has gathered.

        `returns`: per return, (name, dtype label, source, array) or (name, None, problem, None).
        """
        self._guard()
        if self._items and run is not self._run:
            self.flush()
        if not self._items:
            # Since the trial began, not since it ended: a slow trial's result leaves at once instead of
            # waiting out the next trial too, so the grader's wall-clock cap, counted from the last frame
            # it received, starts at most a batch's time before the running trial did.
            self._since = time.monotonic() - seconds
            self._run = run
        kinds = []
        columns = self._columns
        for position, (name, label, source, array) in enumerate(returns):
            kinds.append(self._kinds.setdefault((name, label, source), len(self._kinds)))
            if array is not None:
                wire = to_wire(array)  # a copy now: the student's code may change its array later
                while len(columns) <= position:  # a return before it may have been a problem
                    columns.append([])
                columns[position].append(wire)
                self._queued_bytes += len(wire[2])
        self._items.append([trial, seconds, kinds])
        if self._queued_bytes >= _BATCH_BYTES or time.monotonic() - self._since >= _BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if not self._items:
            return
        kinds = [return_kind(name, label, source) for name, label, source in self._kinds]
        header = {"type": "trials", "run": self._run.value, "kinds": kinds, "items": self._items}
        frame = encode_wire(header, [wire for column in self._columns for wire in column])
        self._kinds, self._items, self._columns, self._queued_bytes = {}, [], [], 0
        self._write(frame)

    def _mark_forked(self) -> None:
        self._forked = True

    def _guard(self) -> None:
        # A child the student forked has come back through the worker's loop: it must not answer for the
        # worker, and it has nothing else to do. os.fork() marks it; before any write, its process id
        # tells (a fork through ctypes passes no hook), a system call too many to make for every trial.
        if self._forked:
            os._exit(0)

    def _write(self, frame: bytes) -> None:
        if os.getpid() != self._owner:
            os._exit(0)
        # What the student printed so far reaches the grader before it may end this process.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        data = memoryview(frame)
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
