"""Wire format between the grader and its sandboxed worker: framed JSON headers plus raw array bytes.

Never pickle: a frame is `MAGIC | header length | payload length | JSON header | payload`, and the
header declares each array's dtype (from a fixed numeric allow-list) and shape, which must account for
the payload byte for byte: `"arrays"` lists runs of consecutive arrays of one dtype, each as
`{"dtype": name, "shapes": [shape, ...]}`; then `"columns"` (optional) lists columns, each many arrays of
one dtype and one number of dimensions end to end, as `{"dtype": name, "ndim": k, "count": m}`, whose
bytes in the payload are their shapes (m × k little-endian int64) followed by their entries. A column is
decoded into one flat array, its shapes and its offsets (`Column`): a trial's return travels as a stretch
of it, with no JSON and no object of its own. This module is imported by the worker, so it uses only
stdlib and numpy.
"""

from __future__ import annotations

import array
import json
import os
import struct
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

import numpy as np

MAGIC = b"GRD1"
CLOSED_CHANNEL_EXIT = 120  # a worker whose result channel the submission closed (as Python's own exit status)
_PREFIX = struct.Struct("<4sII")
# The shared page where the worker notes the trial it is running, and the CPU seconds that trial has
# used so far (at its last deadline check): what the grader tells of a worker it had to kill.
PROGRESS = struct.Struct("<qd")
NUMERIC_DTYPES = frozenset(
    [
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    ]
)
_NAME_OF = {np.dtype(name): name for name in NUMERIC_DTYPES}  # dtype.name is slow on the per-trial path
_WIRE_DTYPES = {name: np.dtype(name).newbyteorder("<") for name in NUMERIC_DTYPES}
_BIG_ENDIAN = sys.byteorder == "big"
_SHAPE_DTYPE = np.dtype("<i8")  # a column's shapes
# Dtypes already in wire order, by name: on a little-endian machine, the native ones (bool's order is none).
_NATIVE_NAME = {} if _BIG_ENDIAN else {np.dtype(name): name for name in NUMERIC_DTYPES}
# A failure's location (outcomes.Location), as the worker sends it and the grader checks it.
MAX_LOCATION_FILE = 4096  # PATH_MAX
MAX_LOCATION_FUNCTION = 1000
MAX_LOCATION_LINE = 10_000_000
MAX_HEADER_BYTES = 1 << 20
MAX_PAYLOAD_BYTES = 256 << 20
MAX_DIMS = 8
# Columns in one frame: the worker's Channel starts a new one only where a return changes its dtype or
# number of dimensions, and sends the frame before it would hold more. Checking a column costs the grader
# ~22 µs whatever its size (a frame of 256 one-entry columns, 14 KB: 5.6 ms to decode, 2026-12-04), so a
# frame is bounded in that work as in its bytes.
MAX_COLUMNS = 256


# The worker's label for arrays it computed in numpy's extended precision (80-bit on x86-64): they travel
# rounded to float64, which the reference is computed in.
EXTENDED = "longdouble"


class Run(Enum):
    """Which run of a trial a result belongs to."""

    FIRST = "first"  # as the student's code runs it
    FLOAT64 = "float64"  # again, with every float lifted to at least float64
    EXTENDED = "extended"  # again, numpy's floats in extended precision: above float64
    # Again as the first run ran it, nothing lifted: code that answers the same inputs otherwise than it
    # did (state kept between calls) shows here, and its changed answer is no unstable formula's.
    AGAIN = "again"


class ProtocolError(Exception):
    """A frame that is malformed, oversized, or declares arrays its payload does not hold."""


@dataclass(frozen=True)
class Column:
    """Arrays of one dtype and number of dimensions, end to end: array k is
    `flat[offsets[k]:offsets[k + 1]].reshape(shapes[k])`."""

    flat: np.ndarray  # native byte order, aligned
    shapes: np.ndarray  # int64, (count, ndim)
    offsets: np.ndarray  # intp, (count + 1,), from 0 to flat.size, non-decreasing

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @cached_property
    def _split(self) -> tuple[list[int], list[tuple[int, ...]]]:
        """Where each array begins and ends in `flat`, and its shape, as Python values, worked out once."""
        return self.offsets.tolist(), list(map(tuple, self.shapes.tolist()))

    def array(self, k: int) -> np.ndarray:
        """Array k, a view of `flat`."""
        bounds, shapes = self._split
        return self.flat[bounds[k] : bounds[k + 1]].reshape(shapes[k])

    def arrays(self) -> list[np.ndarray]:
        """Every array, as views of `flat` (a view each: for the few steps that judge trial by trial)."""
        flat, (bounds, shapes) = self.flat, self._split
        return [flat[a:b].reshape(shape) for a, b, shape in zip(bounds, bounds[1:], shapes, strict=False)]


