"""One trial."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grader.outcomes import FailureKind
from grader.sandbox import seeding
from grader.sandbox.protocol import Run
from grader.sandbox.worker import numerical_watch
from grader.sandbox.worker.arguments import arguments_of
from grader.sandbox.worker.channel import REFUSED_NUMERICAL, Converted, TrialSink
from grader.sandbox.worker.deadline import DEADLINE, TrialTimeout
from grader.sandbox.worker.precision import float64_everywhere
from grader.sandbox.worker.returns import converted, type_name
from grader.sandbox.worker.tracebacks import exception_line, raised_at, student_location, student_traceback
from grader.text import counted


def _failure_kind(exc: BaseException) -> FailureKind:
    if isinstance(exc, TrialTimeout):
        return FailureKind.TIMEOUT
    if isinstance(exc, SystemExit):
        return FailureKind.EXIT
    # numpy raises MemoryError past the memory limit; torch a RuntimeError from its allocator.
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc).lower():
        return FailureKind.MEMORY
    return FailureKind.EXCEPTION


def run_trial(
    channel: TrialSink,
    functions: list[Callable[..., Any]],
    index: int,
    inputs: dict[str, np.ndarray],
    job: dict[str, Any],
    submission_dir: Path,
    run: Run,
    plain: bool = False,
) -> None:
    """One trial: the exercise's calls in order (one, or a forward and the backward that takes its cache),
    each on fresh copies of the inputs and what the calls before it bound; its returns sent. `plain`: a
    rerun's inputs as exact ndarrays (arguments.py)."""
    builders = arguments_of(job, run, plain)
    bound: dict[str, Any] = {}  # what earlier calls returned, by the names the exercise gives them
    names: list[str] = job["returns"]
    seeding.seed_randomness(job["seed"], index)  # a rerun draws what its first run drew
    started = time.perf_counter()
    first_call = DEADLINE.first_call
    DEADLINE.start()
    entry = job["calls"][0]["entry"]
    try:
        with numerical_watch.watching(inputs):
            for function, call, arguments in zip(functions, job["calls"], builders, strict=True):
                entry = call["entry"]
                value = function(*[build(inputs, bound) for build in arguments])
                if call["binds"] is not None:
                    returned = _as_tuple(value, call["binds"], call["entry"])
                    bound.update(zip(call["binds"], returned, strict=True))
        values = [bound[n] for n in names] if job["calls"][-1]["binds"] is not None else None
    except _BadReturn as bad:
        DEADLINE.stop()
        if any(n in bound for n in names):
            # A later call (the backward) returned too few or too many values: judged as if it had raised
            # there, so what the calls before it returned (the forward's out) is still graded.
            _queue_partial(channel, index, run, started, names, bound, f"not computed: {bad}")
        else:
            channel.send(_bad_return(index, run, str(bad)))
        return
    except BaseException as exc:
        DEADLINE.stop()
        kind = _failure_kind(exc)
        message = exception_line(exc, submission_dir)
        if kind is FailureKind.EXCEPTION and any(n in bound for n in names):
            # A later call (the backward) raised: what the calls before it returned (the forward's out) is
            # still graded, and each return it did not get to says why.
            _queue_partial(
                channel, index, run, started, names, bound, f"not computed: {entry}() raised {message}"
            )
            return
        error: dict[str, Any] = {"type": "trial-error", "trial": index, "run": run.value, "kind": kind.value}
        if isinstance(exc, TrialTimeout):
            # Worded by the grader (failures.py), which also confirms it in a fresh worker: the numbers.
            message = f"trial {index} ran past its deadline"
            cpu = round(max(DEADLINE.used(), 0.0), 6)
            deadline = exc.deadline if exc.deadline in ("cpu", "wall") else "cpu"
            error["overrun"] = {"deadline": deadline, "cpu_seconds": cpu, "first_call": first_call}
        elif kind is FailureKind.MEMORY:
            message = f"needed more memory than the {job['limits']['memory_mb']} MB allowed — {message}"
        elif run is not Run.FIRST:
            # What refused a rerun's input, where: the line (a type or dtype check) says why to a student.
            message += raised_at(exc, submission_dir)
        error.update(message=message, traceback=student_traceback(exc, submission_dir))
        error["location"] = student_location(exc, submission_dir)
        channel.send(error)
        return
    finally:
        DEADLINE.stop()
    seconds = time.perf_counter() - started
    seen = numerical_watch.seen()
    if seen is not None:
        # The course refuses numerical derivatives: no return of this trial is graded as computed.
        channel.queue(index, run, seconds, [(n, None, seen, REFUSED_NUMERICAL, None) for n in names])
        return
    if values is None:
        try:
            values = list(_as_tuple(value, names, ""))
        except _BadReturn as bad:
            channel.send(_bad_return(index, run, str(bad)))
            return
    channel.queue(index, run, seconds, [converted(n, v) for n, v in zip(names, values, strict=True)])


