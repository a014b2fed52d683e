"""Run one submission's trials in an isolated worker process and collect what it returned.

The worker is forked for this submission alone by a warm zygote (warm.py) under the current
isolation: stdin from /dev/null, a clean environment, a scratch folder as cwd, the submission's files
read-only beside it, resource limits set before student code runs, deadlines enforced from outside,
results over a dedicated pipe (never stdout), and student output captured with a cap.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import select
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from grader.errors import WorkerStartError
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial
from grader.handin import notebooks
from grader.memo import PerObject
from grader.sandbox import isolation, warm
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
from grader.sandbox.protocol import CLOSED_CHANNEL_EXIT, PROGRESS, Frame, FrameDecoder, ProtocolError, encode

OUTPUT_HARD_LIMIT = 32 << 20  # beyond this much printing the run is stopped, not just truncated
KILL_GRACE_SECONDS = 1.0
PACE_SECONDS = 0.005  # how long small results may gather in the pipe before the grader reads them
PIPE_BYTES = 1 << 20  # Linux lets any user make a pipe this large (fs/pipe-max-size)


@dataclass(frozen=True)
class Returned:
    name: str
    array: np.ndarray
    dtype: str  # as the student returned it (bfloat16 travels as float32)
    source: str


@dataclass(frozen=True)
class Problem:
    name: str
    problem: str


@dataclass(frozen=True)
class TrialOutput:
    index: int
    by_name: Mapping[str, Returned | Problem]  # every return of the exercise, in its order
    seconds: float


@dataclass(frozen=True)
class Failure:
    """Why a trial (index set) or the whole submission (index None) produced nothing to compare."""

    # import, exit, missing-function, exception, timeout, bad-return, crash, memory, output-limit, protocol
    kind: str
    message: str
    traceback: str = ""
    index: int | None = None


@dataclass(frozen=True)
class WorkerReport:
    outputs: dict[int, TrialOutput]
    failures: dict[int, Failure]
    fatal: Failure | None
    stdout: str
    stderr: str
    output_bytes: int
    seconds: float
    reruns: dict[int, TrialOutput] = field(default_factory=dict)  # the same trials, run again at float64
    rerun_failures: dict[int, Failure] = field(default_factory=dict)
    isolation: str = field(default_factory=lambda: isolation.current().description)


@dataclass(frozen=True)
class Submission:
    """A student's hand-in: its files (relative to `root`), the one defining the entry first.

    The worker imports them in this order until one defines the entry; all are importable by each other.
    """

    name: str
    root: Path
    files: tuple[str, ...]

    @property
    def path(self) -> Path:
        """What the student handed in: the file, or the folder of files."""
        return self.root / self.files[0] if len(self.files) == 1 else self.root


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


class RunningWorker:
    """A started worker; `collect()` waits for it under the deadlines and always cleans up."""

    def __init__(
        self,
        exercise: Exercise,
        submission: Submission,
        inputs_as: str | None = None,
        pool: warm.WorkerPool | None = None,
    ) -> None:
        """Start the worker at once (a zygote may still be importing torch while the caller prepares
        trials and references).

        `inputs_as` ("float32") hands the code its float inputs in that dtype instead of float64.
        """
        self._exercise = exercise
        self._inputs_as = inputs_as
        self._submission = submission
        self._limits = exercise.spec.limits
        self._order: list[int] = []
        self._writer: threading.Thread | None = None
        self._started = time.monotonic()
        self._limit = isolation.current().process_limit
        self._pool = pool or warm.shared_pool()
        self._zygote = self._pool.acquire()
        self._results = self._jobs = self._stdout = self._stderr = -1
        self._jobs_room = 0
        try:
            self._notebooks = _copy_submission(submission, self._zygote.slot / "submission")
            _copy_support(exercise, self._zygote.slot / "support")
            self._process = self._start()
        except BaseException:
            self._pool.release(self._zygote, None)
            raise

    def send(self, trials: Sequence[Trial]) -> None:
        """Hand the trials to the worker; a thread writes them, since the worker reads only once it is up."""
        self._order = [t.index for t in trials]
        data = self._job_bytes(trials)

        def write() -> None:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._jobs, view) :]
            except OSError:
                pass  # the worker is gone; collect() reports why

        if len(data) <= self._jobs_room:  # the empty pipe takes it all at once: no thread to start
            write()
            return
        self._writer = threading.Thread(target=write, name="grader-job-writer", daemon=True)
        self._writer.start()

    def _job_bytes(self, trials: Sequence[Trial]) -> bytes:
        limits = self._limits
        spec = self._exercise.spec
        job = {
            "type": "job",
            "entry": spec.entry,
            "files": [f + notebooks.CONVERTED if f in self._notebooks else f for f in self._submission.files],
            "args": [arg if isinstance(arg, str) else list(arg) for arg in spec.args],
            "returns": list(self._exercise.return_names),
            "trial_count": len(trials),
            "trial_seconds": limits.trial_seconds,
            "inputs_as": self._inputs_as,
            "limits": {
                "memory_mb": limits.memory_mb,
                "file_mb": limits.file_mb,
                "open_files": limits.open_files,
                "cpu_seconds": limits.import_seconds + limits.submission_seconds,
                "processes": limits.processes if self._limit is ProcessLimit.RLIMIT else None,
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
        PROGRESS.pack_into(self._progress, 0, -1)
        passed = [jobs_read, results_write, progress, stdout_write, stderr_write]
        try:
            return self._zygote.start(passed, self._limits.processes)
        finally:
            for fd in passed:
                os.close(fd)

    def collect(self, select_reruns: RerunSelector | None = None) -> WorkerReport:
        """Wait for the results under the deadlines; always kills the worker and cleans up.

        After the first pass, `select_reruns` picks the trials to run again at float64, and probes.
        """
        try:
            report = _Collection(self, select_reruns).run()
        finally:
            self.close()
        if not self._notebooks:
            return report
        return replace(
            report,
            fatal=None if report.fatal is None else self._relocated(report.fatal),
            failures={i: self._relocated(f) for i, f in report.failures.items()},
            rerun_failures={i: self._relocated(f) for i, f in report.rerun_failures.items()},
        )

    def _relocated(self, failure: Failure) -> Failure:
        """Places in a converted notebook told as the notebook's cells and lines."""
        return replace(
            failure,
            message=notebooks.relocate(failure.message, self._notebooks),
            traceback=notebooks.relocate(failure.traceback, self._notebooks),
        )

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

    def _request_reruns(self, request: RerunRequest) -> None:
        if self._writer is not None:
            self._writer.join()  # the worker has read every trial before it finished the first pass
        header = {
            "type": "rerun",
            "trials": request.trials,
            "probes": [[p.index, list(p.inputs)] for p in request.probes],
        }
        arrays = [array for p in request.probes for array in p.inputs.values()]
        data = memoryview(encode(header, arrays))
        with contextlib.suppress(OSError):  # a worker that died meanwhile is reported by the collection
            while data:
                data = data[os.write(self._jobs, data) :]
        self._close_jobs()

    def _noted_trial(self) -> int:
        """The trial the worker noted last in the shared progress page (-1: none yet)."""
        noted: int = PROGRESS.unpack_from(self._progress)[0]
        return noted

    def _close_jobs(self) -> None:
        # Closed once only: other threads' pipes may reuse the number as soon as it is free.
        if self._jobs >= 0:
            with contextlib.suppress(OSError):
                os.close(self._jobs)
            self._jobs = -1

    def _timeout_failure(self, ready_at: float | None, trial: int | None) -> Failure:
        limits = self._limits
        if ready_at is None:
            return Failure(
                "timeout",
                f"importing the submission took longer than {limits.import_seconds:g} s "
                "(is there a long loop at the top level of the file?)",
            )
        if time.monotonic() >= ready_at + limits.submission_seconds:
            return Failure(
                "timeout",
                f"all trials together took longer than {limits.submission_seconds:g} s",
                index=trial,
            )
        return Failure(
            "timeout",
            f"trial {trial} ran past its {limits.trial_seconds:g} s deadline "
            "and did not stop when asked (an infinite loop?)",
            index=trial,
        )

    def _ended_early(self, trial: int | None) -> Failure:
        code = self._process.wait(KILL_GRACE_SECONDS)
        if code is None:
            self._process.kill()
            code = self._process.wait(KILL_GRACE_SECONDS)
        if self._process.zygote_gone and self._process.pid is None:
            raise WorkerStartError(self._zygote.failure_log())
        where = f" during trial {trial}" if trial is not None else ""
        if code is not None and code < 0 and -code in signal.valid_signals():
            name = signal.Signals(-code).name
            if name == "SIGXCPU":
                return Failure("timeout", f"used up its CPU time limit{where}", index=trial)
            return Failure("crash", f"the process was killed by {name}{where}", index=trial)
        if code == CLOSED_CHANNEL_EXIT:
            message = (
                f"the process ended{where} unable to write its output (exit status 120): the code closed "
                "file descriptors, the grader's result channel among them"
            )
            return Failure("protocol", message, index=trial)
        return Failure(
            "exit",
            f"the process exited with status {code}{where} (os._exit or a crash in native code)",
            index=trial,
        )


