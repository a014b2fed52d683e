"""The checked worker's watch for numerical derivatives, where a course refuses them.

Neither form of numerical derivative can be told from a derivation by its values: the complex step
(f'(x) = Im f(x + ih) / h) is exact to rounding, and central differences in float64 with a small step
are within float32's rounding (what float32 code is allowed). A course that asks for derivations by hand
says `numerical_derivatives: refuse` in its course.yaml; its checked worker then watches each checked
trial's calls (only those: they run once per graded hand-in), and a trial where it saw either form sends
its returns as refused, saying what was seen and where (judging/provenance.py gives the verdict,
`numerical`):

- complex numbers: a complex constant in code of the hand-in that ran (`1j`, `1e-20j`); a complex value
  passed to or returned by a Python function (the hand-in's own, numpy's: `np.imag(z)`, `np.sum(z)`), or
  held in a local variable of the hand-in's own functions when they return; a method called on a complex
  array or tensor (`z.sum()`);
- a perturbed input: an array or tensor of an input's shape (or a stack of them) that differs from that
  input in one or two entries, each by a small step (the `W + h * E_k` of finite differences), passed to a
  Python function, returned by one or held in the hand-in's locals;
- the watch touched: `sys.setprofile` and `threading.setprofile` are the grader's stand-ins here, and a
  call of either during a trial that would replace the watch is itself a sighting; so is a watch found
  replaced when the call returns (cProfile's `enable()`, C code).

Not closed, and said so in docs/verdicts.md: the watch is a profile function in the hand-in's process, so
code that digs the original `sys.setprofile` out of this module (gc; ctypes where the course allows it),
or that keeps its complex values and perturbed copies away from every Python function and local variable
(operators and ufuncs only), is not seen. Honest code has neither to show.
"""

from __future__ import annotations

import contextlib
import dis
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import numpy as np

_LOOKED_AT = 8  # items of a list or tuple looked at: a numerical derivative's values are arrays
_STACKED = 4  # copies of a stack looked at: each copy of a stacked finite difference moves one entry
# A finite difference moves one entry (two for a mixed one) by its step: at most 10% of the input's
# largest entry or of 1 (crude float32 steps are 1e-2). A smaller input is not looked at: an entry
# rounded or clipped differs from its input as a step would.
_MOVED_ENTRIES = 2
_STEP = 0.1
_SMALLEST = 4

# Taken before the hand-in's import, which sees the grader's stand-ins under these names (install).
_SET_PROFILE = sys.setprofile
_SET_THREADS_PROFILE = threading.setprofile


class Watch:
    """Numerical derivatives seen in the hand-in's calls during one trial: the first sighting, in words."""

    def __init__(self, submission_dir: Path) -> None:
        self._folder = str(submission_dir) + os.sep
        self._constants: dict[CodeType, tuple[str, int] | None] = {}
        self._inputs: dict[tuple[int, ...], list[tuple[str, np.ndarray]]] = {}
        self._on = False
        self.seen: str | None = None

    @contextlib.contextmanager
    def watching(self, inputs: Mapping[str, np.ndarray]) -> Iterator[None]:
        """Watch the calls made inside, on a trial of `inputs`: `seen` says what was seen, or None."""
        self.seen = None
        self._inputs = {}
        for name, array in inputs.items():
            if array.size >= _SMALLEST and array.dtype.kind == "f":
                self._inputs.setdefault(array.shape, []).append((name, array.astype(np.float64)))
        self._on = True
        _SET_PROFILE(self._profile)
        _SET_THREADS_PROFILE(self._profile)
        try:
            yield
        finally:
            self._on = False
            replaced = sys.getprofile() != self._profile
            _SET_PROFILE(None)
            _SET_THREADS_PROFILE(None)
        if self.seen is None and replaced:
            # Taken off below sys.setprofile's name: cProfile's enable() and disable(), C code
            self.seen = "the grader's watch for numerical derivatives replaced during the call (a profiler?)"
        if self.seen is None:
            self.seen = self._in_globals()

    def _in_globals(self) -> str | None:
        """What of a numerical derivative the hand-in's modules hold as globals (a complex unit made at
        import, where no trial watched), in words, or None."""
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if not isinstance(file, str) or not file.startswith(self._folder):
                continue
            for name, value in list(vars(module).items()):
                what = self._numerical(value)
                if what is not None:
                    return f"{what} in the global {name} ({file[len(self._folder) :]})"
        return None

    def stand_in(self, name: str, original: Callable[[Any], None]) -> Callable[[Any], None]:
        """`original` (sys.setprofile, threading.setprofile) as the hand-in sees it: during a trial, a call
        that would replace the watch is not done and is itself a sighting (threading's own start of a
        thread sets the watch it was given: that is let through)."""

        def set_profile(function: Any) -> None:
            if not self._on or function == self._profile:
                original(function)
            elif self.seen is None:
                self.seen = (
                    f"a call of {name}, which would remove the grader's watch for numerical derivatives"
                )

        return set_profile

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            owner = getattr(arg, "__self__", None)
            if owner is not None and _is_complex(owner):
                self._saw(frame, f"a complex {_kind(owner)} whose method {arg.__name__}() was called")
        elif event == "call":
            code = frame.f_code
            if code.co_filename.startswith(self._folder):
                if code not in self._constants:
                    self._constants[code] = _complex_constant(code)
                constant = self._constants[code]
                if constant is not None:
                    self._saw(frame, *constant)
                    return
            for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
                what = self._numerical(frame.f_locals.get(name))
                if what is not None:
                    # Said at the line that called: a function's own line at its call is its def's.
                    caller = frame.f_back
                    self._saw(
                        caller if caller is not None else frame,
                        f"{what} passed to {code.co_name}() as {name}",
                    )
                    return
        elif event == "return":
            what = self._numerical(arg)
            if what is not None:
                self._saw(frame, f"{what} returned by {frame.f_code.co_name}()")
            elif frame.f_code.co_filename.startswith(self._folder):
                for name, value in frame.f_locals.items():
                    what = self._numerical(value)
                    if what is not None:
                        self._saw(frame, f"{what} in {name}, in {frame.f_code.co_name}()")
                        return

    def _numerical(self, value: Any) -> str | None:
        """What makes `value` part of a numerical derivative, in words, or None."""
        if _is_complex(value):
            return f"a complex {_kind(value)}"
        if not self._inputs:
            return None
        array = _plain(value)
        if array is None or array.dtype.kind != "f" or array.size < _SMALLEST:
            return None
        for shape, inputs in self._inputs.items():
            copies: list[np.ndarray]
            if array.shape == shape:
                copies = [array]
            elif array.shape[1:] == shape:
                copies = list(array[:_STACKED])
            else:
                continue
            for name, given in inputs:
                if any(_moved_by_a_step(copy, given) for copy in copies):
                    return f"{name} with one entry moved by a small step (a finite difference)"
        return None

    def _saw(self, frame: FrameType, what: str, line: int | None = None) -> None:
        """`what` was seen, in `frame` (at `line` of its code, where not its current one): said with the
        hand-in's line it was seen at, and the watch off for the rest of the trial."""
        if self.seen is not None:
            return
        where = frame
        while where is not None and not where.f_code.co_filename.startswith(self._folder):
            where, line = where.f_back, None  # type: ignore[assignment]  # None ends the walk
        if where is not None:
            file = where.f_code.co_filename[len(self._folder) :]
            what = f"{what} ({file}, line {line or where.f_lineno})"
        self.seen = what
        _SET_PROFILE(None)  # one sighting decides the trial: the rest runs unwatched
        _SET_THREADS_PROFILE(None)


