"""One hand-in's worker process: forked by a warm zygote (warm.py) under the current isolation, its channels
(the job pipe it reads, the result pipe, stdout and stderr, the progress page), and its end.

The process is the hand-in's, not an exercise's: it imports the hand-in's files once and serves the
exercises of that hand-in one after another (runner.py), each under its own deadlines. Its limits are
the hand-in's: the memory, files and processes of one exercise (every exercise it serves shares them,
grading.py groups them so), and the CPU of all of them together (each exercise lowers the soft limit to
its own). What ends it is the grader's to decide: killed, it leaves nothing behind (the zygote ends every
process it started and removes its files before it serves another hand-in).
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import select
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import WorkerStartError
from grader.exercise.spec import Exercise, Limits
from grader.handin.prepare import Prepared
from grader.outcomes import Failure
from grader.sandbox import course_view, cpu_watch, failures, isolation, plot_fonts, warm
from grader.sandbox.isolation import ProcessLimit
from grader.sandbox.protocol import PROGRESS, Frame, FrameDecoder, encode

KILL_GRACE_SECONDS = 1.0
PIPE_BYTES = 1 << 20  # Linux lets any user make a pipe this large (fs/pipe-max-size)


@dataclass
class Capture:
    """What the worker printed on one stream, kept up to `limit` bytes; `total` counts all of it."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def copy(self) -> Capture:
        return Capture(self.limit, bytearray(self.data), self.total)

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.total > len(self.data):
            text += f"\n... [{self.total - len(self.data)} more bytes not shown]"
        return text