@dataclass(frozen=True)
class Frame:
    header: dict[str, Any]
    arrays: tuple[np.ndarray, ...]
    columns: tuple[Column, ...] = ()


class ColumnWriter:
    """A column as the worker builds it, array by array: its shapes and entries appended to flat buffers
    (one append each, no object per array), encoded as one stretch of a frame's payload."""

    __slots__ = ("count", "dtype", "entries", "ndim", "shapes")

    def __init__(self, dtype: str, ndim: int) -> None:
        self.dtype = dtype  # the allow-listed wire name
        self.ndim = ndim
        self.count = 0
        self.shapes = array.array("q")
        self.entries = bytearray()

    def description(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "ndim": self.ndim, "count": self.count}

    def append(self, values: np.ndarray) -> None:
        """An array of the column's dtype (in wire order) and ndim: copied now, as it is at this moment."""
        self.shapes.extend(values.shape)
        # A C-contiguous array's buffer as it is (one copy); any other layout through tobytes (C order).
        self.entries += values.data if values.flags.c_contiguous else values.tobytes()
        self.count += 1

    def payload(self) -> bytes:
        return column_bytes(self.shapes) + self.entries


WireArray = tuple[str, list[int], bytes]  # allow-listed dtype name, shape, little-endian C-order bytes


def to_wire(array: np.ndarray) -> WireArray:
    """An array as it travels: its bytes taken now (a copy), so that later changes to it do not travel."""
    name, array = little_endian(array)
    return name, list(array.shape), array.tobytes()  # tobytes() is C order whatever the array's layout


def little_endian(array: np.ndarray) -> tuple[str, np.ndarray]:
    """An array's allow-listed dtype name, and the array in little-endian order (itself, nearly always)."""
    name = _NATIVE_NAME.get(array.dtype)  # the common case: a native dtype on a little-endian machine
    if name is not None:
        return name, array
    name = numeric_dtype_name(array.dtype)
    if name is None:
        raise ProtocolError(f"dtype {array.dtype} cannot travel; numeric dtypes only")
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and _BIG_ENDIAN):
        array = array.astype(array.dtype.newbyteorder("<"))
    return name, array


def column_bytes(values: array.array[Any]) -> bytes:
    """A flat buffer of the worker's (trial numbers, seconds, kinds) in little-endian order."""
    if _BIG_ENDIAN:
        values = array.array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def encode(header: dict[str, Any], arrays: Sequence[np.ndarray] = ()) -> bytes:
    return encode_wire(header, [to_wire(np.asarray(a)) for a in arrays])


def encode_wire(
    header: dict[str, Any], arrays: Sequence[WireArray], columns: Sequence[ColumnWriter] = ()
) -> bytes:
    runs: list[dict[str, Any]] = []  # consecutive arrays of one dtype, described together
    for name, shape, _ in arrays:
        if runs and runs[-1]["dtype"] == name:
            runs[-1]["shapes"].append(shape)
        else:
            runs.append({"dtype": name, "shapes": [shape]})
    described = {**header, "arrays": runs}
    if columns:
        described["columns"] = [column.description() for column in columns]
    head = json.dumps(described, separators=(",", ":")).encode()
    payload = b"".join([*(data for _, _, data in arrays), *(column.payload() for column in columns)])
    return _PREFIX.pack(MAGIC, len(head), len(payload)) + head + payload


def _decode_body(head: bytes, payload: bytearray) -> Frame:
    """The frame a header and payload describe; every way they can be malformed is a ProtocolError.

    The bytes are the worker's, so the student's: nothing they declare is trusted before it is checked
    against what arrived, and any error numpy or json raises on them (a shape too big for numpy's index
    type, JSON nested past the interpreter's recursion limit, a number of a million digits) is caught here,
    so that no frame can raise anything else into the grader.
    """
    try:
        return _decode_checked(head, payload)
    except ProtocolError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError, KeyError, IndexError) as exc:
        raise ProtocolError(f"malformed frame ({type(exc).__name__}: {exc!s:.200})") from None