@dataclass(frozen=True)
class RerunRequest:
    """What the worker runs after its first pass, at float64: trials again, and probes (new inputs)."""

    trials: list[int] = field(default_factory=list)
    probes: Sequence[Trial] = ()


RerunSelector = Callable[[Mapping[int, "TrialOutput"]], RerunRequest]

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


class _Collection:
    """Reads one worker's results: its output streams, its frames, its deadlines, its two passes."""

    def __init__(self, worker: RunningWorker, select_reruns: RerunSelector | None) -> None:
        self.worker = worker
        self.select_reruns = select_reruns
        self.limits = worker._limits
        self.outputs: dict[int, TrialOutput] = {}
        self.failures: dict[int, Failure] = {}
        self.reruns: dict[int, TrialOutput] = {}
        self.rerun_failures: dict[int, Failure] = {}
        self.fatal: Failure | None = None
        self.pending = list(worker._order)
        self.rerunning = False
        self.finished = False
        self.ready_at: float | None = None
        self.last_frame = worker._started

    def current(self) -> int | None:
        return self.pending[0] if self.pending else None

    def run(self) -> WorkerReport:
        worker = self.worker
        stdout_fd, stderr_fd = worker._stdout, worker._stderr
        kept = self.limits.output_kb << 10
        captures = {stdout_fd: _Capture(kept), stderr_fd: _Capture(kept)}
        decoder = FrameDecoder()
        open_fds = {worker._results, stdout_fd, stderr_fd}
        trickling = False
        while open_fds and not self.finished and self.fatal is None:
            now = time.monotonic()
            deadline = self.deadline()
            if now >= deadline:
                self.stop(worker._timeout_failure(self.ready_at, self.running()))
                break
            readable, _, _ = select.select(list(open_fds), [], [], deadline - now)
            if readable == [worker._results] and trickling:
                # Small results one at a time: let a few accumulate and take them in one read, which
                # halves the grader's work per trial. Each still reaches the pipe before the next trial.
                time.sleep(PACE_SECONDS)
            for fd in readable:
                chunk = os.read(fd, 1 << 20)
                if fd == worker._results:
                    trickling = 0 < len(chunk) < 1 << 15
                if not chunk:
                    open_fds.discard(fd)
                elif fd in captures:
                    captures[fd].add(chunk)
                    if sum(c.total for c in captures.values()) > OUTPUT_HARD_LIMIT:
                        limit = OUTPUT_HARD_LIMIT >> 20
                        message = f"printed more than {limit} MiB; remove the prints from your function"
                        self.stop(Failure("output-limit", message, index=self.running()))
                else:
                    try:
                        for frame in decoder.feed(chunk):
                            self.last_frame = time.monotonic()
                            self.receive(frame)
                            if self.fatal is not None or self.finished:
                                break
                    except ProtocolError as exc:
                        self.stop(
                            Failure(
                                "protocol", f"the result channel was corrupted: {exc}", index=self.running()
                            )
                        )
                if self.fatal is not None:
                    break
        if self.fatal is None and not self.finished:
            self.stop(worker._ended_early(self.running()))
        return WorkerReport(
            outputs=self.outputs,
            failures=self.failures,
            fatal=self.fatal,
            stdout=captures[stdout_fd].text(),
            stderr=captures[stderr_fd].text(),
            output_bytes=sum(c.total for c in captures.values()),
            seconds=time.monotonic() - worker._started,
            reruns=self.reruns,
            rerun_failures=self.rerun_failures,
        )

    def deadline(self) -> float:
        limits = self.limits
        if self.ready_at is None:
            return self.worker._started + limits.import_seconds
        per_trial = self.last_frame + limits.trial_seconds + KILL_GRACE_SECONDS
        return min(self.ready_at + limits.submission_seconds, per_trial)

    def stop(self, failure: Failure) -> None:
        """End the run. During reruns that is no failure of the submission: its first pass is complete."""
        if self.rerunning:
            if failure.index is not None:
                self.rerun_failures[failure.index] = failure
            self.finished = True
        else:
            self.fatal = failure

    def receive(self, frame: Frame) -> None:
        try:
            message = MESSAGE.validate_python(frame.header)
        except ValidationError as exc:
            self.stop(Failure("protocol", f"malformed message from the worker: {exc.errors()[0]['msg']}"))
            return
        if isinstance(message, Ready):
            self.ready_at = self.last_frame
        elif isinstance(message, Fatal):
            self.stop(_fatal_failure(message))
        elif isinstance(message, PassDone):
            self.start_reruns()
        elif isinstance(message, Done):
            self.finished = True
        elif isinstance(message, TrialFailed):
            if self.in_order(message.trial, message.rerun):
                failure = Failure(message.kind, message.message, message.traceback, message.trial)
                (self.rerun_failures if self.rerunning else self.failures)[message.trial] = failure
                self.pending.pop(0)
                if message.kind == "timeout":  # it would loop again on every trial: stop here
                    self.stop(failure)
        else:
            self.receive_trials(message, frame.arrays)

    def receive_trials(self, message: Trials, arrays: tuple[np.ndarray, ...]) -> None:
        layouts: dict[tuple[int, ...], tuple[Problem | ReturnedArray, ...]] = {}
        results = self.reruns if self.rerunning else self.outputs
        start = 0
        for trial, seconds, kinds in message.items:
            if not self.in_order(trial, message.rerun):
                return
            key = tuple(kinds)
            layout = layouts.get(key)
            try:
                if layout is None:
                    layout = layouts[key] = _layout(message.kinds, key, self.worker._exercise.return_names)
                by_name: dict[str, Returned | Problem] = {}
                for kind in layout:
                    if isinstance(kind, Problem):
                        by_name[kind.name] = kind
                    elif start < len(arrays):
                        by_name[kind.name] = Returned(kind.name, arrays[start], kind.dtype, kind.source)
                        start += 1
                    else:
                        raise ProtocolError(f"trial {trial} declares more arrays than its frame carries")
            except ProtocolError as exc:
                self.stop(Failure("protocol", str(exc), index=trial))
                return
            results[trial] = TrialOutput(trial, by_name, seconds)
            self.pending.pop(0)
        if start != len(arrays):
            self.stop(Failure("protocol", f"{len(arrays) - start} arrays beyond the trials' returns"))

    def in_order(self, trial: int, rerun: bool) -> bool:
        """Whether this is the answer the grader waits for; the run ends as corrupted otherwise."""
        if trial == self.current() and rerun == self.rerunning:
            return True
        message = f"answer for trial {trial} while trial {self.current()} was running"
        self.stop(Failure("protocol", message))
        return False

    def running(self) -> int | None:
        """The trial the worker is in: the one it last noted, if still unanswered (results travel a few
        at a time, so the first unanswered one may be done already)."""
        noted = self.worker._noted_trial()
        return noted if noted in self.pending else self.current()

    def start_reruns(self) -> None:
        if self.pending:
            self.stop(Failure("protocol", f"first pass ended before trial {self.current()}"))
            return
        request = self.select_reruns(self.outputs) if self.select_reruns is not None else RerunRequest()
        self.rerunning = True
        self.pending = [*request.trials, *(p.index for p in request.probes)]
        self.worker._request_reruns(request)


