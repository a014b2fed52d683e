"""Run function objects in the grader's own Python process: a student's notebook kernel, where
`grader.check(...)` grades the functions the student just defined, on their own machine.

The same trials, calls and reruns as the sandboxed worker, by the worker's own code (worker/trial.py's
`run_trial` and `run_reruns`: the inputs handed out, the float64 and extended reruns, the student's
randomness seeded per trial; no autograd check, which needs a worker of its own: judging/provenance.py);
what they give is collected here straight into the values the grader judges (report.py's `Pass` and
`WorkerReport`), through the same message models (payload.py) the worker's pipe is read with. The
interface is RunningWorker's, so that grading.grade judges it unchanged.

No sandbox, no limits, and no deadlines: the code is the student's own, in their own process. A call
that never returns is stopped by Ctrl-C (in Jupyter: interrupt the kernel), which ends the grading. The
grading leaves the process as it found it: the global generators (random, numpy's, torch's) and torch's
thread count are put back, the patches of the reruns are undone, a SIGINT
handler is installed only while the functions run, and nothing exits the process.
"""

from __future__ import annotations

import contextlib
import io
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial
from grader.outcomes import Failure, FailureKind, IsolationLevel, IsolationUsed
from grader.sandbox.payload import MESSAGE, ReturnKind, ReturnProblem, TrialFailed, located
from grader.sandbox.process import Capture
from grader.sandbox.protocol import Run
from grader.sandbox.report import (
    Pass,
    RerunRequest,
    Returned,
    ReturnItem,
    TrialOutput,
    WorkerReport,
    returned_shapes,
)
from grader.sandbox.runner import calls_job
from grader.sandbox.worker import channel
from grader.sandbox.worker import trial as calls

_IN_PROCESS = "graded in this Python process: no sandbox, your own machine"
IN_PROCESS = IsolationUsed(IsolationLevel.NONE, _IN_PROCESS, _IN_PROCESS)
_KIND = TypeAdapter(ReturnKind)


class _Collector:
    """Where worker/trial.py's `run_trial` puts each trial's returns or failure (channel.TrialSink), kept
    by run."""

    def __init__(self, interrupted: threading.Event) -> None:
        self._interrupted = interrupted
        self.outputs: dict[Run, dict[int, TrialOutput]] = {run: {} for run in Run}
        self.failures: dict[Run, dict[int, Failure]] = {run: {} for run in Run}

    def starting(self, trial: int) -> None:
        # A Ctrl-C inside the student's call is caught by the trial as its exception (the worker's own
        # code catches BaseException): the grading stops here, before the next trial.
        if self._interrupted.is_set():
            raise KeyboardInterrupt("grading interrupted")

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None:
        message = MESSAGE.validate_python(header)
        if not isinstance(message, TrialFailed):  # a trial sends nothing else
            raise TypeError(f"unexpected message from a trial: {header.get('type')!r}")
        location = located(message.location)
        failure = Failure(
            FailureKind(message.kind), message.message, message.traceback, message.trial, location
        )
        self.failures[message.run][message.trial] = failure

    def queue(self, trial: int, run: Run, seconds: float, returns: list[channel.Converted]) -> None:
        by_name: dict[str, ReturnItem] = {}
        for name, label, source, python, array in returns:
            kind = _KIND.validate_python(channel.return_kind(name, label, source, python))
            if isinstance(kind, ReturnProblem):
                by_name[name] = kind
            else:
                assert array is not None, "returns.converted gives an array with every dtype label"
                # A copy now, in native byte order, as an array arrives from the pipe: the student's code
                # may change its array later.
                native = array.dtype.newbyteorder("=")
                by_name[name] = Returned(kind, np.array(array, dtype=native, order="C"))
        self.outputs[run][trial] = TrialOutput(trial, by_name, seconds)

    def pass_of(self, run: Run) -> Pass:
        return Pass(dict(self.outputs[run]), dict(self.failures[run]))


class _Output(io.TextIOBase):
    """sys.stdout or sys.stderr while the functions run: what they print, kept up to the exercise's cap
    as the sandboxed worker's is, so that a print in a loop does not flood the notebook."""

    def __init__(self, capture: Capture) -> None:
        super().__init__()
        self._capture = capture

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._capture.add(text.encode("utf-8", errors="replace"))
        return len(text)