def _decode_checked(head: bytes, payload: bytearray) -> Frame:
    try:
        header = json.loads(head)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise ProtocolError("header must be an object with an 'arrays' list")
    arrays: list[np.ndarray] = []
    offset = 0
    # The payload is the frame's own copy (a bytearray slice): the arrays view it, writable, instead of
    # each taking a copy of its own. Whether a view is aligned follows from the buffer's address.
    base = np.frombuffer(payload, dtype=np.uint8).ctypes.data if payload else 0
    for run in header.pop("arrays"):
        # A run of arrays of one dtype lies in one stretch of the payload: one view of it, and each array
        # a slice of that (a view per array, for the thousands of arrays of a graph2 hand-in, each way).
        dtype, shapes, counts = _run_spec(run)
        total = sum(counts)
        nbytes = total * dtype.itemsize
        if offset + nbytes > len(payload):
            raise ProtocolError(f"{len(shapes)} arrays of {dtype.name} need {nbytes} bytes; payload is short")
        flat = _view(payload, dtype, total, offset, base)
        start = 0
        for shape, count in zip(shapes, counts, strict=True):
            arrays.append(flat[start : start + count].reshape(shape))
            start += count
        offset += nbytes
    columns = []
    described = header.pop("columns", [])
    if type(described) is not list or len(described) > MAX_COLUMNS:
        raise ProtocolError(f"'columns' must be a list of at most {MAX_COLUMNS} columns")
    for column in described:
        decoded, offset = _decode_column(column, payload, offset, base)
        columns.append(decoded)
    if offset != len(payload):
        raise ProtocolError(f"payload holds {len(payload) - offset} bytes no array declares")
    return Frame(header, tuple(arrays), tuple(columns))


def _view(payload: bytearray, dtype: np.dtype, count: int, offset: int, base: int) -> np.ndarray:
    """`count` entries of `dtype` at `offset` of the payload: a view where it can be, in native order."""
    flat: np.ndarray = np.ndarray((count,), dtype=dtype, buffer=payload, offset=offset)
    if not dtype.isnative:
        flat = flat.astype(dtype.newbyteorder("="))
    elif (base + offset) % dtype.alignment:  # numpy copes, but slowly, and torch.from_numpy not at all
        flat = flat.copy()
    return flat


def _decode_column(column: Any, payload: bytearray, offset: int, base: int) -> tuple[Column, int]:
    """A column described as {dtype, ndim, count} at `offset` of the payload, and where the next begins.
    Its shapes are the worker's: each is checked as a run's shapes are, as whole arrays at once."""
    if type(column) is not dict or len(column) != 3:
        raise ProtocolError(f"a column must be {{dtype, ndim, count}}, got {column!r:.80}")
    name, ndim, count = column.get("dtype"), column.get("ndim"), column.get("count")
    dtype = _WIRE_DTYPES.get(name) if type(name) is str else None
    if dtype is None:
        raise ProtocolError(f"dtype {name!r:.40} is not an allowed numeric dtype")
    if type(ndim) is not int or not 0 <= ndim <= MAX_DIMS:
        raise ProtocolError(f"a column's ndim {ndim!r:.40} is not a number of dimensions up to {MAX_DIMS}")
    # Every array takes at least a byte: of its shape, or of its one entry where it has no dimension.
    if type(count) is not int or not 1 <= count <= len(payload) - offset:
        raise ProtocolError(f"a column's count {count!r:.40} is not a number of arrays the payload can hold")
    shape_bytes = count * ndim * 8
    if offset + shape_bytes > len(payload):
        raise ProtocolError(f"a column of {count} shapes of {ndim} needs {shape_bytes} bytes; payload short")
    shapes = _view(payload, _SHAPE_DTYPE, count * ndim, offset, base).reshape(count, ndim)
    offset += shape_bytes
    if shapes.size and (shapes.min() < 0 or shapes.max() > MAX_PAYLOAD_BYTES):
        raise ProtocolError(f"a column's shapes hold a size outside 0..{MAX_PAYLOAD_BYTES}")
    # Products capped as they grow (each factor at most 2**28, the cap 2**28 + 1: never past int64).
    counts = np.ones(count, dtype=np.int64)
    spread = np.ones(count, dtype=np.int64)  # the product but zeros: no array declares more entries
    for axis in range(ndim):
        sizes = shapes[:, axis]
        counts = np.minimum(counts * sizes, MAX_PAYLOAD_BYTES + 1)
        spread = np.minimum(spread * np.maximum(sizes, 1), MAX_PAYLOAD_BYTES + 1)
    if ndim and spread.max() > MAX_PAYLOAD_BYTES:
        raise ProtocolError("a column's shape declares more entries than any payload may hold")
    offsets = np.zeros(count + 1, dtype=np.intp)
    np.cumsum(counts, out=offsets[1:])  # each count at most 2**28, count at most the payload's bytes
    nbytes = int(offsets[-1]) * dtype.itemsize
    if offset + nbytes > len(payload):
        raise ProtocolError(f"a column of {count} arrays of {dtype.name} needs {nbytes} bytes; payload short")
    flat = _view(payload, dtype, int(offsets[-1]), offset, base)
    return Column(flat, np.ascontiguousarray(shapes, dtype=np.int64), offsets), offset + nbytes