def _moved_by_a_step(copy: np.ndarray, given: np.ndarray) -> bool:
    with np.errstate(invalid="ignore", over="ignore"):
        difference = copy.astype(np.float64) - given
    moved = np.flatnonzero(difference)
    if not 0 < moved.size <= _MOVED_ENTRIES or not np.all(copy.flat[moved]):
        return False  # none moved, many moved, or entries set to 0 (a mask, as a ReLU's backward makes)
    scale = max(1.0, float(np.abs(given).max()))
    return bool(np.all(np.abs(difference.flat[moved]) <= _STEP * scale))


def _complex_constant(code: CodeType) -> tuple[str, int] | None:
    """The first complex constant `code` loads, in words, and its line; or None."""
    if not any(type(c) is complex for c in code.co_consts):
        return None
    for instruction in dis.get_instructions(code):
        if type(instruction.argval) is complex and instruction.opname == "LOAD_CONST":
            offset = instruction.offset
            lines = (line for start, end, line in code.co_lines() if start <= offset < end and line)
            return f"the complex constant {instruction.argval!r}", next(lines, None) or code.co_firstlineno
    return f"a complex constant in {code.co_name}()", code.co_firstlineno


def _plain(value: Any) -> np.ndarray | None:
    """`value` as a plain ndarray where it is an array or a tensor, read through the base classes (nothing
    the value says of itself is asked), or None."""
    if isinstance(value, np.ndarray):
        return np.ndarray.view(value, np.ndarray)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        with contextlib.suppress(Exception):  # a dtype numpy has not, a tensor off the cpu
            return np.asarray(torch.Tensor.numpy(torch.Tensor.detach(value)))
    return None


def _is_complex(value: Any) -> bool:
    """Whether `value` is a complex number, array or tensor (or a short list or tuple holding one), read
    through the base classes."""
    kind = type(value)
    if kind is complex or isinstance(value, np.complexfloating):
        return True
    if isinstance(value, np.ndarray):
        return np.ndarray.dtype.__get__(value).kind == "c"  # type: ignore[no-any-return]
    if kind is list or kind is tuple:
        return any(_is_complex(item) for item in value[:_LOOKED_AT])
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return bool(torch.Tensor.is_complex(value))
    return False


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return "array"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return "tensor"
    return "number" if type(value) is complex or isinstance(value, np.complexfloating) else "value"


WATCH: Watch | None = None  # set in a checked worker whose course refuses numerical derivatives


def install(submission_dir: Path) -> None:
    """The watch, for the life of the checked worker: before the hand-in's import."""
    global WATCH
    WATCH = Watch(submission_dir)
    setattr(sys, "setprofile", WATCH.stand_in("sys.setprofile", _SET_PROFILE))  # noqa: B010
    setattr(threading, "setprofile", WATCH.stand_in("threading.setprofile", _SET_THREADS_PROFILE))  # noqa: B010


_UNWATCHED = contextlib.nullcontext()  # reusable: every trial of a worker without the watch shares it


def watching(inputs: Mapping[str, np.ndarray]) -> contextlib.AbstractContextManager[None]:
    """The watch over one trial's calls on `inputs`, or nothing where there is none."""
    return WATCH.watching(inputs) if WATCH is not None else _UNWATCHED


def seen() -> str | None:
    """What the watch saw in the last trial's calls, or None."""
    return WATCH.seen if WATCH is not None else None
