"""What a sandboxed run hands back to the grader: immutable values, one per pass of the worker.

The worker runs in passes on the grader's word: first every trial, then (after the grader has looked at
the first pass) the reruns and probes it asks for, at float64 and in extended precision. Each pass comes
back as its own value; nothing is filled in while another is read. A first pass stopped by a trial's
deadline (`Pass.overrun`) is carried on by a fresh worker from that trial, whose report then holds both
(`WorkerReport.after`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, overload

import numpy as np

from grader.exercise.trials import Trial
from grader.outcomes import FailedCell, Failure, IsolationUsed
from grader.sandbox import isolation
from grader.sandbox.payload import ReturnedArray, ReturnProblem
from grader.sandbox.protocol import Column


@dataclass(frozen=True)
class Returned:
    """An array a trial returned, with the worker's description of it (name, dtype, where it came from)."""

    description: ReturnedArray
    array: np.ndarray

    @classmethod
    def of(cls, description: ReturnedArray, array: np.ndarray) -> Returned:
        """Built without the generated __init__'s frozen assignments: one for every return of every trial,
        its dict set whole, cheaper than updating the object's own attributes or going through __init__."""
        returned = object.__new__(cls)
        object.__setattr__(returned, "__dict__", {"description": description, "array": array})
        return returned

    @property
    def name(self) -> str:
        return self.description.name

    @property
    def dtype(self) -> str:
        """As the student returned it (bfloat16 travels as float32)."""
        return self.description.dtype

    @property
    def source(self) -> str:
        return self.description.source

    @property
    def python(self) -> str | None:
        """The Python type the array was returned as (a list, a float), None for an array or tensor."""
        return self.description.python


ReturnItem = Returned | ReturnProblem  # a return of one trial: an array, or what was wrong with it


@dataclass(frozen=True)
class TrialOutput:
    index: int
    by_name: Mapping[str, ReturnItem]  # every return of the exercise, in its order
    seconds: float