def _run_spec(run: Any) -> tuple[np.dtype, list[tuple[int, ...]], list[int]]:
    """The wire dtype of a run of arrays, and each one's shape and number of entries.

    On the path of every array received: plain type checks, no sets or generators.
    """
    if type(run) is not dict or len(run) != 2:
        raise ProtocolError(f"a run of arrays must be {{dtype, shapes}}, got {run!r:.80}")
    name, shapes = run.get("dtype"), run.get("shapes")
    dtype = _WIRE_DTYPES.get(name) if type(name) is str else None
    if dtype is None:
        raise ProtocolError(f"dtype {name!r:.40} is not an allowed numeric dtype")
    if type(shapes) is not list or not shapes:
        raise ProtocolError(f"shapes {shapes!r:.80} is not a list of the run's shapes")
    checked = []
    counts = []
    for shape in shapes:
        if type(shape) is not list or len(shape) > MAX_DIMS:
            raise ProtocolError(f"shape {shape!r:.80} is not a list of at most {MAX_DIMS} sizes")
        count = 1
        spread = 1  # the product of the sizes but zeros: numpy refuses a shape whose product overflows
        for size in shape:
            if type(size) is not int or not 0 <= size <= MAX_PAYLOAD_BYTES:  # bool is no int here
                raise ProtocolError(f"shape {shape!r:.80} is not a list of at most {MAX_DIMS} sizes")
            count *= size
            spread *= size or 1
        # No array of a frame holds more entries than its payload has bytes, even one with no entries:
        # [0, 2**28, 2**28, 2**28] would make numpy raise ValueError, not a protocol error.
        if spread > MAX_PAYLOAD_BYTES:
            raise ProtocolError(f"shape {shape!r:.80} declares more entries than any payload may hold")
        checked.append(tuple(shape))
        counts.append(count)
    return dtype, checked, counts


class FrameDecoder:
    """Incremental decoder for a byte stream that may arrive in arbitrary pieces."""

    def __init__(self, max_payload: int = MAX_PAYLOAD_BYTES) -> None:
        self._buffer = bytearray()
        self._max_payload = max_payload

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= _PREFIX.size:
            magic, head_len, payload_len = _PREFIX.unpack_from(self._buffer)
            if magic != MAGIC:
                raise ProtocolError("stream is out of step: frame does not start with the magic bytes")
            if head_len > MAX_HEADER_BYTES or payload_len > self._max_payload:
                raise ProtocolError(
                    f"frame too large: header {head_len} bytes (max {MAX_HEADER_BYTES}), "
                    f"payload {payload_len} bytes (max {self._max_payload})"
                )
            end = _PREFIX.size + head_len + payload_len
            if len(self._buffer) < end:
                break
            head = bytes(self._buffer[_PREFIX.size : _PREFIX.size + head_len])
            payload = self._buffer[_PREFIX.size + head_len : end]  # a copy: the arrays will view it
            del self._buffer[:end]
            frames.append(_decode_body(head, payload))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buffer)


def iter_frames(fd: int) -> Iterator[Frame]:
    """Frames from a pipe, each yielded as soon as it is complete (reads no further than it must)."""
    decoder = FrameDecoder()
    while chunk := os.read(fd, 1 << 16):
        yield from decoder.feed(chunk)
    if decoder.pending:
        raise ProtocolError(f"stream ends inside a frame ({decoder.pending} bytes left over)")


def numeric_dtype_name(dtype: np.dtype) -> str | None:
    """The allow-listed name of a dtype in any byte order, or None when it may not travel."""
    name = _NAME_OF.get(dtype)  # native byte order, nearly always: no new dtype made
    return name if name is not None else _NAME_OF.get(dtype.newbyteorder("="))
