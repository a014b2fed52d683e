"""What a call returned, as plain numeric arrays."""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from grader.sandbox.protocol import EXTENDED, NUMERIC_DTYPES, numeric_dtype_name
from grader.sandbox.worker.channel import Converted
from grader.sandbox.worker.precision import WIDER_THAN_FLOAT64
from grader.text import counted

MAX_RETURN_BYTES = 64 << 20


def type_name(value: Any) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def converted(name: str, value: Any) -> Converted:
    try:
        read = to_array(value)
    except Exception as exc:  # a subclass's own code, run by torch or numpy while reading it
        read = (
            f"returned a {type_name(value)} that could not be read as a plain array "
            f"({type(exc).__name__}); return a numpy.ndarray or a torch.Tensor, not a subclass"
        )
    if isinstance(read, str):
        return name, None, read, None, None
    array, label, source = read
    # Told by the value's own type, which to_array accepts only exactly (no subclass): the grader says
    # "graded as the array it describes" of a list, and nothing of an array.
    python = type(value).__name__ if type(value) in _PYTHON_FORMS else None
    return name, label, source, python, array


def to_array(value: Any) -> tuple[np.ndarray, str, str] | str:
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
        # three returns in every trial: cheaper than the way through the base class below, the two checks
        # above included.
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
        source = "numpy.ndarray" if type(value) is np.ndarray else f"{type_name(value)} (numpy.ndarray)"
        too_big = _too_big(array.size, array.nbytes, source)
        if too_big:  # checked before any copy: copying a huge array could exhaust the memory limit itself
            return too_big
        label = numeric_dtype_name(array.dtype) or str(array.dtype)
        if array.dtype == np.longdouble and WIDER_THAN_FLOAT64:
            array, label = array.astype(np.float64), EXTENDED
    elif isinstance(value, np.generic):
        if type(value) not in _NUMPY_SCALARS and type(value) is not np.longdouble:
            return f"returned a {type_name(value)}, a subclass of a numpy scalar; return a numpy array"
        array = np.asarray(value)
        label = numeric_dtype_name(array.dtype) or str(array.dtype)
        if array.dtype == np.longdouble and WIDER_THAN_FLOAT64:
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
        return f"returned a {type_name(value)}; return a numpy array, a torch tensor or a number"
    if numeric_dtype_name(array.dtype) is None:
        return f"returned an array of dtype {array.dtype}; a numeric array is expected"
    return array, label, source


def _from_tensor(torch: Any, value: Any) -> tuple[np.ndarray, str, str] | str:
    """A tensor (or a subclass of one) as to_array gives it; called with __torch_function__ disabled."""
    base = torch._C.TensorBase
    # A fresh tensor object of the exact class on the same data: no attribute of the student's object (its
    # class's methods, its instance __dict__) is looked up from here on.
    tensor = base.as_subclass(base.detach(value), torch.Tensor)
    source = "torch.Tensor" if type(value) is torch.Tensor else f"{type_name(value)} (torch.Tensor)"
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
_PYTHON_FORMS = (*_PYTHON_NUMBERS, list, tuple)
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
                    f"returned a ragged {kind}: {where} is a {type_name(item)} where a list is due, as at "
                    f"{_position(0, shape)}; a list must describe a rectangular array: return a numpy array"
                )
            if len(item) != length:
                return (
                    f"returned a ragged {kind}: {_position(index, shape)} has {counted(len(item), 'item')} "
                    "where "
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
            f"returned a {kind} whose entry {where} is a {type_name(item)}; a list must hold only numbers: "
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
    if array.dtype == np.longdouble and WIDER_THAN_FLOAT64:
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
        f"returned {what} of {counted(entries, 'entry')} ({nbytes >> 20} MiB, more than the "
        f"{MAX_RETURN_BYTES >> 20} MiB one return may be): far beyond any expected size"
    )
