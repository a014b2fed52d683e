"""The result pipe and what a trial puts in it."""

from __future__ import annotations

import array
import contextlib
import mmap
import os
import sys
import time
from typing import Any, Protocol

import numpy as np

from grader.sandbox.protocol import (
    MAX_COLUMNS,
    PROGRESS,
    ColumnWriter,
    Run,
    WireArray,
    column_bytes,
    encode,
    encode_wire,
    little_endian,
)

_BATCH_SECONDS = 0.01  # trial results gathered at most this long before they are sent
_BATCH_BYTES = 1 << 20
# name, dtype label or None, source or problem, the Python type it was (float, list...) or None (for a
# problem: REFUSED_NUMERICAL where it is what the course refuses, else None), array
Converted = tuple[str, str | None, str, str | None, np.ndarray | None]
REFUSED_NUMERICAL = "numerical"  # complex numbers seen where the course refuses them (numerical_watch.py)


class TrialSink(Protocol):
    """Where `run_trial` puts what a trial gave: the result pipe (`Channel`) in the sandboxed worker, a
    collector in the grader's own process where a notebook grades its functions (in_process.py)."""

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None: ...

    def starting(self, trial: int) -> None: ...

    def queue(self, trial: int, run: Run, seconds: float, returns: list[Converted]) -> None: ...


def return_kind(name: str, label: str | None, source: str, python: str | None = None) -> dict[str, Any]:
    """A return's description as it travels (payload.ReturnKind): an array's dtype label, source and the
    Python type it was given as (a list, a float: None for an array or a tensor), or (label None) the
    problem with it."""
    if label is None:
        refused = {"refused": python} if python == REFUSED_NUMERICAL else {}
        return {"name": name, "ok": False, "problem": source, **refused}
    kind = {"name": name, "ok": True, "dtype": label, "source": source}
    return kind if python is None else {**kind, "python": python}


class Channel:
    """The result pipe. Trial results travel a few at a time (one frame, one write for the lot); before
    each trial, the worker notes its number in the shared progress page, so that a process that dies
    mid-trial is still known to have died in that trial.

    A frame of trial results is columnar: it lists each distinct description of a return once (its
    `kinds`: name, dtype and source, or the problem); three flat arrays give each trial's number, its
    seconds and the kind of each of its returns (trials × returns); and each return's arrays travel as
    columns (`protocol.ColumnWriter`: their shapes and entries end to end, one per run of one dtype and
    number of dimensions), `returns` naming the return each column belongs to. Nothing per trial is
    JSON, and nothing per array is an object of its own.
    """

    def __init__(self, fd: int, progress_fd: int) -> None:
        self._fd = fd
        self._owner = os.getpid()
        self._progress = mmap.mmap(progress_fd, PROGRESS.size)
        os.close(progress_fd)
        self._trial = -1
        self._run = Run.FIRST
        self._forked = False
        self._since = 0.0
        self._empty()
        os.register_at_fork(after_in_child=self._mark_forked)

    def _empty(self) -> None:
        self._kinds: dict[tuple[str, str | None, str, str | None], int] = {}
        self._trials = array.array("q")
        self._seconds = array.array("d")
        self._kind_rows = array.array("q")  # per trial, the kind of each return
        self._width = 0  # returns per trial
        self._columns: list[ColumnWriter] = []
        self._column_returns: list[int] = []  # the return each column holds
        self._open: list[ColumnWriter | None] = []  # per return, the column its next array may join
        self._queued_bytes = 0

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

        `returns`: per return, (name, dtype label, source, Python type, array) or (name, None, problem,
        None, None).
        """
        self._guard()
        if self._trials and (run is not self._run or len(returns) != self._width):
            self.flush()
        if not self._trials:
            # Since the trial began, not since it ended: a slow trial's result leaves at once instead of
            # waiting out the next trial too, so the grader's wall-clock cap, counted from the last frame
            # it received, starts at most a batch's time before the running trial did.
            self._since = time.monotonic() - seconds
            self._run = run
            self._width = len(returns)
            self._open = [None] * len(returns)
        kinds, rows, opened = self._kinds, self._kind_rows, self._open
        for position, (name, label, source, python, returned) in enumerate(returns):
            kind = kinds.get((name, label, source, python))
            if kind is None:
                kind = kinds[name, label, source, python] = len(kinds)
            rows.append(kind)
            if returned is not None:
                wire, values = little_endian(returned)
                column = opened[position]
                if column is None or column.dtype != wire or column.ndim != values.ndim:
                    column = opened[position] = ColumnWriter(wire, values.ndim)
                    self._columns.append(column)
                    self._column_returns.append(position)
                column.append(values)  # a copy now: the student's code may change its array later
                self._queued_bytes += values.nbytes
        self._trials.append(trial)
        self._seconds.append(seconds)
        if (
            self._queued_bytes >= _BATCH_BYTES
            or len(self._columns) + self._width > MAX_COLUMNS  # the next trial could pass the bound
            or time.monotonic() - self._since >= _BATCH_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        count = len(self._trials)
        if not count:
            return
        kinds = [return_kind(*described) for described in self._kinds]
        header = {"type": "trials", "run": self._run.value, "kinds": kinds, "returns": self._column_returns}
        described: list[WireArray] = [
            ("int64", [count], column_bytes(self._trials)),
            ("float64", [count], column_bytes(self._seconds)),
            ("int64", [count, self._width], column_bytes(self._kind_rows)),
        ]
        frame = encode_wire(header, described, self._columns)
        self._empty()
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
