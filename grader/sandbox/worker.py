"""The only grader code that runs beside student code, in a process forked for it by the sandboxed zygote.

It reads its job (the calls to make, files, trial inputs) from a pipe, sets its resource limits, imports the
submission, makes the calls once per trial on fresh copies of the inputs, and sends back what they
returned as plain numeric arrays over a dedicated pipe. It never sees expected values: comparison happens
in the grader's process. Stdlib and numpy only (torch if present).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import mmap
import os
import re
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Protocol

import numpy as np

from grader.handin.notebooks import SKIPPED_IMPORTS
from grader.outcomes import FailureKind
from grader.sandbox import seeding
from grader.sandbox.protocol import (
    EXTENDED,
    NUMERIC_DTYPES,
    PROGRESS,
    Run,
    WireArray,
    encode,
    encode_wire,
    iter_frames,
    numeric_dtype_name,
    to_wire,
)

MAX_RETURN_BYTES = 64 << 20
_BATCH_SECONDS = 0.01  # trial results gathered at most this long before they are sent
_BATCH_BYTES = 1 << 20
_TRACEBACK_FRAMES = 8
_DEADLINE_TICK = 0.25  # seconds between checks of the running call's deadlines
_SKIPPED_SHOWN = 20  # imports a notebook skipped, named in the report
_SKIPPED_NOTE = 200  # characters of each
# The grader's own code: never the student's, even in a folder holding both (in_process.py's functions
# defined beside a checkout of the grader).
_GRADER_FILES = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
Converted = tuple[str, str | None, str, np.ndarray | None]  # name, dtype label or None, source or problem


class TrialTimeout(BaseException):
    """Raised in student code at a trial's deadline; a BaseException, so `except Exception` won't eat it.

    `deadline` says which passed: "cpu" (the call's CPU deadline) or "wall" (its wall-clock cap).
    """

    def __init__(self, deadline: str = "cpu") -> None:
        super().__init__(deadline)
        self.deadline = deadline


class TrialSink(Protocol):
    """Where `_run_trial` puts what a trial gave: the result pipe (`Channel`) in the sandboxed worker, a
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


def prepare() -> None:
    """What every worker needs before its job, done once in the zygote that forks them."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)  # before any work: torch's OpenMP runtime does not survive a fork otherwise
    _warm_up(torch)


def _warm_up(torch: Any) -> None:
    """Use what student code commonly uses, once: each forked worker would pay its first use again
    (torch sets up its dispatch and autograd paths lazily, ~2 ms of every submission's time). Only a
    saving: a torch on which it fails grades as well without it."""
    with contextlib.suppress(Exception):
        for dtype in (np.float64, np.float32):
            inputs = np.linspace(0.1, 1.0, 6, dtype=dtype).reshape(2, 3)
            leaf = torch.tensor(inputs, requires_grad=True)
            product = leaf @ torch.from_numpy(inputs.T.copy())
            hidden = torch.sigmoid(product + 1.0) * torch.tanh(product) - torch.relu(leaf).sum()
            loss = torch.exp(hidden).mean() + torch.log(hidden.abs() + 1.0).sum()
            (loss + torch.softmax(leaf, 1).max()).backward()
            (gradient,) = torch.autograd.grad((leaf * leaf).sum(), leaf)
            gradient.detach().numpy().copy()
            np.exp(inputs) @ inputs.T + np.tanh(inputs).sum(axis=1, keepdims=True)


def main(job_dir: Path, jobs_fd: int, results_fd: int, progress_fd: int) -> None:
    channel = Channel(results_fd, progress_fd)
    frames = iter_frames(jobs_fd)
    job = next(frames).header
    inputs_by_trial: dict[int, dict[str, np.ndarray]] = {}
    while len(inputs_by_trial) < job["trial_count"]:
        frame = next(frames)
        arrays = iter(frame.arrays)
        for index, names in frame.header["trials"]:
            inputs_by_trial[index] = {name: next(arrays) for name in names}
    _apply_limits(job["limits"])
    submission_dir = job_dir / "submission"
    os.chdir(job_dir / "scratch")
    sys.path.insert(0, str(submission_dir))
    sys.path.insert(0, str(job_dir / "support"))  # first: the course's util.py, not a student's copy

    seeding.seed_randomness(job["seed"], None)
    # Before the submission is imported: whatever it takes from torch at import is already checked.
    install_autograd_check()
    _python2_names()
    imported = time.perf_counter()
    loaded = _load_functions(channel, submission_dir, job["files"], [c["entry"] for c in job["calls"]])
    imported = time.perf_counter() - imported
    if loaded is None:
        return
    functions, skipped = loaded
    _deadline.watch(job["deadlines"], channel.note_cpu)
    channel.send({"type": "ready", "import_seconds": round(imported, 6), "skipped_imports": skipped})
    # A worker that confirms an earlier one's timeout runs only some trials; it holds every trial's
    # inputs all the same, since the grader may ask it to rerun any of them.
    first_pass = job["first_pass"] if job["first_pass"] is not None else list(inputs_by_trial)
    checks = frozenset(job["checks"])  # the trials the grader picked for the autograd check
    for index in first_pass:
        channel.starting(index)
        with autograd_checked(index in checks):
            _run_trial(channel, functions, index, inputs_by_trial[index], job, submission_dir, Run.FIRST)
    # Second pass, on the grader's request: the trials it found wrong beyond rounding, run again above
    # the precision they were computed in, to tell an unstable formula (its error shrinks with the
    # precision) from a mistake (wrong at any): at float64, then the probes (new inputs: an input moved a
    # little), then numpy's extended precision for code that computed in float64 already.
    channel.send({"type": "pass-done"})
    request = next(frames, None)
    if request is not None:
        arrays = iter(request.arrays)
        probes = {index: {n: next(arrays) for n in names} for index, names in request.header["probes"]}
        header = request.header
        reruns = Reruns(header["trials"], probes, header["extended"])
        run_reruns(channel, functions, inputs_by_trial, reruns, job, submission_dir)
    channel.send({"type": "done"})


@dataclasses.dataclass(frozen=True)
class Reruns:
    """What the grader asks for after the first pass (report.RerunRequest, as the worker holds it)."""

    float64: Sequence[int]  # trials again at float64
    probes: Mapping[int, dict[str, np.ndarray]]  # new inputs, at float64
    extended: Sequence[int]  # trials again in numpy's extended precision


def run_reruns(
    channel: TrialSink,
    functions: list[Callable[..., Any]],
    inputs_by_trial: Mapping[int, dict[str, np.ndarray]],
    reruns: Reruns,
    job: dict[str, Any],
    submission_dir: Path,
) -> None:
    """The second pass, in the order the grader reads it. A checked trial is checked again (new factors):
    a copy stays off above its precision, an unstable formula's error shrinks (judging/provenance.py)."""
    checks = frozenset(job.get("checks", ()))
    runs = [
        *((index, inputs_by_trial[index], Run.FLOAT64, index in checks) for index in reruns.float64),
        *((index, inputs, Run.FLOAT64, False) for index, inputs in reruns.probes.items()),
        *((index, inputs_by_trial[index], Run.EXTENDED, index in checks) for index in reruns.extended),
    ]
    with _float64_everywhere():
        for index, inputs, run, checked in runs:
            channel.starting(index)
            with autograd_checked(checked):
                _run_trial(channel, functions, index, inputs, job, submission_dir, run)


class _Lifted(np.ndarray):
    """A rerun's float input: asked for a narrower float (`astype(np.float32)`), it gives its own precision.

    numpy has no mode like torch's to catch a hard-coded dtype; `astype` is how numpy code narrows most,
    and what derives from this array (ufuncs, products, slices, views) stays of its class. Constructors
    (`np.asarray(x, dtype=np.float32)`) are lifted by `_numpy_lifted`; scalar types called on an array
    (`np.float32(x)`) are not: the returned dtype says so to the grader.
    """

    _lifted_to: np.dtype[Any] = np.dtype(np.float64)

    @classmethod
    def of(cls, array: np.ndarray) -> _Lifted:
        """A copy of `array` in this class's precision."""
        return array.astype(cls._lifted_to).view(cls)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = np.dtype(dtype)
        if wanted.kind == "f" and wanted.itemsize < self._lifted_to.itemsize:
            wanted = self._lifted_to
        return super().astype(wanted, *args, **kwargs)


class _LiftedToExtended(_Lifted):
    _lifted_to = np.dtype(np.longdouble)


_WIDER_THAN_FLOAT64 = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps
_LIFTED: dict[Run, type[_Lifted]] = {Run.FLOAT64: _Lifted}
if _WIDER_THAN_FLOAT64:  # 80-bit on x86-64 Linux, 128-bit on aarch64; float64 itself on Windows and macOS
    _LIFTED[Run.EXTENDED] = _LiftedToExtended


@contextlib.contextmanager
def _float64_everywhere() -> Iterator[None]:
    """float64 as torch's default, and explicit float32/float16/bfloat16 requests lifted to float64, in
    torch and in numpy's constructors (numpy's `astype` is lifted by the inputs' class, `_Lifted`).

    What it cannot lift (`np.float32(x)`, torch.FloatTensor(...)) stays in low precision; the grader sees
    that in the dtype and values returned.
    """
    with _numpy_lifted():
        if "torch" not in sys.modules:  # a numpy-only submission: nothing more to lift
            yield
        else:
            with _torch_lifted():
                yield


# numpy's constructors that take a dtype, and where it comes positionally.
_NUMPY_DTYPE_AT = {
    "array": 1,
    "asarray": 1,
    "asanyarray": 1,
    "ascontiguousarray": 1,
    "zeros": 1,
    "ones": 1,
    "empty": 1,
    "full": 2,
    "zeros_like": 1,
    "ones_like": 1,
    "empty_like": 1,
    "full_like": 2,
}


def _at_least_float64(dtype: Any) -> Any:
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        return dtype  # not a dtype: numpy says so to the student
    return np.float64 if dtype is not None and wanted.kind == "f" and wanted.itemsize < 8 else dtype


@contextlib.contextmanager
def _numpy_lifted() -> Iterator[None]:
    """`np.asarray(x, dtype=np.float32)` and the other constructors' narrower float dtypes as float64."""
    originals = {name: getattr(np, name) for name in _NUMPY_DTYPE_AT}

    def lifting(function: Callable[..., Any], at: int) -> Callable[..., Any]:
        @functools.wraps(function)
        def lifted(*args: Any, **kwargs: Any) -> Any:
            if "dtype" in kwargs:
                kwargs["dtype"] = _at_least_float64(kwargs["dtype"])
            elif len(args) > at:
                args = (*args[:at], _at_least_float64(args[at]), *args[at + 1 :])
            return function(*args, **kwargs)

        return lifted

    for name, function in originals.items():
        setattr(np, name, lifting(function, _NUMPY_DTYPE_AT[name]))
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(np, name, function)


@contextlib.contextmanager
def _torch_lifted() -> Iterator[None]:
    """float64 as torch's default; `dtype=torch.float32`, `.float()`, `.half()`, `torch.FloatTensor` and
    the other narrower requests as float64."""
    import torch
    from torch.overrides import TorchFunctionMode

    low = {torch.float32, torch.float16, torch.bfloat16}
    low_types = {
        torch.FloatTensor,
        torch.HalfTensor,
        torch.BFloat16Tensor,
        "torch.FloatTensor",
        "torch.HalfTensor",
        "torch.BFloat16Tensor",
    }
    narrowing = {torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}

    def lift(value: Any) -> Any:
        if isinstance(value, torch.dtype):
            return torch.float64 if value in low else value
        if isinstance(value, type | str) and value in low_types:
            return torch.DoubleTensor if isinstance(value, type) else "torch.DoubleTensor"
        return value

    class Upcast(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func in narrowing:
                func = torch.Tensor.double
            args = tuple(lift(a) for a in args)
            kwargs = {k: lift(v) for k, v in (kwargs or {}).items()}
            return func(*args, **kwargs)

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Upcast():
            yield
    finally:
        torch.set_default_dtype(previous)


# The autograd check (judging/provenance.py). On the few trials the grader picked in secret, every gradient
# torch's autograd or forward-mode AD gives is multiplied by factors drawn here from os.urandom, uniform in
# [1.25, 1.75]: one for each backward call's seeds, one for each edge of the graph it runs backward through
# (every gradient a node passes on, so each leaf's `.grad`, each retained `z.grad` and each hook sees its
# own product of them), one for each result of `autograd.grad`, and one for each tangent made or unpacked
# in forward mode. A probe (another call, another leaf or output in the same call) meets factors of its
# own, so nothing it shows can be divided out of the real gradient; a gradient derived by hand meets none.
# Each factor is at least 1.25: a copy is off by 25% at least on the checked trial. The generators the
# student's code draws from (random, numpy, torch) are not touched: a checked trial is seeded as any.
_CHECK_LOW, _CHECK_HIGH = 1.25, 1.75


class _AutogradCheck:
    """Whether the trial running is checked, and what `install_autograd_check` replaced, to put back."""

    def __init__(self) -> None:
        self.on = False
        self.replaced: list[tuple[Any, str, Any]] = []  # (owner, attribute, original)


_check = _AutogradCheck()


def _factor() -> float:
    """A factor from the kernel's generator: nothing the student's code seeds or reads decides it."""
    return _CHECK_LOW + (_CHECK_HIGH - _CHECK_LOW) * int.from_bytes(os.urandom(7), "little") / (1 << 56)


def _times_factor(value: Any) -> Any:
    return None if value is None else value * _factor()


def _graph_nodes(outputs: Any) -> list[Any]:
    """Every node of the graph behind `outputs` (tensors, or GradientEdges), each once."""
    stack = [o.grad_fn if hasattr(o, "grad_fn") else getattr(o, "node", None) for o in outputs]
    seen: set[Any] = set()
    nodes = []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return nodes


def _scramble_edge(grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """A node's post-hook: each gradient it passes on, times a factor of its own."""
    return tuple(map(_times_factor, grad_inputs))


class _CheckedEngine:
    """torch's autograd engine (Variable._execution_engine), through which backward(), autograd.grad,
    autograd.functional and torch.func's grad, vjp, jacrev and hessian all run: on a checked trial, its
    seeds, every edge of the graph and every result each times its own factor; on any other, the engine
    itself. The same object on every trial: the submission captures it at import, and its type says
    nothing of the trial."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def run_backward(self, outputs: Any, seeds: Any, *args: Any, **kwargs: Any) -> Any:
        if not _check.on:
            return self._engine.run_backward(outputs, seeds, *args, **kwargs)
        handles = []
        for node in _graph_nodes(outputs):
            with contextlib.suppress(Exception):  # a node that takes no hook passes its gradient on as is
                handles.append(node.register_hook(_scramble_edge))
        try:
            results = self._engine.run_backward(outputs, tuple(map(_times_factor, seeds)), *args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
        # backward() accumulates into the leaves and returns nothing; autograd.grad, the gradients
        return results if results is None else tuple(map(_times_factor, results))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def install_autograd_check() -> bool:
    """Put the check's hooks in torch, once, for the life of the process (the sandboxed worker) or until
    `remove_autograd_check` (the grader's own process): the engine, a new engine made from torch._C, and
    forward mode's make_dual and unpack_dual (torch.func.jvp and jacfwd use them). False without torch."""
    if _check.replaced:
        return True
    try:
        import torch
        import torch._functorch.predispatch as predispatch
        import torch.autograd.variable
    except ImportError:
        return False
    variable = sys.modules["torch.autograd.variable"]  # the module: torch.autograd.variable is a function
    engine_type = torch._C._ImperativeEngine

    def new_engine() -> _CheckedEngine:
        return _CheckedEngine(engine_type())

    make_dual, unpack_dual = predispatch._make_dual, predispatch._unpack_dual

    @functools.wraps(make_dual)
    def checked_make_dual(tensor: Any, tangent: Any, *args: Any, **kwargs: Any) -> Any:
        return make_dual(tensor, _times_factor(tangent) if _check.on else tangent, *args, **kwargs)

    @functools.wraps(unpack_dual)
    def checked_unpack_dual(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        primal, tangent = unpack_dual(tensor, *args, **kwargs)
        return primal, _times_factor(tangent) if _check.on else tangent

    replacements = [
        (variable.Variable, "_execution_engine", _CheckedEngine(variable.Variable._execution_engine)),
        (torch._C, "_ImperativeEngine", new_engine),
        (variable, "ImperativeEngine", new_engine),
        (predispatch, "_make_dual", checked_make_dual),
        (predispatch, "_unpack_dual", checked_unpack_dual),
    ]
    for owner, name, replacement in replacements:
        _check.replaced.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)
    return True


def remove_autograd_check() -> None:
    """Put back what `install_autograd_check` replaced."""
    while _check.replaced:
        owner, name, original = _check.replaced.pop()
        setattr(owner, name, original)


@contextlib.contextmanager
def autograd_checked(on: bool) -> Iterator[None]:
    """A trial, checked (`on`) or not: the check's factors apply only inside."""
    _check.on = on
    try:
        yield
    finally:
        _check.on = False


def _failure_kind(exc: BaseException) -> FailureKind:
    if isinstance(exc, TrialTimeout):
        return FailureKind.TIMEOUT
    if isinstance(exc, SystemExit):
        return FailureKind.EXIT
    # numpy raises MemoryError past the memory limit; torch a RuntimeError from its allocator.
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc).lower():
        return FailureKind.MEMORY
    return FailureKind.EXCEPTION


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
        self.first_call = True  # the next call is the first since the import
        self._trial_seconds = self._first_call_seconds = self._wall_cap_factor = 0.0
        self._note: Callable[[float], None] = lambda seconds: None
        self._cpu_start = 0.0
        self._cpu_until: float | None = None  # None between calls, where the alarm does nothing
        self._wall_until = 0.0

    def watch(self, deadlines: dict[str, float], note: Callable[[float], None]) -> None:
        """Start the alarm; `note` is told the running call's CPU seconds at every check."""
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


_deadline = _Deadline()


def _apply_limits(limits: dict[str, Any]) -> None:
    def cap(which: int, value: int) -> None:
        # A limit the platform does not support is skipped: the parent's deadlines still hold.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_CORE, 0)
    # No POSIX message queue: outside a sandbox of its own one would outlive the job, unlisted (Landlock
    # refuses to open it, but not to create it).
    cap(resource.RLIMIT_MSGQUEUE, 0)
    cap(resource.RLIMIT_AS, int(limits["memory_mb"]) << 20)
    cap(resource.RLIMIT_FSIZE, int(limits["file_mb"]) << 20)
    cap(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    if limits["processes"] is not None:  # sent only where the kernel counts this sandbox alone
        cap(resource.RLIMIT_NPROC, int(limits["processes"]))
    cpu = int(limits["cpu_seconds"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _load_functions(
    channel: Channel, submission_dir: Path, files: list[str], wanted: list[str]
) -> tuple[list[Callable[..., Any]], list[str]] | None:
    """Import the hand-in's files in order until every function the exercise calls is found; with them,
    the imports a `definitions` notebook skipped for a missing module (notebooks.py's guard)."""
    modules: list[ModuleType] = []
    found: dict[str, Callable[..., Any]] = {}
    for relative in files:
        path = submission_dir / relative
        name = re.sub(r"\W", "_", path.stem) or "submission"
        if name[0].isdigit():
            name = f"_{name}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            kind = FailureKind.EXIT if isinstance(exc, SystemExit) else FailureKind.IMPORT
            channel.send(
                {
                    "type": "fatal",
                    "kind": kind.value,
                    "file": relative,
                    "message": _exception_line(exc, submission_dir),
                    "traceback": _student_traceback(exc, submission_dir),
                }
            )
            return None
        modules.append(module)
        for function_name in wanted:
            function = getattr(module, function_name, None)
            if function_name not in found and callable(function):
                found[function_name] = function
        if len(found) == len(wanted):
            return [found[n] for n in wanted], _skipped_imports(modules)
    defined = sorted(
        {n for m in modules for n, v in vars(m).items() if callable(v) and not n.startswith("_")}
    )
    missing = next(n for n in wanted if n not in found)
    channel.send(
        {
            "type": "fatal",
            "kind": FailureKind.MISSING_FUNCTION.value,
            "file": files[0] if files else "",
            "message": missing,
            "defined": defined[:50],
        }
    )
    return None


def _skipped_imports(modules: list[ModuleType]) -> list[str]:
    # The list is in the student's module, which may have changed it: only text goes back, a little.
    notes = [vars(m).get(SKIPPED_IMPORTS) for m in modules]
    found = [n for listed in notes if isinstance(listed, list) for n in listed if isinstance(n, str)]
    return [n[:_SKIPPED_NOTE] for n in found[:_SKIPPED_SHOWN]]


def _python2_names() -> None:
    """CS231n's starters (2017 to 2020) begin with `from past.builtins import xrange`, from the `future`
    package, which a grading machine need not have: where it is missing, a module holding Python 2's
    renamed builtins stands in, so that a course file imports as handed out."""
    if importlib.util.find_spec("past") is not None:
        return
    past, names = ModuleType("past"), ModuleType("past.builtins")
    names.__dict__.update(
        xrange=range,
        basestring=str,
        unicode=str,
        long=int,
        unichr=chr,
        raw_input=input,
        reduce=functools.reduce,
    )
    past.__path__ = []  # a package, so that `import past.builtins` finds its submodule in sys.modules
    past.builtins = names  # type: ignore[attr-defined]
    sys.modules.update({"past": past, "past.builtins": names})


Builder = Callable[[Mapping[str, np.ndarray], dict[str, Any]], Any]  # (trial's inputs, bound) -> an argument


def _run_trial(
    channel: TrialSink,
    functions: list[Callable[..., Any]],
    index: int,
    inputs: dict[str, np.ndarray],
    job: dict[str, Any],
    submission_dir: Path,
    run: Run,
) -> None:
    """One trial: the exercise's calls in order (one, or a forward and the backward that takes its cache),
    each on fresh copies of the inputs and what the calls before it bound; its returns sent."""
    builders = _arguments(job, run)
    bound: dict[str, Any] = {}  # what earlier calls returned, by the names the exercise gives them
    names: list[str] = job["returns"]
    seeding.seed_randomness(job["seed"], index)  # a rerun draws what its first run drew
    started = time.perf_counter()
    first_call = _deadline.first_call
    _deadline.start()
    entry = job["calls"][0]["entry"]
    try:
        for function, call, arguments in zip(functions, job["calls"], builders, strict=True):
            entry = call["entry"]
            value = function(*[build(inputs, bound) for build in arguments])
            if call["binds"] is not None:
                bound.update(zip(call["binds"], _as_tuple(value, call["binds"], call["entry"]), strict=True))
        values = [bound[n] for n in names] if job["calls"][-1]["binds"] is not None else None
    except _BadReturn as bad:
        _deadline.stop()
        channel.send(_bad_return(index, run, str(bad)))
        return
    except BaseException as exc:
        _deadline.stop()
        kind = _failure_kind(exc)
        message = _exception_line(exc, submission_dir)
        if kind is FailureKind.EXCEPTION and any(n in bound for n in names):
            # A later call (the backward) raised: what the calls before it returned (the forward's out) is
            # still graded, and each return it did not get to says why.
            problem = f"not computed: {entry}() raised {message}"
            seconds = time.perf_counter() - started
            converted = [_converted(n, bound[n]) if n in bound else (n, None, problem, None) for n in names]
            channel.queue(index, run, seconds, converted)
            return
        error: dict[str, Any] = {"type": "trial-error", "trial": index, "run": run.value, "kind": kind.value}
        if isinstance(exc, TrialTimeout):
            # Worded by the grader (failures.py), which also confirms it in a fresh worker: the numbers.
            message = f"trial {index} ran past its deadline"
            cpu = round(max(_deadline.used(), 0.0), 6)
            deadline = exc.deadline if exc.deadline in ("cpu", "wall") else "cpu"
            error["overrun"] = {"deadline": deadline, "cpu_seconds": cpu, "first_call": first_call}
        elif kind is FailureKind.MEMORY:
            message = f"needed more memory than the {job['limits']['memory_mb']} MB allowed — {message}"
        error.update(message=message, traceback=_student_traceback(exc, submission_dir))
        channel.send(error)
        return
    finally:
        _deadline.stop()
    seconds = time.perf_counter() - started
    if values is None:
        try:
            values = list(_as_tuple(value, names, ""))
        except _BadReturn as bad:
            channel.send(_bad_return(index, run, str(bad)))
            return
    channel.queue(index, run, seconds, [_converted(n, v) for n, v in zip(names, values, strict=True)])


_PLANS_KEPT = 16  # a sandboxed worker has one job; the grader's own process a notebook's, one at a time
_argument_plans: dict[tuple[int, Run], tuple[dict[str, Any], list[list[Builder]]]] = {}


def _arguments(job: dict[str, Any], run: Run) -> list[list[Builder]]:
    """Per call of the job, a function per argument that builds it for a trial: worked out once per job
    and run, not per trial (deciding each input's copy, narrowing and type anew took a tenth of the
    worker loop's samples in bench/trial_overhead.py; 1.5 µs a graph2 trial now). Kept with the job they
    were made for: the grader's own process (in_process.py) runs other jobs too."""
    kept = _argument_plans.get((id(job), run))
    if kept is not None and kept[0] is job:
        return kept[1]
    plans = []
    bound: set[str] = set()  # names the calls before this one bind
    for call in job["calls"]:
        plans.append([_argument(arg, job, run, frozenset(bound)) for arg in call["args"]])
        bound.update(call["binds"] or ())
    if len(_argument_plans) >= _PLANS_KEPT:
        _argument_plans.clear()
    _argument_plans[(id(job), run)] = (job, plans)
    return plans


def _argument(arg: Any, job: dict[str, Any], run: Run, bound: frozenset[str]) -> Builder:
    if isinstance(arg, str):
        return _fresh(arg, job, run, bound)
    if isinstance(arg, list):
        parts = [_fresh(name, job, run, bound) for name in arg]
        return lambda inputs, values: tuple(part(inputs, values) for part in parts)
    if "dict" in arg:
        items = [
            (key, _argument(item["input"], job, run, bound) if "input" in item else None, item.get("value"))
            for key, item in arg["dict"].items()
        ]
        return lambda inputs, values: {
            key: build(inputs, values) if build is not None else value for key, build, value in items
        }
    if "tokens" in arg:
        name, vocab = arg["tokens"], arg["vocab"]
        return lambda inputs, values: _words(inputs[name].tolist(), vocab)
    if "index_of" in arg:
        words = arg["index_of"]
        return lambda inputs, values: {word: index for index, word in enumerate(words)}
    if "object" in arg:
        methods = arg["methods"]
        return lambda inputs, values: _sampler(methods, inputs)
    literal = arg["value"]
    return lambda inputs, values: _literal(literal)


def _fresh(name: str, job: dict[str, Any], run: Run, bound: frozenset[str]) -> Builder:
    """An input as a trial's call gets it: a fresh copy, narrowed or lifted as the run asks, handed out as
    the exercise says; or what an earlier call bound to the name (a cache), passed on as it is."""
    if name in bound:
        return lambda inputs, values: values[name]
    how = job["handed"].get(name, _AS_NUMPY_FLOAT64)
    kind = how["type"]
    if how["dtype"] == "bool":  # a 0/1 mask as booleans: no precision to narrow or lift
        return lambda inputs, values: _handed(inputs[name] != 0, kind)
    # A rerun checks the same code, lifted.
    lifted = _LIFTED.get(run)
    as_first = run is Run.FIRST
    narrow = job["inputs_as"] or (how["dtype"] if how["dtype"] != "float64" else None)

    def copied(array: np.ndarray) -> np.ndarray:
        if array.dtype.kind == "f" and lifted is not None:
            return lifted.of(array)
        if array.dtype.kind == "f" and as_first and narrow is not None:
            return np.asarray(array.astype(narrow))
        return np.asarray(array.copy())

    if kind == "numpy" and lifted is None and narrow is None:  # the common case: a plain copy
        return lambda inputs, values: inputs[name].copy()
    return lambda inputs, values: _handed(copied(inputs[name]), kind)


def _literal(value: Any) -> Any:
    """A literal argument, a list rebuilt at every call: the job's own must not change under a student's
    code that appends to what it was handed."""
    return [_literal(item) for item in value] if isinstance(value, list) else value


def _words(indices: Any, vocab: list[str]) -> Any:
    """An integer input's values (from `tolist()`: an int, or nested lists of them) as the vocabulary's
    words."""
    return [_words(item, vocab) for item in indices] if isinstance(indices, list) else vocab[indices]


class SamplerExhausted(Exception):
    """A sampler's method called more often than the exercise gives it draws for, in one trial."""


class _Draws:
    """One sampler method: at each call, the next of the trial's draws, as a Python int.

    Holds a tuple of ints of its own, not the trial's input array: nothing the student does to it reaches
    another call, trial or rerun.
    """

    __slots__ = ("_name", "_taken", "_values")

    def __init__(self, name: str, values: tuple[int, ...]) -> None:
        self._name = name
        self._values = values
        self._taken = 0

    def __call__(self) -> int:
        if self._taken >= len(self._values):
            count = len(self._values)
            raise SamplerExhausted(
                f"{self._name}() was called a {_ordinal(count + 1)} time in one call: the exercise gives it "
                f"{count} draws per trial, more than correct code takes; draw only the samples the task asks "
                "for"
            )
        value = self._values[self._taken]
        self._taken += 1
        return value

    def __repr__(self) -> str:
        return f"<sampler method {self._name}(): {len(self._values) - self._taken} draws left>"


def _ordinal(n: int) -> str:
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class _Constant:
    """A sampler method that returns the same value at every call (a fresh copy of a list)."""

    __slots__ = ("_name", "_value")

    def __init__(self, name: str, value: Any) -> None:
        self._name = name
        self._value = value

    def __call__(self) -> Any:
        return _literal(self._value)

    def __repr__(self) -> str:
        return f"<sampler method {self._name}()>"


class _Sampler:
    """A sampler object argument (CS224n's `dataset`): its declared methods, and nothing else.

    A class of its own with slots: what the student is handed holds its methods' draws and constants,
    no reference to the job, the channel or the trial's inputs.
    """

    __slots__ = ("_methods",)

    def __init__(self, methods: dict[str, _Draws | _Constant]) -> None:
        self._methods = methods

    def __getattr__(self, name: str) -> Any:
        # Reached only for names that are not slots or the class's own; _ names never are methods
        # (the spec forbids them), and asking for _methods here would recurse where it is unset (a copy).
        methods = {} if name.startswith("_") else self._methods
        if name in methods:
            return methods[name]
        listing = ", ".join(f"{m}()" for m in sorted(methods)) or "none"
        raise AttributeError(f"the sampler argument has no attribute {name!r}; its methods: {listing}")

    def __dir__(self) -> list[str]:
        return sorted(self._methods)

    def __repr__(self) -> str:
        return f"<sampler with {', '.join(f'{m}()' for m in sorted(self._methods))}>"


def _sampler(methods: dict[str, dict[str, Any]], inputs: Mapping[str, np.ndarray]) -> _Sampler:
    """A fresh sampler for one call: its draws start at the trial's first, on every run of the trial."""
    built: dict[str, _Draws | _Constant] = {}
    for name, how in methods.items():
        if "draws" in how:
            built[name] = _Draws(name, tuple(int(v) for v in inputs[how["draws"]].reshape(-1).tolist()))
        else:
            built[name] = _Constant(name, how["value"])
    return _Sampler(built)


class _BadReturn(Exception):
    """A call returned another number of values than the exercise names."""


def _as_tuple(value: Any, names: list[str], function: str) -> tuple[Any, ...]:
    if len(names) == 1:
        return (value,)
    if isinstance(value, tuple | list) and len(value) == len(names):
        return tuple(value)
    got = f"{len(value)} values" if isinstance(value, tuple | list) else f"a single {_type_name(value)}"
    who = f"{function} " if function else ""
    raise _BadReturn(f"{who}returned {got}; expected a tuple of {len(names)}: ({', '.join(names)})")


def _bad_return(index: int, run: Run, message: str) -> dict[str, Any]:
    return {
        "type": "trial-error",
        "trial": index,
        "run": run.value,
        "kind": FailureKind.BAD_RETURN.value,
        "message": message,
        "traceback": "",
    }


_AS_NUMPY_FLOAT64 = {"type": "numpy", "dtype": "float64"}  # how an input not in the job's "handed" goes


def _handed(value: np.ndarray, kind: str) -> Any:
    """An input as the exercise hands it out: a numpy array, a torch tensor on the cpu, a Python number."""
    if kind == "python":
        return value.item()  # float, or int for an integer input; float64 even in an extended rerun
    if kind == "torch":
        import torch

        if value.dtype == np.longdouble and _WIDER_THAN_FLOAT64:
            value = value.astype(np.float64)  # torch has nothing wider: the rerun stays at float64
        return torch.from_numpy(np.ascontiguousarray(value).view(np.ndarray))
    return value


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _converted(name: str, value: Any) -> Converted:
    try:
        converted = _to_array(value)
    except Exception as exc:  # a subclass's own code, run by torch or numpy while reading it
        converted = (
            f"returned a {_type_name(value)} that could not be read as a plain array "
            f"({type(exc).__name__}); return a numpy.ndarray or a torch.Tensor, not a subclass"
        )
    if isinstance(converted, str):
        return name, None, converted, None
    array, label, source = converted
    return name, label, source, array


def _to_array(value: Any) -> tuple[np.ndarray, str, str] | str:
    """A returned value as (array, precision label, where it came from), or the problem in words.

    The array may share the value's memory: it travels as a copy made at once (Channel.queue).

    Nothing the value says of itself is believed: a subclass (or an instance attribute: a tensor has a
    __dict__) may override numel, shape, nbytes, element_size, __len__, __array__, tobytes, astype. A
    tensor is read through torch's base class with __torch_function__ off (no subclass's method, no mode
    runs), into a fresh plain tensor, and an ndarray through ndarray's own view into an exact ndarray,
    which has no __dict__; the size is then taken from the plain object, before anything is copied.
    """
    torch = sys.modules.get("torch")
    if value is None:
        return "returned None"
    if type(value) is np.ndarray and value.dtype in _PLAIN_DTYPES and value.nbytes <= MAX_RETURN_BYTES:
        # The common case, a plain array of a native numeric dtype, without the checks below.
        return value, _PLAIN_DTYPES[value.dtype], "numpy.ndarray"
    if (
        torch is not None
        and type(value) is torch.Tensor
        and not value.__dict__  # no method replaced on the object itself (t.numel = lambda: 1)
        and not torch._C._is_torch_function_mode_enabled()  # no mode that answers for torch
    ):
        # The other common case, a dense tensor on the cpu of a dtype numpy shares, for two of graph2's
        # three returns in every trial: 4.1 µs, against 5.1 through the base class below (3.5 before the
        # two checks above; all measured on the loaded 2-core machine, 2026-12-03).
        label = _plain_torch_labels().get(value.dtype)
        if (
            label is not None
            and value.layout is torch.strided
            and value.is_cpu
            and not value.is_neg()
            and value.numel() * value.element_size() <= MAX_RETURN_BYTES
        ):
            return value.detach().numpy(), label, "torch.Tensor"
    if torch is not None and isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunction():
            return _from_tensor(torch, value)
    if isinstance(value, np.ndarray):
        array = np.ndarray.view(value, np.ndarray)  # exact ndarray: ndarray's own nbytes, tobytes, astype
        source = "numpy.ndarray" if type(value) is np.ndarray else f"{_type_name(value)} (numpy.ndarray)"
        too_big = _too_big(array.size, array.nbytes, source)
        if too_big:  # checked before any copy: copying a huge array could exhaust the memory limit itself
            return too_big
        label = numeric_dtype_name(array.dtype) or str(array.dtype)
        if array.dtype == np.longdouble and _WIDER_THAN_FLOAT64:
            array, label = array.astype(np.float64), EXTENDED
    elif isinstance(value, np.generic):
        if type(value) not in _NUMPY_SCALARS and type(value) is not np.longdouble:
            return f"returned a {_type_name(value)}, a subclass of a numpy scalar; return a numpy array"
        array = np.asarray(value)
        label = numeric_dtype_name(array.dtype) or str(array.dtype)
        if array.dtype == np.longdouble and _WIDER_THAN_FLOAT64:
            array, label = array.astype(np.float64), EXTENDED
        source = f"numpy.{type(value).__name__}"
    elif type(value) in (float, int, bool):
        array = np.asarray(value, dtype=np.float64)
        label, source = "float64", f"Python {type(value).__name__}"
    elif type(value) in (list, tuple):
        described = _from_nested(value)
        if isinstance(described, str):
            return described
        array, label = described
        source = f"Python {type(value).__name__}"
    else:
        return f"returned a {_type_name(value)}; return a numpy array, a torch tensor or a number"
    if numeric_dtype_name(array.dtype) is None:
        return f"returned an array of dtype {array.dtype}; a numeric array is expected"
    return array, label, source


def _from_tensor(torch: Any, value: Any) -> tuple[np.ndarray, str, str] | str:
    """A tensor (or a subclass of one) as _to_array gives it; called with __torch_function__ disabled."""
    base = torch._C.TensorBase
    # A fresh tensor object of the exact class on the same data: no attribute of the student's object (its
    # class's methods, its instance __dict__) is looked up from here on.
    tensor = base.as_subclass(base.detach(value), torch.Tensor)
    source = "torch.Tensor" if type(value) is torch.Tensor else f"{_type_name(value)} (torch.Tensor)"
    entries = base.numel(tensor)
    too_big = _too_big(entries, entries * base.element_size(tensor), source)
    if too_big:  # checked before any copy (to_dense, cpu, float, resolve_neg all copy)
        return too_big
    label = _torch_labels().get(tensor.dtype) or str(tensor.dtype).removeprefix("torch.")
    if tensor.is_complex():
        return f"returned a complex tensor ({label})"
    if tensor.is_sparse:
        tensor = tensor.to_dense()
    if not tensor.is_cpu:
        tensor = tensor.cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    array = tensor.resolve_neg().numpy()
    if type(array) is not np.ndarray or array.nbytes > MAX_RETURN_BYTES:  # what numpy sees: the data itself
        return _too_big(array.size, array.nbytes, source) or f"returned a {source} numpy cannot read"
    if numeric_dtype_name(array.dtype) is None:
        return f"returned an array of dtype {array.dtype}; a numeric array is expected"
    return array, label, source


# Native numeric dtypes, by their names: an exact numpy.ndarray of one of them is returned as it is. Not
# longdouble (it travels as float64, labelled extended), which numeric_dtype_name does not name anyway.
_PLAIN_DTYPES = {np.dtype(name): name for name in NUMERIC_DTYPES}
_MAX_LIST_ENTRIES = MAX_RETURN_BYTES // 8  # what a float64 array within the return bound holds
_MAX_LIST_DEPTH = 32  # numpy allows 64 dimensions; a list nested deeper (or in itself) is no array
_PYTHON_NUMBERS = (float, int, bool)
# Exact types only: a subclass (of float, say, or of numpy.float64) could override what numpy calls on it.
_NUMPY_SCALARS = frozenset(
    t for t in set(np.sctypeDict.values()) if numeric_dtype_name(np.dtype(t)) is not None
)


def _from_nested(value: list[Any] | tuple[Any, ...]) -> tuple[np.ndarray, str] | str:
    """A nested list or tuple of numbers (what `.tolist()` gives) as the array it describes, with its
    precision label, or why it describes none.

    Student code is hostile, and a list's items may be any objects: only exact builtin lists, tuples and
    numbers, and numpy's own numeric scalars are accepted, their number is bounded level by level before
    anything is copied, and nothing on any item is called before that (numpy then reads only those types).
    """
    kind = type(value).__name__
    level: list[Any] = [value]
    shape: list[int] = []
    while level and type(level[0]) in (list, tuple):
        if len(shape) == _MAX_LIST_DEPTH:
            return f"returned a {kind} nested more than {_MAX_LIST_DEPTH} deep; return a numpy array"
        length = len(level[0])
        entries = 0
        for index, item in enumerate(level):
            if type(item) not in (list, tuple):
                where = _position(index, shape)
                return (
                    f"returned a ragged {kind}: {where} is a {_type_name(item)} where a list is due, as at "
                    f"{_position(0, shape)}; a list must describe a rectangular array: return a numpy array"
                )
            if len(item) != length:
                return (
                    f"returned a ragged {kind}: {_position(index, shape)} has {len(item)} items where "
                    f"{_position(0, shape)} has {length}; a list must describe a rectangular array: "
                    "return a numpy array"
                )
            entries += length
            if entries > _MAX_LIST_ENTRIES:
                return f"returned a {kind} of over {_MAX_LIST_ENTRIES} numbers: far beyond any expected size"
        shape.append(length)
        level = [child for item in level for child in item]
    numpy_scalars = False
    for index, item in enumerate(level):
        if type(item) in _PYTHON_NUMBERS:
            continue
        if type(item) in _NUMPY_SCALARS:
            numpy_scalars = True
            continue
        where = _position(index, shape)
        if type(item) in (list, tuple):
            return (
                f"returned a ragged {kind}: {where} is a {type(item).__name__} where {_position(0, shape)} "
                "is a number; a list must describe a rectangular array: return a numpy array"
            )
        return (
            f"returned a {kind} whose entry {where} is a {_type_name(item)}; a list must hold only numbers: "
            "return a numpy array or a torch tensor"
        )
    try:
        # Python numbers only: float64, as for a Python float; numpy's scalars keep their own precision.
        array = np.asarray(value) if numpy_scalars else np.asarray(value, dtype=np.float64)
    except OverflowError:
        return f"returned a {kind} holding an integer too large for a float64; return a numpy array"
    if array.shape != tuple(shape) or numeric_dtype_name(array.dtype) is None:
        return f"returned a {kind} that describes no numeric array; return a numpy array"
    label = numeric_dtype_name(array.dtype) or str(array.dtype)
    if array.dtype == np.longdouble and _WIDER_THAN_FLOAT64:
        array, label = array.astype(np.float64), EXTENDED
    return array, label


def _position(index: int, shape: list[int]) -> str:
    """The place of a level's item, as the student would index the list: `[1][0]`; the outermost: `it`."""
    if not shape:
        return "it"
    return "".join(f"[{i}]" for i in np.unravel_index(index, shape))


@functools.cache
def _torch_labels() -> dict[Any, str]:
    import torch

    return {getattr(torch, name): name for name in NUMERIC_DTYPES | {"bfloat16"} if hasattr(torch, name)}


@functools.cache
def _plain_torch_labels() -> dict[Any, str]:
    """torch's dtypes whose tensors `numpy()` gives as they are (not bfloat16), by their labels."""
    return {dtype: name for dtype, name in _torch_labels().items() if name in NUMERIC_DTYPES}


def _too_big(entries: int, nbytes: int, source: str) -> str:
    """Why an array of that many entries and bytes (read through the base class) may not travel, or ""."""
    if nbytes <= MAX_RETURN_BYTES:
        return ""
    what = "an array" if source in ("numpy.ndarray", "torch.Tensor") else f"a {source}"
    return (
        f"returned {what} of {entries} entries ({nbytes >> 20} MiB, more than the {MAX_RETURN_BYTES >> 20} "
        "MiB one return may be): far beyond any expected size"
    )


def _exception_line(exc: BaseException, submission_dir: Path) -> str:
    """The exception's last line(s), with the sandbox's folder stripped (a SyntaxError names its file)."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return _clip(text.replace(str(submission_dir) + os.sep, ""))


def _clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} more characters]"


def _student_traceback(exc: BaseException, submission_dir: Path) -> str:
    """The traceback restricted to the student's own files, with paths relative to the submission."""
    prefix = str(submission_dir) + os.sep
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.startswith(prefix) and not f.filename.startswith(_GRADER_FILES)
    ]
    lines = []
    for frame in frames[-_TRACEBACK_FRAMES:]:
        lines.append(f'  File "{frame.filename.removeprefix(prefix)}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    lines.append(
        _exception_line(exc, submission_dir)
        if not isinstance(exc, TrialTimeout)
        else "TrialTimeout: deadline reached"
    )
    return _clip("\n".join(lines).replace(prefix, ""), 16000)
