"""Reruns above the precision the code was written in."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from grader.sandbox.protocol import Run


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

    @classmethod
    def plain(cls, array: np.ndarray) -> np.ndarray:
        """A copy of `array` in this class's precision as an exact ndarray, for code that refuses a
        subclass (`type(x) is np.ndarray`): its own `astype` no longer lifts, its dtype is the same."""
        return np.asarray(array.astype(cls._lifted_to))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = np.dtype(dtype)
        if wanted.kind == "f" and wanted.itemsize < self._lifted_to.itemsize:
            wanted = self._lifted_to
        return super().astype(wanted, *args, **kwargs)


class _LiftedToExtended(_Lifted):
    _lifted_to = np.dtype(np.longdouble)


WIDER_THAN_FLOAT64 = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps
LIFTED: dict[Run, type[_Lifted]] = {Run.FLOAT64: _Lifted}
if WIDER_THAN_FLOAT64:  # 80-bit on x86-64 Linux, 128-bit on aarch64; float64 itself on Windows and macOS
    LIFTED[Run.EXTENDED] = _LiftedToExtended


@contextlib.contextmanager
def float64_everywhere() -> Iterator[None]:
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