class WorkerProcess:
    """A started worker process and its channels. Always `close()` it (it kills the worker and everything
    it started, and cleans its folder).

    Besides the channels, what is read from them belongs to the process, not to the exercise reading it: a
    frame may arrive in pieces, and a hand-in's stray frames must not be taken for the next exercise's
    (`clean`).
    """

    def __init__(
        self,
        handin: Prepared,
        exercise: Exercise,
        cpu_seconds: float,
        pool: warm.WorkerPool | None = None,
        checked: bool = False,
        torch: bool = True,
    ) -> None:
        """Start the worker at once (a zygote may still be importing torch while the caller prepares
        trials and references), for `handin` on `exercise` and those that share its limits and support
        files, with `cpu_seconds` of CPU for all of them together. `checked`: the autograd check's worker,
        autograd wrong in it from before the import on (judging/provenance.py). `torch`: whether the
        hand-in needs torch (torch_use.py); without it, the worker has none where the walls allow."""
        self.started = time.monotonic()
        self._checked = checked
        self.limits: Limits = exercise.spec.limits
        self._modules = exercise.allowed_modules
        self._distributions = exercise.allowed_distributions
        self._subprocesses = exercise.allows_subprocesses
        self._refuse_numerical = checked and exercise.refuses_numerical_derivatives
        # What held for this hand-in, the line its results show.
        self.isolation = isolation.current().used(self._subprocesses)
        self._writer: threading.Thread | None = None
        self._process_limit = isolation.current().process_limit
        self._pool = pool or warm.shared_pool()
        # A torch-free hand-in's worker forks from a zygote without torch where one is idle.
        self._zygote = self._pool.acquire(torch=None if torch else False)
        self.results = self._jobs = self.stdout = self.stderr = -1
        self._jobs_room = 0
        try:
            _stage(handin, self._zygote.slot / "submission")
            _stage_support(exercise, self._zygote.slot / "support")
            self.cpu_source = cpu_watch.Source.of(self._zygote.group, self._zygote.process.pid)
            # Taken before the fork: the zygote's own CPU is in the same group.
            self.cpu_at_start = cpu_watch.CpuWatch(self.cpu_source)
            # What of the installed packages it sees: torch in it, or nowhere in its reach.
            self.torch = self._zygote.torch_for(torch)
            self._view = course_view.view_for(self._distributions, torch=self.torch)
            self.torch = self.torch or self._view.torch
            self.job = self._start()
        except BaseException:
            self._pool.release(self._zygote, None)
            raise
        self.open = {self.results, self.stdout, self.stderr}
        for fd in self.open:  # a stream drained between two reads of the loop (drain_output) never blocks it
            os.set_blocking(fd, False)
        self.decoder = FrameDecoder()
        # Frames read with the end of one pass that belong to the next (the reruns follow one another
        # without a marker): the next pass reads them first.
        self._unread: list[Frame] = []
        self._memory_told = False  # the hand-in's memory error was found (once is enough)
        # It may serve another exercise: none left it in a state the grader cannot vouch for.
        self._usable = True
        self._exercises = 0  # exercises it has started to serve
        # What the hand-in's import printed (stdout, stderr by descriptor), once read: the start of every
        # exercise's output.
        self._import_output: dict[int, Capture] | None = None
        self.write(encode(self._handin_header(handin, cpu_seconds)))

    # --- what its readers learn of it (reading.FrameReader, runner.RunningWorker) -----------------------

    @property
    def usable(self) -> bool:
        """Whether it may serve another exercise: no pass on it stopped short."""
        return self._usable

    def unusable(self) -> None:
        self._usable = False

    def begin_exercise(self) -> bool:
        """Count an exercise it starts to serve; whether it served one before."""
        self._exercises += 1
        return self._exercises > 1

    def tell_memory_once(self) -> bool:
        """Whether the hand-in's memory error is news: True once, then False."""
        told, self._memory_told = self._memory_told, True
        return not told

    def take_unread(self) -> list[Frame]:
        """The frames a pass read that belong to the next one, handed over once."""
        frames, self._unread = self._unread, []
        return frames

    def keep_unread(self, frames: list[Frame]) -> None:
        self._unread = frames

    @property
    def import_output(self) -> dict[int, Capture] | None:
        """What the import printed, once the worker said it was done importing; None until then."""
        return self._import_output

    def keep_import_output(self, captures: Mapping[int, Capture]) -> None:
        if self._import_output is None:
            self._import_output = {fd: capture.copy() for fd, capture in captures.items()}

    # --- the job pipe ---------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Write to the job pipe; a thread writes what the pipe cannot take at once, since the worker
        reads only once it is up (or once it is done with the exercise before)."""
        self.wait_written()

        def write() -> None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._jobs, view) :]
            except OSError:
                pass  # the worker is gone; the read loop reports why

        if len(data) <= self._jobs_room:  # the empty pipe takes it all at once: no thread to start
            write()
            self._jobs_room -= len(data)
            return
        self._writer = threading.Thread(target=write, name="grader-job-writer", daemon=True)
        self._writer.start()

    def write_now(self, data: bytes) -> None:
        """Write to the job pipe after what was written before, waiting for it: a worker that died
        meanwhile is reported by the read loop."""
        self.wait_written()
        view = memoryview(data)
        with contextlib.suppress(OSError):
            while view:
                view = view[os.write(self._jobs, view) :]

    def wait_written(self) -> None:
        if self._writer is not None:
            self._writer.join()  # the worker reads every trial before it finishes a first pass
            self._writer = None

    def emptied(self) -> None:
        """The worker has read everything written so far (it answered the last request): the pipe is
        empty again."""
        self._jobs_room = fcntl.fcntl(self._jobs, fcntl.F_GETPIPE_SZ) if self._jobs >= 0 else 0

    def close_jobs(self) -> None:
        # Closed once only: other threads' pipes may reuse the number as soon as it is free.
        if self._jobs >= 0:
            with contextlib.suppress(OSError):
                os.close(self._jobs)
            self._jobs = -1

    # --- the progress page ----------------------------------------------------------------------------

    def noted(self) -> tuple[int, float]:
        """The trial the worker last noted it is running, and the CPU seconds it noted that trial used.
        The page is the worker's, so the student's to write: never more than words in a message."""
        trial, cpu = PROGRESS.unpack_from(self._progress)
        return int(trial), float(cpu)

    def forget_progress(self) -> None:
        """Before an exercise: no trial of the one before is taken for one of its own."""
        PROGRESS.pack_into(self._progress, 0, -1, 0.0)

    # --- what the grader reads ------------------------------------------------------------------------

    def clean(self) -> bool:
        """Whether nothing has been read, nor waits to be, beyond the last exercise's last word: a frame
        that comes between exercises was sent by the hand-in itself (a thread it left, say), and would be
        taken for the next exercise's."""
        if self._unread or self.decoder.pending or self.results not in self.open:
            return False
        readable, _, _ = select.select([self.results], [], [], 0)
        return not readable

    def drain_output(self, captures: dict[int, Capture]) -> None:
        """Take what the worker printed before its last frame: it flushes its output before each frame,
        so all of it is in the pipes by now, but the read loop may have stopped before reading it."""
        streams = [fd for fd in (self.stdout, self.stderr) if fd in self.open]
        for _ in range(_DRAIN_READS):  # bounded: a process left behind may still be printing
            readable, _, _ = select.select(streams, [], [], 0)
            if not readable:
                return
            for fd in readable:
                chunk = read(fd)
                if chunk is None:
                    continue
                if chunk:
                    captures[fd].add(chunk)
                else:
                    streams.remove(fd)

    # --- its end --------------------------------------------------------------------------------------

    def kill(self) -> None:
        self._usable = False
        self.job.kill()

    def out_of_memory(self) -> bool:
        return self.job.out_of_memory()

    def memory_held(self) -> int | None:
        return self.job.memory_held()

    def ended(self, trial: int | None) -> Failure:
        """Why the worker ended before the pass did (it closed its channels): its exit status, worded."""
        self._usable = False
        code = self.job.wait(KILL_GRACE_SECONDS)
        if code is None:
            self.job.kill()
            code = self.job.wait(KILL_GRACE_SECONDS)
        if self.job.zygote_gone and self.job.pid is None:
            raise WorkerStartError(self._zygote.failure_log())
        return failures.ended(code, trial)

    @property
    def closed(self) -> bool:
        return self.results < 0

    def close(self) -> None:
        """Kill the worker and everything it started, and remove its files; safe to call again."""
        if self.results < 0:
            return
        self._usable = False
        self.job.kill()
        for fd in (self.results, self.stdout, self.stderr):
            os.close(fd)
        self.results = self.stdout = self.stderr = -1
        if self._writer is not None:
            self._writer.join(timeout=5)
        self.close_jobs()
        self._progress.close()
        self._pool.release(self._zygote, self.job)

    # --- starting -------------------------------------------------------------------------------------

    def _handin_header(self, handin: Prepared, cpu_seconds: float) -> dict[str, object]:
        limits = self.limits
        return {
            "type": "handin",
            "files": list(handin.imports),
            # What student code may import beyond the stdlib, torch, numpy and its support (worker/imports.py)
            "modules": list(self._modules),
            # What the sandbox hides of the installed packages, by name: told as the course's (imports.py)
            "view": self._view.names(),
            # Whether torch is there to import (else the walls keep it out of reach)
            "torch": self.torch,
            # One process per hand-in unless its course says otherwise (worker/seccomp.py), where the
            # filter holds on this machine
            "one_process": not self._subprocesses and isolation.current().one_process,
            # Notebooks run cell by cell, where a cell's failure outside its definitions is a note
            "cells": handin.cell_starts,
            "checked": self._checked,
            # The checked worker watches for complex numbers where the course refuses numerical derivatives
            "refuse_numerical": self._refuse_numerical,
            "limits": {
                "memory_mb": limits.memory_mb,
                "file_mb": limits.file_mb,
                "open_files": limits.open_files,
                "cpu_seconds": cpu_seconds,
                "processes": limits.processes if self._process_limit is ProcessLimit.RLIMIT else None,
            },
        }

    def _start(self) -> warm.ForkedJob:
        pipes = [os.pipe() for _ in range(4)]
        for _, write_end in pipes[:2]:  # the job and the results in few large reads, not many small ones
            with contextlib.suppress(OSError):
                fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        (jobs_read, self._jobs), (self.results, results_write) = pipes[0], pipes[1]
        self._jobs_room = fcntl.fcntl(self._jobs, fcntl.F_GETPIPE_SZ)
        (self.stdout, stdout_write), (self.stderr, stderr_write) = pipes[2], pipes[3]
        progress = os.memfd_create("grader-progress")
        os.ftruncate(progress, PROGRESS.size)
        self._progress = mmap.mmap(progress, PROGRESS.size)
        PROGRESS.pack_into(self._progress, 0, -1, 0.0)
        passed = [jobs_read, results_write, progress, stdout_write, stderr_write]
        try:
            return self._zygote.start(
                passed,
                self.limits.processes,
                memory_mb=self.limits.memory_mb,
                view=self._view,
                torch=self.torch,
            )
        finally:
            for fd in passed:
                os.close(fd)


def read(fd: int) -> bytes | None:
    """What a stream of the worker holds, up to 1 MiB: b"" at its end, None if nothing now."""
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return None


_DRAIN_READS = 16  # reads of what is left in the output pipes once the worker is done (each up to 1 MiB)


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
    for source in exercise.support_paths:
        if source.is_dir():
            shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target / source.name)
    plot_fonts.stage(target)