Shapes = tuple[tuple[int, ...] | None, ...]  # a trial's returns' shapes, None where one was not given


class _BadReturn(Exception):
    """A call returned another number of values than the exercise names."""


def _queue_partial(
    channel: TrialSink,
    index: int,
    run: Run,
    started: float,
    names: list[str],
    bound: dict[str, Any],
    problem: str,
) -> None:
    """A trial whose later call failed: the returns bound before it sent, each of the others with why."""
    seconds = time.perf_counter() - started
    channel.queue(
        index,
        run,
        seconds,
        [converted(n, bound[n]) if n in bound else (n, None, problem, None, None) for n in names],
    )


def _as_tuple(value: Any, names: list[str], function: str) -> tuple[Any, ...]:
    """The values a call returned, one per name, or _BadReturn saying how many came and how many are due.

    Read through tuple's and list's own methods: a subclass's __len__ or __iter__ (student code) could
    otherwise count one number of values and hand over another.
    """
    if len(names) == 1:
        return (value,)
    items: tuple[Any, ...] | None = None
    if isinstance(value, tuple):
        items = tuple.__getitem__(value, slice(None))
    elif isinstance(value, list):
        items = tuple(list.__getitem__(value, slice(None)))
    if items is not None and len(items) == len(names):
        return items
    if items is not None:
        got = counted(len(items), "value")
    else:
        got = "None" if value is None else f"a single {type_name(value)}"
    who = f"{function} " if function else ""
    due = f"{len(names)} are due" if items is not None else f"{len(names)} values are due"
    raise _BadReturn(f"{who}returned {got}; {due}: {', '.join(names)}")


def _bad_return(index: int, run: Run, message: str) -> dict[str, Any]:
    return {
        "type": "trial-error",
        "trial": index,
        "run": run.value,
        "kind": FailureKind.BAD_RETURN.value,
        "message": message,
        "traceback": "",
    }


@dataclasses.dataclass(frozen=True)
class Reruns:
    """What the grader asks for after the first pass (report.RerunRequest, as the worker holds it)."""

    float64: Sequence[int]  # trials again at float64
    probes: Mapping[int, dict[str, np.ndarray]]  # new inputs, at float64
    extended: Sequence[int]  # trials again in numpy's extended precision
    # What each trial's first run returned, as shapes: a rerun that returns others refused its input.
    first: Mapping[int, Shapes] = dataclasses.field(default_factory=dict)
    again: Sequence[int] = ()  # trials again as the first pass ran them