def _layout(
    kinds: Sequence[ReturnedArray | ReturnProblem], chosen: tuple[int, ...], names: Sequence[str]
) -> tuple[Problem | ReturnedArray, ...]:
    """The returns of a trial, from its frame's kinds: one per return of the exercise, in its order."""
    if any(k >= len(kinds) for k in chosen):
        raise ProtocolError(f"a trial names return kind {max(chosen)}; the frame has {len(kinds)}")
    found = [kinds[k].name for k in chosen]
    if found != list(names):
        raise ProtocolError(f"a trial's returns are named {found}; the exercise's are {list(names)}")
    return tuple(
        Problem(kind.name, kind.problem) if isinstance(kind, ReturnProblem) else kind
        for kind in (kinds[k] for k in chosen)
    )


def _fatal_failure(message: Fatal) -> Failure:
    if message.kind == "missing-function":
        defined = ", ".join(message.defined) or "no functions"
        return Failure("missing-function", f"no function '{message.message}' is defined (found: {defined})")
    return Failure(message.kind, message.message, message.traceback)


def _copy_submission(submission: Submission, target: Path) -> dict[str, notebooks.ConvertedNotebook]:
    """Copy the submission's files for the worker, notebooks as Python; returns the converted notebooks."""
    target.mkdir(exist_ok=True)
    converted = {}
    for relative in submission.files:
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.suffix == notebooks.SUFFIX:
            notebook = converted[relative] = notebooks.convert(submission.root / relative)
            Path(str(destination) + notebooks.CONVERTED).write_text(notebook.source, encoding="utf-8")
        else:
            shutil.copyfile(submission.root / relative, destination)
    return converted


def _copy_support(exercise: Exercise, target: Path) -> None:
    """The exercise's support files (a course's util.py), importable by the submission."""
    target.mkdir(exist_ok=True)
    for relative in exercise.spec.support:
        source = exercise.path_of(relative)
        if source.is_dir():
            shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target / source.name)
