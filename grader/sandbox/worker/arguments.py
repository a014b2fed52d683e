"""The arguments of a trial's calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from grader.sandbox.protocol import Run
from grader.sandbox.worker.precision import LIFTED, WIDER_THAN_FLOAT64
from grader.text import counted

Builder = Callable[[Mapping[str, np.ndarray], dict[str, Any]], Any]  # (trial's inputs, bound) -> an argument


_PLANS_KEPT = 16  # a sandboxed worker has one job; the grader's own process a notebook's, one at a time
_argument_plans: dict[tuple[int, Run, bool], tuple[dict[str, Any], list[list[Builder]]]] = {}


def arguments_of(job: dict[str, Any], run: Run, plain: bool = False) -> list[list[Builder]]:
    """Per call of the job, a function per argument that builds it for a trial: worked out once per job
    and run, not per trial (deciding each input's copy, narrowing and type anew was a visible share of
    the worker loop's samples in bench/trial_overhead.py). Kept with the job they were made for: the
    grader's own process (in_process.py) runs other jobs too.

    `plain`: a rerun's lifted inputs as exact ndarrays of the lifted dtype, not of the class that lifts
    `astype` (trial.py's second try, for code whose type checks refuse a subclass)."""
    kept = _argument_plans.get((id(job), run, plain))
    if kept is not None and kept[0] is job:
        return kept[1]
    plans = []
    bound: set[str] = set()  # names the calls before this one bind
    for call in job["calls"]:
        plans.append([_argument(arg, job, run, frozenset(bound), plain) for arg in call["args"]])
        bound.update(call["binds"] or ())
    if len(_argument_plans) >= _PLANS_KEPT:
        _argument_plans.clear()
    _argument_plans[(id(job), run, plain)] = (job, plans)
    return plans


def _argument(arg: Any, job: dict[str, Any], run: Run, bound: frozenset[str], plain: bool) -> Builder:
    if isinstance(arg, str):
        return _fresh(arg, job, run, bound, plain)
    if isinstance(arg, list):
        parts = [_fresh(name, job, run, bound, plain) for name in arg]
        return lambda inputs, values: tuple(part(inputs, values) for part in parts)
    if "dict" in arg:
        items = [
            (
                key,
                _argument(item["input"], job, run, bound, plain) if "input" in item else None,
                item.get("value"),
            )
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
        return lambda inputs, values: sampler(methods, inputs)
    given = arg["value"]
    return lambda inputs, values: literal(given)


def _fresh(name: str, job: dict[str, Any], run: Run, bound: frozenset[str], plain: bool) -> Builder:
    """An input as a trial's call gets it: a fresh copy, narrowed or lifted as the run asks, handed out as
    the exercise says; or what an earlier call bound to the name (a cache), passed on as it is."""
    if name in bound:
        return lambda inputs, values: values[name]
    how = job["handed"].get(name, _AS_NUMPY_FLOAT64)
    kind = how["type"]
    if how["dtype"] == "bool":  # a 0/1 mask as booleans: no precision to narrow or lift
        return lambda inputs, values: handed(inputs[name] != 0, kind)
    # A rerun checks the same code, lifted.
    lifted = LIFTED.get(run)
    as_first = run in (Run.FIRST, Run.AGAIN)
    narrow = job["inputs_as"] or (how["dtype"] if how["dtype"] != "float64" else None)

    def copied(array: np.ndarray) -> np.ndarray:
        if array.dtype.kind == "f" and lifted is not None:
            return lifted.plain(array) if plain else lifted.of(array)
        if array.dtype.kind == "f" and as_first and narrow is not None:
            return np.asarray(array.astype(narrow))
        return np.asarray(array.copy())

    if kind == "numpy" and lifted is None and narrow is None:  # the common case: a plain copy
        return lambda inputs, values: inputs[name].copy()
    return lambda inputs, values: handed(copied(inputs[name]), kind)


def literal(value: Any) -> Any:
    """A literal argument, a list rebuilt at every call: the job's own must not change under a student's
    code that appends to what it was handed."""
    return [literal(item) for item in value] if isinstance(value, list) else value


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
                f"{counted(count, 'draw')} per trial, more than correct code takes; draw only the samples "
                "the task asks for"
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
        return literal(self._value)

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


def sampler(methods: dict[str, dict[str, Any]], inputs: Mapping[str, np.ndarray]) -> _Sampler:
    """A fresh sampler for one call: its draws start at the trial's first, on every run of the trial."""
    built: dict[str, _Draws | _Constant] = {}
    for name, how in methods.items():
        if "draws" in how:
            built[name] = _Draws(name, tuple(int(v) for v in inputs[how["draws"]].reshape(-1).tolist()))
        else:
            built[name] = _Constant(name, how["value"])
    return _Sampler(built)


_AS_NUMPY_FLOAT64 = {"type": "numpy", "dtype": "float64"}  # how an input not in the job's "handed" goes


def handed(value: np.ndarray, kind: str) -> Any:
    """An input as the exercise hands it out: a numpy array, a torch tensor on the cpu, a Python number."""
    if kind == "python":
        return value.item()  # float, or int for an integer input; float64 even in an extended rerun
    if kind == "torch":
        import torch

        if value.dtype == np.longdouble and WIDER_THAN_FLOAT64:
            value = value.astype(np.float64)  # torch has nothing wider: the rerun stays at float64
        return torch.from_numpy(np.ascontiguousarray(value).view(np.ndarray))
    return value