class InProcessRunner:
    """The student's functions, called in this process; the interface of runner.RunningWorker."""

    def __init__(
        self,
        exercise: Exercise,
        functions: Sequence[Callable[..., Any]],
        seed: int,
        where: Path,
        relocate: Callable[[Failure], Failure] | None = None,
        inputs_as: str | None = None,
    ) -> None:
        """`functions`: one per call of the exercise, in its order (the entry's, then its `then`'s);
        `seed` (trials.student_seed) seeds the student's randomness; `where` is the folder of the
        student's code, whose frames the tracebacks keep (a notebook kernel's cell files), and
        `relocate` rewrites the places in a failure's text (a kernel's cell files as its cells)."""
        self._functions = list(functions)
        self._where = where
        self._relocate = relocate
        self._job = {
            **calls_job(exercise, inputs_as, seed),
            "limits": {"memory_mb": exercise.spec.limits.memory_mb},  # named in a MemoryError's message
        }
        kept = exercise.spec.limits.output_kb << 10
        self._stdout, self._stderr = Capture(kept), Capture(kept)
        self._interrupted = threading.Event()
        self._collector = _Collector(self._interrupted)
        self._inputs: dict[int, dict[str, np.ndarray]] = {}
        self._order: list[int] = []
        self._first: Pass | None = None
        self._seconds = 0.0

    def send(self, trials: Sequence[Trial]) -> None:
        self._order = [t.index for t in trials]
        self._inputs = {t.index: dict(t.inputs) for t in trials}

    def first_pass(self) -> Pass:
        if self._first is None:
            with self._running():
                for index in self._order:
                    self._collector.starting(index)
                    calls.run_trial(
                        self._collector,
                        self._functions,
                        index,
                        self._inputs[index],
                        self._job,
                        self._where,
                        Run.FIRST,
                    )
            self._first = self._collector.pass_of(Run.FIRST)
        return self._first

    def rerun(self, request: RerunRequest) -> WorkerReport:
        first = self.first_pass()
        probes = {p.index: dict(p.inputs) for p in request.probes}
        shapes = {
            i: tuple(s if s is None else tuple(s) for s in found)
            for i, found in returned_shapes(first, request)
        }
        reruns = calls.Reruns(request.trials, probes, request.extended, shapes, request.again)
        with self._running():
            calls.run_reruns(self._collector, self._functions, self._inputs, reruns, self._job, self._where)
        return self._report(first)

    def report(self) -> WorkerReport:
        return self._report(self.first_pass())

    def close(self) -> None:
        """Nothing to end: the functions ran in this process, and left it as they found it."""

    def _report(self, first: Pass) -> WorkerReport:
        report = WorkerReport(
            first=first,
            reruns=self._collector.pass_of(Run.FLOAT64),
            extended=self._collector.pass_of(Run.EXTENDED),
            again=self._collector.pass_of(Run.AGAIN),
            stdout=self._stdout.text(),
            stderr=self._stderr.text(),
            output_bytes=self._stdout.total + self._stderr.total,
            seconds=self._seconds,
            isolation=IN_PROCESS,
        )
        return report if self._relocate is None else report.relocated(self._relocate)

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        """While the student's functions run: their output kept, the process's state put back after."""
        started = time.perf_counter()
        with (
            _random_state_kept(),
            _torch_threads(1),
            _interrupt_noted(self._interrupted),
            contextlib.redirect_stdout(_Output(self._stdout)),
            contextlib.redirect_stderr(_Output(self._stderr)),
        ):
            # No autograd check here: it needs a worker of its own with autograd wrong on every route, and
            # values computed in the student's own process are advice anyway (judging/provenance.py).
            try:
                yield
            finally:
                self._seconds += time.perf_counter() - started
        self._collector.starting(-1)  # a Ctrl-C during the last trial ends the grading too


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """The global generators the trials seed (seeding.seed_randomness), as they were before."""
    python, numpy = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch")
    generator = torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        random.setstate(python)
        np.random.set_state(numpy)
        torch = sys.modules.get("torch")  # the student's code may have imported it meanwhile
        if torch is not None and generator is not None:
            torch.set_rng_state(generator)


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op threads as the sandboxed worker has them (worker/loop.py's prepare): the same
    sums in the same order, so the same rounding as `grader check`."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def _interrupt_noted(interrupted: threading.Event) -> Iterator[None]:
    """A SIGINT handler while the functions run, that notes the Ctrl-C before acting as the one before
    it: the trial that catches the KeyboardInterrupt as its exception does not end the grading, the note
    does (_Collector.starting). Signals reach the main thread only: elsewhere, nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous == signal.SIG_IGN:  # not Python's to change, or Ctrl-C is ignored
        yield
        return

    def noted(signum: int, frame: FrameType | None) -> None:
        interrupted.set()
        if callable(previous):
            previous(signum, frame)
        else:  # SIG_DFL would end the process: the grading ends instead
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, noted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