class Returns(Mapping[int, Returned]):
    """One return's arrays over a pass, by trial in the order they came, kept as columns (the trials, the
    worker's description of each, the arrays): the judging steps take the columns; a trial's `Returned`
    is made only when one is asked for (a class's hand-ins pass nearly every trial, and an object per
    trial and return cost more than comparing its entries did: 33,000 for a CS231n A2 hand-in).

    The arrays stay the frames' columns they came in (protocol.Column) until one of them is asked for:
    judging a pass compares them end to end (`joined`), and a view per array (CS231n A2: 10,500 per
    hand-in) was the largest part of reading the worker's results."""

    def __init__(self) -> None:
        self.trials: list[int] = []
        self.descriptions: list[ReturnedArray] = []
        self._arrays: list[np.ndarray] = []
        self._columns: list[Column] = []  # after `_arrays`: whole columns, not yet split into arrays
        self._starts: list[int] = []  # where each of `_columns` begins, counted from the end of `_arrays`
        self._where: dict[int, int] | None = None
        self._joined: tuple[np.ndarray, np.ndarray] | None = None  # `joined()`, once made

    @property
    def arrays(self) -> list[np.ndarray]:
        """Every array, by trial in the order they came."""
        if self._columns:
            for column in self._columns:
                self._arrays += column.arrays()
            self._columns, self._starts = [], []
        return self._arrays

    def deferred(self) -> Sequence[np.ndarray]:
        """`arrays`, split from the columns only if one of them is asked for."""
        return _Deferred(self)

    def add(self, trials: list[int], descriptions: list[ReturnedArray], arrays: list[np.ndarray]) -> None:
        self.arrays.extend(arrays)  # after what came before, columns split first
        self.trials += trials
        self.descriptions += descriptions
        self._where = self._joined = None

    def add_column(self, trials: list[int], descriptions: list[ReturnedArray], column: Column) -> None:
        """A column's arrays, one per trial, kept whole."""
        self._starts.append(len(self.trials) - len(self._arrays))
        self.trials += trials
        self.descriptions += descriptions
        self._columns.append(column)
        self._where = self._joined = None

    def joined(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Every array's entries end to end (C order) and the shapes, one row each, where they are still
        the columns they came in, of one dtype and number of dimensions; else None. Made once: comparing
        a pass and checking its shapes both ask."""
        columns = self._columns
        if self._joined is not None or self._arrays or not columns:
            return self._joined
        first = columns[0]
        if any(
            c.flat.dtype != first.flat.dtype or c.shapes.shape[1] != first.shapes.shape[1] for c in columns
        ):
            return None
        if len(columns) == 1:
            self._joined = first.flat, first.shapes
        else:
            self._joined = (
                np.concatenate([c.flat for c in columns]),
                np.concatenate([c.shapes for c in columns]),
            )
        return self._joined

    def _array(self, k: int) -> np.ndarray:
        """The k-th array, without splitting every column."""
        if k < len(self._arrays):
            return self._arrays[k]
        k -= len(self._arrays)
        which = bisect.bisect_right(self._starts, k) - 1
        return self._columns[which].array(k - self._starts[which])

    def restricted(self, kept: Collection[int]) -> Returns:
        """The same columns for the trials in `kept` only."""
        chosen = [k for k, trial in enumerate(self.trials) if trial in kept]
        returns = Returns()
        returns.add(
            [self.trials[k] for k in chosen],
            [self.descriptions[k] for k in chosen],
            [self._array(k) for k in chosen],
        )
        return returns

    def _index(self) -> dict[int, int]:
        if self._where is None:
            self._where = {trial: k for k, trial in enumerate(self.trials)}
        return self._where

    def __getitem__(self, trial: int) -> Returned:
        k = self._index()[trial]
        return Returned.of(self.descriptions[k], self._array(k))

    def __contains__(self, trial: object) -> bool:
        return trial in self._index()

    def __iter__(self) -> Iterator[int]:
        return iter(self.trials)

    def __len__(self) -> int:
        return len(self.trials)


class _Deferred(Sequence[np.ndarray]):
    """A return's arrays as a sequence that splits its columns on the first look at one (Returns.deferred):
    for a comparison that needs them only where the columns are not the shapes due."""

    def __init__(self, returns: Returns) -> None:
        self._returns = returns

    @overload
    def __getitem__(self, k: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, k: slice) -> Sequence[np.ndarray]: ...

    def __getitem__(self, k: int | slice) -> np.ndarray | Sequence[np.ndarray]:
        return self._returns.arrays[k]

    def __len__(self) -> int:
        return len(self._returns)


Layout = tuple[ReturnedArray | ReturnProblem, ...]  # what each return of a trial was, in the exercise's order


class TrialOutputs(Mapping[int, TrialOutput]):
    """A pass's trials that returned, by trial in the order they came: each one's seconds and layout, its
    arrays in the returns' columns (`Returns`); a trial's `TrialOutput` is made when it is asked for."""

    def __init__(self, returns: Mapping[str, Returns]) -> None:
        self.returns = returns
        self._seconds: dict[int, float] = {}
        self._layouts: dict[int, Layout] = {}

    def add(self, trials: list[int], seconds: list[float], layouts: list[Layout]) -> None:
        self._seconds.update(zip(trials, seconds, strict=True))
        self._layouts.update(zip(trials, layouts, strict=True))

    def restricted(self, kept: Collection[int]) -> TrialOutputs:
        """The trials in `kept` only, with their returns' columns."""
        outputs = TrialOutputs({name: r.restricted(kept) for name, r in self.returns.items()})
        trials = [trial for trial in self._seconds if trial in kept]
        outputs.add(trials, [self._seconds[t] for t in trials], [self._layouts[t] for t in trials])
        return outputs

    def __getitem__(self, trial: int) -> TrialOutput:
        seconds, layout = self._seconds[trial], self._layouts[trial]
        by_name: dict[str, ReturnItem] = {
            kind.name: kind if isinstance(kind, ReturnProblem) else self.returns[kind.name][trial]
            for kind in layout
        }
        return TrialOutput(trial, by_name, seconds)

    def __contains__(self, trial: object) -> bool:
        return trial in self._seconds

    def __iter__(self) -> Iterator[int]:
        return iter(self._seconds)

    def __len__(self) -> int:
        return len(self._seconds)


@dataclass(frozen=True)
class Overrun:
    """A call past one of its deadlines, as measured: a timeout the machine's load may have caused, until
    a second run in a fresh worker confirms it."""

    trial: int
    deadline: Literal["cpu", "wall"]  # its CPU deadline, or its wall-clock cap (WALL_CAP_FACTOR times it)
    allowed: float  # the CPU seconds the call had: trial_seconds, or first_call_seconds
    cpu_seconds: float  # what it used, as the worker measured it (for one killed: at its last check)
    first_call: bool  # the first call after the import
    stopped: bool = True  # False: it did not stop when asked, and the grader killed the worker


@dataclass(frozen=True)
class Pass:
    """One pass of the worker: what each trial returned, or why it did not."""

    outputs: Mapping[int, TrialOutput] = field(default_factory=dict)
    failures: Mapping[int, Failure] = field(default_factory=dict)
    # What ended the pass before all its trials: for the first pass, a failure of the whole submission.
    stopped: Failure | None = None
    # Set when a trial's deadline stopped a first pass, and not yet confirmed by a second run.
    overrun: Overrun | None = None
    # The hand-in imported torch in a worker without it (under a name built from pieces): `stopped` says
    # so, and the grading runs it again in a worker with torch (sandbox/torch_use.py), once.
    torch_wanted: bool = False
    # The arrays returned, by return and trial, as `returned` gives them: collected by the reader as the
    # trials arrive where it can (runner.py), else worked out from `outputs` on first use.
    by_return: dict[str, Returns] = field(default_factory=dict, repr=False, compare=False)

    def returned(self, name: str) -> Returns:
        """The arrays returned as `name`, by trial in the order they came (trials where it was a problem left
        out), as columns: the reader's where it kept them, else worked out once per pass from `outputs`."""
        kept = self.by_return.get(name)
        if kept is None:
            kept = Returns()
            outputs = self.outputs.items()
            found = [(i, item) for i, output in outputs if type(item := output.by_name[name]) is Returned]
            kept.add([i for i, _ in found], [r.description for _, r in found], [r.array for _, r in found])
            self.by_return[name] = kept
        return kept

    def restricted(self, kept: Collection[int]) -> Pass:
        """The pass for the trials in `kept` only (the others' results and failures left out)."""
        failures = {i: f for i, f in self.failures.items() if i in kept}
        if isinstance(self.outputs, TrialOutputs):
            outputs = self.outputs.restricted(kept)
            return replace(self, outputs=outputs, failures=failures, by_return=dict(outputs.returns))
        narrowed = {i: o for i, o in self.outputs.items() if i in kept}
        return replace(self, outputs=narrowed, failures=failures, by_return={})

    def before_overrun(self) -> Pass:
        """What the pass learnt before the call that overran: what a fresh worker running on keeps."""
        overran = None if self.overrun is None else self.overrun.trial
        return Pass(self.outputs, {i: f for i, f in self.failures.items() if i != overran})

    def relocated(self, where: Callable[[Failure], Failure]) -> Pass:
        return replace(
            self,
            failures={i: where(f) for i, f in self.failures.items()},
            stopped=None if self.stopped is None else where(self.stopped),
        )


@dataclass(frozen=True)
class RerunRequest:
    """What the worker runs after its first pass: trials again as they first ran (nothing lifted: the same
    call, to see the same answer), trials again at float64, probes (new inputs) at float64, and trials
    again in numpy's extended precision (for code that computed in float64 already)."""

    trials: tuple[int, ...] = ()
    probes: tuple[Trial, ...] = ()
    extended: tuple[int, ...] = ()
    again: tuple[int, ...] = ()


def returned_shapes(first: Pass, request: RerunRequest) -> list[tuple[int, list[list[int] | None]]]:
    """What the first pass returned on each trial to rerun, as shapes (None for a return it did not
    give): the worker tries a rerun that returns other shapes (or raises) once more (worker/trial.py).
    Sent with the request: the worker keeps nothing of its first pass, which costs every hand-in."""
    shapes = []
    for index in sorted({*request.trials, *request.extended}):
        output = first.outputs.get(index)
        if output is not None:
            by_name = output.by_name.values()
            shapes.append(
                (index, [list(i.array.shape) if isinstance(i, Returned) else None for i in by_name])
            )
    return shapes


@dataclass(frozen=True)
class WorkerReport:
    """Both passes of one submission's worker, and what it printed."""

    first: Pass
    reruns: Pass  # at float64, probes included
    extended: Pass = field(default_factory=Pass)  # in extended precision
    again: Pass = field(default_factory=Pass)  # as the first pass ran them
    stdout: str = ""
    stderr: str = ""
    output_bytes: int = 0
    seconds: float = 0.0
    import_seconds: float = 0.0  # of the hand-in, in the worker
    skipped_imports: tuple[str, ...] = ()  # a `definitions` notebook's imports of modules not there
    failed_cells: tuple[FailedCell, ...] = ()  # a notebook run whole: cells skipped
    isolation: IsolationUsed = field(default_factory=lambda: isolation.current().used())

    @property
    def fatal(self) -> Failure | None:
        """Why the submission as a whole produced nothing more (it did not import, crashed, ran out)."""
        return self.first.stopped

    def relocated(self, where: Callable[[Failure], Failure]) -> WorkerReport:
        """The same report with every failure's text rewritten by `where` (a notebook's cells and lines)."""
        return replace(
            self,
            first=self.first.relocated(where),
            reruns=self.reruns.relocated(where),
            extended=self.extended.relocated(where),
            again=self.again.relocated(where),
        )

    def after(self, earlier: WorkerReport) -> WorkerReport:
        """This report, of a worker that ran on from where `earlier`'s first pass overran a deadline, with
        what the earlier worker printed and the time it took (its first pass is already in this one's)."""
        return replace(
            self,
            stdout=earlier.stdout + self.stdout,
            stderr=earlier.stderr + self.stderr,
            output_bytes=earlier.output_bytes + self.output_bytes,
            seconds=earlier.seconds + self.seconds,
            import_seconds=earlier.import_seconds,
            skipped_imports=earlier.skipped_imports,
            failed_cells=earlier.failed_cells,
        )