def run_reruns(
    channel: TrialSink,
    functions: list[Callable[..., Any]],
    inputs_by_trial: Mapping[int, dict[str, np.ndarray]],
    reruns: Reruns,
    job: dict[str, Any],
    submission_dir: Path,
) -> None:
    """The second pass, in the order the grader reads it."""
    first = reruns.first
    for index in reruns.again:  # first, before anything is lifted: as the first pass ran it
        channel.starting(index)
        run_trial(channel, functions, index, inputs_by_trial[index], job, submission_dir, Run.AGAIN)
    runs = [
        *((i, inputs_by_trial[i], Run.FLOAT64, first.get(i)) for i in reruns.float64),
        *((i, inputs, Run.FLOAT64, None) for i, inputs in reruns.probes.items()),  # new inputs
        *((i, inputs_by_trial[i], Run.EXTENDED, first.get(i)) for i in reruns.extended),
    ]
    with float64_everywhere():
        for index, inputs, run, shapes in runs:
            channel.starting(index)
            _rerun_trial(channel, functions, index, inputs, job, submission_dir, run, shapes)


def _rerun_trial(
    channel: TrialSink,
    functions: list[Callable[..., Any]],
    index: int,
    inputs: dict[str, np.ndarray],
    job: dict[str, Any],
    submission_dir: Path,
    run: Run,
    first: Shapes | None,
) -> None:
    """A trial again, lifted: with the inputs of the class that lifts `astype`, and where the code refuses
    them (raises, returns nothing usable, or other shapes than its `first` run) once more with exact
    ndarrays of the same precision.

    Student code checks its input's type (`type(x) is np.ndarray`, `type(x).__name__ == "ndarray"`) and
    goes another way for anything else, often to `float(x)` or `math.exp(x)`, which raise on an array: that
    says nothing of its formula, and an exact ndarray passes such a check. Nothing lifts a check of the
    dtype (`x.dtype == np.float64`) honestly: what the second try says then reaches the grader, which
    judges the trial without the rerun (judging/reruns/). Every rerun trial is tried the same way, by
    its own outcome alone: a verdict does not depend on which other trials were rerun.
    """
    lifted = _Held()
    run_trial(lifted, functions, index, inputs, job, submission_dir, run)
    # Against the first run where it is known: a return the first run could not give either (a backward
    # that raises at every call) is no refusal of the lifted input, and is not tried twice.
    if not (lifted.refused() if first is None else lifted.shapes() != first):
        lifted.forward(channel)
        return
    plain = _Held()
    channel.starting(index)
    run_trial(plain, functions, index, inputs, job, submission_dir, run, plain=True)
    plain.forward(channel)


# The kinds of failure that are the code's answer to its input; a timeout, memory or an exit are not
# retried (another try could only cost their limits again).
_REFUSALS = frozenset({FailureKind.EXCEPTION.value, FailureKind.BAD_RETURN.value})


class _Held:
    """A rerun try's result, held until it is known whether it goes to the grader or another try does.

    Forwarded at once after its try, before any other student code runs: the arrays a return holds are
    copied only when the real sink queues them."""

    def __init__(self) -> None:
        self._sent: list[tuple[dict[str, Any], list[np.ndarray] | None]] = []
        self._queued: list[tuple[int, Run, float, list[Converted]]] = []

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None:
        self._sent.append((header, arrays))

    def starting(self, trial: int) -> None:
        """The real sink was told already."""

    def queue(self, trial: int, run: Run, seconds: float, returns: list[Converted]) -> None:
        self._queued.append((trial, run, seconds, returns))

    def refused(self) -> bool:
        """Whether the code raised, returned the wrong number of values, or a return it cannot be graded
        on (None, a value that is no array, one a later call did not get to compute)."""
        raised = any(header.get("kind") in _REFUSALS for header, _ in self._sent)
        return raised or any(label is None for *_, returns in self._queued for _, label, *_ in returns)

    def shapes(self) -> Shapes | None:
        """The shapes it returned (None for a return it did not give), or None where the trial failed."""
        if self._sent or len(self._queued) != 1:
            return None
        return tuple(None if array is None else array.shape for *_, array in self._queued[0][3])

    def forward(self, sink: TrialSink) -> None:
        for header, arrays in self._sent:
            sink.send(header, arrays)
        for trial, run, seconds, returns in self._queued:
            sink.queue(trial, run, seconds, returns)
