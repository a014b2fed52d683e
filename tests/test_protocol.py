"""The wire format: numeric arrays round-trip byte for byte in any chunking; anything else is refused."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import struct
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader.sandbox.protocol import (
    MAGIC,
    MAX_HEADER_BYTES,
    NUMERIC_DTYPES,
    ColumnWriter,
    Frame,
    FrameDecoder,
    ProtocolError,
    encode,
    encode_wire,
    iter_frames,
    little_endian,
    to_wire,
)

PREFIX = struct.Struct("<4sII")

arrays = st.sampled_from(sorted(NUMERIC_DTYPES)).flatmap(
    lambda dtype: hnp.arrays(
        dtype=np.dtype(dtype),
        # 0-d arrays are left out here: see test_zero_dimensional_arrays_keep_their_shape
        shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5),
    )
)
headers = st.dictionaries(
    st.text(min_size=1, max_size=8).filter(lambda k: k != "arrays"),
    st.one_of(
        st.integers(-(2**53), 2**53),
        st.text(max_size=20),
        st.booleans(),
        st.none(),
        st.lists(st.integers(0, 9), max_size=4),
    ),
    max_size=4,
)


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def assert_same_array(got: np.ndarray, sent: np.ndarray) -> None:
    assert got.dtype == sent.dtype
    assert got.shape == sent.shape
    assert got.tobytes() == np.ascontiguousarray(sent).tobytes()  # bit for bit, NaN payloads included


@given(
    frames=st.lists(st.tuples(headers, st.lists(arrays, max_size=4)), min_size=1, max_size=4),
    cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=30),
)
def test_round_trip_in_random_chunks(frames: list[tuple[dict, list[np.ndarray]]], cuts: list[int]) -> None:  # type: ignore[type-arg]
    stream = b"".join(encode(header, sent) for header, sent in frames)
    decoder = FrameDecoder()
    decoded = []
    for piece in chunks(stream, cuts):
        decoded.extend(decoder.feed(piece))
    assert decoder.pending == 0
    assert len(decoded) == len(frames)
    for frame, (header, sent) in zip(decoded, frames, strict=True):
        assert frame.header == header
        assert len(frame.arrays) == len(sent)
        for got, array in zip(frame.arrays, sent, strict=True):
            assert_same_array(got, array)
            assert got.flags.writeable and got.flags.aligned  # usable as is, like any array


def frames_through_a_pipe(data: bytes) -> list[Frame]:
    """Frames read from a pipe as the worker reads its job: a writer thread feeds it, then closes it."""
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return list(iter_frames(read_end))
    finally:
        writer.join()
        os.close(read_end)


@given(frames=st.lists(st.lists(arrays, max_size=3), min_size=1, max_size=3))
def test_frames_arrive_from_a_pipe(frames: list[list[np.ndarray]]) -> None:
    decoded = frames_through_a_pipe(b"".join(encode({"n": i}, sent) for i, sent in enumerate(frames)))
    assert [f.header["n"] for f in decoded] == list(range(len(frames)))
    for frame, sent in zip(decoded, frames, strict=True):
        for got, array in zip(frame.arrays, sent, strict=True):
            assert_same_array(got, array)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_zero_dimensional_arrays_keep_their_shape(dtype: str) -> None:
    sent = np.array(3, dtype=dtype)
    (frame,) = FrameDecoder().feed(encode({}, [sent]))
    assert_same_array(frame.arrays[0], sent)


def test_non_contiguous_arrays_travel_as_values() -> None:
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    strided = base[::2, ::3].T
    (frame,) = FrameDecoder().feed(encode({}, [strided, base[:, 1]]))
    np.testing.assert_array_equal(frame.arrays[0], strided)
    np.testing.assert_array_equal(frame.arrays[1], base[:, 1])


@pytest.mark.parametrize("dtype", [">i4", ">f8", ">f4"])
def test_big_endian_arrays_travel_as_values(dtype: str) -> None:
    big = np.arange(5).astype(dtype)
    (frame,) = FrameDecoder().feed(encode({}, [big]))
    np.testing.assert_array_equal(frame.arrays[0], big)
    assert frame.arrays[0].dtype == np.dtype(dtype).newbyteorder("=")


@pytest.mark.parametrize(
    "array",
    [
        np.array([object(), 1], dtype=object),
        np.array(["a", "b"]),
        np.array([1 + 2j]),
        np.zeros(2, dtype=[("a", "f8")]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
    ],
)
def test_encode_refuses_non_numeric_dtypes(array: np.ndarray) -> None:
    with pytest.raises(ProtocolError, match="dtype"):
        encode({}, [array])


def frame(head: bytes, payload: bytes = b"", magic: bytes = MAGIC) -> bytes:
    return PREFIX.pack(magic, len(head), len(payload)) + head + payload


def refused(data: bytes, match: str, decoder: FrameDecoder | None = None) -> None:
    with pytest.raises(ProtocolError, match=match):
        (decoder or FrameDecoder()).feed(data)


def test_bad_magic() -> None:
    refused(frame(b'{"arrays": []}', magic=b"PKL1"), "magic")
    good = encode({"a": 1})
    decoder = FrameDecoder()
    assert len(decoder.feed(good)) == 1
    refused(b"\x80\x04\x95" + good, "magic", decoder)  # a pickle where a frame should start


def test_oversize_header_is_refused_before_it_arrives() -> None:
    # Only the prefix is sent: the decoder must refuse without waiting for (or buffering) a huge header.
    refused(PREFIX.pack(MAGIC, MAX_HEADER_BYTES + 1, 0), "too large")


def test_oversize_payload_is_refused_before_it_arrives() -> None:
    refused(PREFIX.pack(MAGIC, 10, 1001), "too large", FrameDecoder(max_payload=1000))


def describe(*arrays: dict[str, object], **extra: object) -> bytes:
    return json.dumps({"arrays": list(arrays), **extra}).encode()


def run(dtype: object, *shapes: object) -> dict[str, object]:
    return {"dtype": dtype, "shapes": list(shapes)}


@pytest.mark.parametrize(
    ("head", "payload", "match"),
    [
        (describe(run("float64", [3])), b"\0" * 16, "short"),
        (describe(run("float64", [2])), b"\0" * 24, "no array declares"),
        (describe(), b"\0", "no array declares"),
        (describe(run("int32", [2, 2]), run("uint8", [1])), b"\0" * 16, "short"),
        (describe(run("float32", [1], [2], [3])), b"\0" * 20, "short"),  # the run's last array
        (describe(run("object", [1])), b"\0" * 8, "dtype"),
        (describe(run("complex128", [1])), b"\0" * 16, "dtype"),
        (describe(run("float64", [-1])), b"\0" * 8, "shape"),
        (describe(run("float64", [1.5])), b"\0" * 8, "shape"),
        (describe(run("float64", [True])), b"\0" * 8, "shape"),
        (describe(run("float64", "3")), b"\0" * 24, "shape"),
        (describe(run("float64", [1], [1] * 9)), b"\0" * 16, "shape"),
        (describe(run("float64")), b"", "shapes"),  # a run of no arrays
        (describe({"dtype": "float64", "shapes": "[3]"}), b"\0" * 24, "shapes"),
        (describe({"dtype": "float64", "shape": [1]}), b"\0" * 8, "shapes"),  # one array, described alone
        (describe({**run("float64", [1]), "code": "x"}), b"\0" * 8, "dtype, shapes"),
        (b"not json at all", b"", "not JSON"),
        (b"\xff\xfe", b"", "not JSON"),
        (b"[1, 2]", b"", "object"),
        (b'{"type": "trial"}', b"", "arrays"),
    ],
)
def test_malformed_frames_are_refused(head: bytes, payload: bytes, match: str) -> None:
    refused(frame(head, payload), match)


def test_huge_declared_shape_does_not_allocate() -> None:
    refused(frame(describe(run("float64", [1 << 20, 1 << 20])), b"\0" * 8), "more entries")


@pytest.mark.parametrize(
    ("head", "payload"),
    [
        # 2**84 entries, none of them there: numpy itself raised ValueError on the shape (issue 30)
        (describe(run("float64", [0, 1 << 28, 1 << 28, 1 << 28])), b""),
        (describe(run("float64", [1 << 28, 1 << 28, 1 << 28])), b"\0" * 8),
        (describe(run("float64", [1 << 28] * 8)), b""),
        (describe(run("uint8", [0] * 8, [1 << 28, 0, 1 << 28])), b""),
        (describe(run("float64", [1 << 62])), b"\0" * 8),
        (describe(run("float64", [-(1 << 63)])), b""),
        (describe(run("float64", [1e300])), b""),
        (b'{"arrays": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", b""),  # past the recursion limit
        (b'{"arrays": [], "n": ' + b"9" * 100_000 + b"}", b""),  # past Python's digits limit for int()
        (b'{"arrays": [{"dtype": "float64", "shapes": [[NaN]]}]}', b"\0" * 8),
        (b'{"arrays": [{"dtype": "float64", "shapes": [[Infinity]]}]}', b"\0" * 8),
        (b'{"arrays": [{"dtype": ["float64"], "shapes": [[1]]}]}', b"\0" * 8),
        (b'{"arrays": [{"dtype": {"a": 1}, "shapes": [[1]]}]}', b"\0" * 8),
        (b'{"arrays": [null]}', b""),
        (b'{"arrays": {"dtype": "float64"}}', b""),
        (b'{"arrays": [], "\\ud800": 1}', b""),  # a lone surrogate is valid JSON; kept as text
        (b'\xef\xbb\xbf{"arrays": []}', b""),  # a UTF-8 byte order mark
        (b'{"arrays": []}\x00', b""),
        (b"\x00" * 64, b""),
        (b"", b""),
    ],
)
def test_malformed_shapes_and_headers_raise_only_protocol_errors(head: bytes, payload: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        FrameDecoder().feed(frame(head, payload))


valid_frames = st.lists(st.tuples(headers, st.lists(arrays, max_size=3)), min_size=1, max_size=3).map(
    lambda frames: b"".join(encode(header, sent) for header, sent in frames)
)


def _decodes_or_refuses(data: bytes, cuts: list[int]) -> None:
    """Feeding `data` in pieces gives frames or a ProtocolError: no other exception escapes."""
    decoder = FrameDecoder()
    try:
        for piece in chunks(data, cuts):
            decoder.feed(piece)
    except ProtocolError:
        pass


@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(0, 4000), max_size=8))
def test_arbitrary_bytes_give_frames_or_protocol_errors(data: bytes, cuts: list[int]) -> None:
    _decodes_or_refuses(data, cuts)
    _decodes_or_refuses(MAGIC + data, cuts)  # past the magic: the lengths and the body are arbitrary


@given(
    data=valid_frames,
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 10**6),
)
def test_mutated_valid_frames_give_frames_or_protocol_errors(
    data: bytes, edits: list[tuple[int, int]], cut: int
) -> None:
    mutated = bytearray(data)
    for position, value in edits:
        mutated[position % len(mutated)] = value
    _decodes_or_refuses(bytes(mutated), [])
    _decodes_or_refuses(bytes(mutated[: cut % (len(mutated) + 1)]), [])  # truncated anywhere


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@given(
    runs=st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "dtype": st.sampled_from([*sorted(NUMERIC_DTYPES), "object", "<f8", ">i4", "V8", ""]),
                    "shapes": st.lists(
                        st.lists(
                            st.one_of(st.integers(-2, 1 << 40), st.sampled_from([0, 1 << 28, 1 << 62])),
                            max_size=9,
                        ),
                        max_size=3,
                    ),
                }
            ),
            json_values,
        ),
        max_size=3,
    ),
    payload=st.binary(max_size=64),
)
def test_forged_array_descriptions_give_frames_or_protocol_errors(runs: list[object], payload: bytes) -> None:
    _decodes_or_refuses(frame(json.dumps({"arrays": runs}).encode(), payload), [])


def test_truncated_stream_is_an_error() -> None:
    data = encode({"a": 1}, [np.arange(4.0)])
    with pytest.raises(ProtocolError, match="ends inside a frame"):
        frames_through_a_pipe(data[:-3])


def test_partial_frame_waits_for_the_rest() -> None:
    data = encode({"a": 1}, [np.arange(4.0)])
    decoder = FrameDecoder()
    assert decoder.feed(data[:5]) == []
    assert decoder.pending == 5
    (decoded,) = decoder.feed(data[5:])
    assert decoded.header == {"a": 1}
    assert decoder.pending == 0


# Columns: a return's arrays over many trials, their shapes and entries end to end (worker Channel).


def encode_columns(columns: list[list[np.ndarray]], arrays: list[np.ndarray] | None = None) -> bytes:
    """Each list of arrays (of one dtype and ndim) as one column of a frame."""
    writers = []
    for sent in columns:
        name, first = little_endian(sent[0])
        writer = ColumnWriter(name, first.ndim)
        for array in sent:
            writer.append(little_endian(array)[1])
        writers.append(writer)
    return encode_wire({}, [to_wire(a) for a in arrays or []], writers)


column_arrays = st.sampled_from(sorted(NUMERIC_DTYPES)).flatmap(
    lambda dtype: st.integers(0, 3).flatmap(
        lambda ndim: st.lists(
            hnp.arrays(
                dtype=np.dtype(dtype), shape=hnp.array_shapes(min_dims=ndim, max_dims=ndim, min_side=0)
            ),
            min_size=1,
            max_size=5,
        )
    )
)


@given(
    columns=st.lists(column_arrays, max_size=4),
    arrays=st.lists(arrays, max_size=2),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_columns_round_trip_in_random_chunks(
    columns: list[list[np.ndarray]], arrays: list[np.ndarray], cuts: list[int]
) -> None:
    decoder = FrameDecoder()
    decoded = [f for piece in chunks(encode_columns(columns, arrays), cuts) for f in decoder.feed(piece)]
    (frame,) = decoded
    for got, sent in zip(frame.arrays, arrays, strict=True):
        assert_same_array(got, sent)
    assert len(frame.columns) == len(columns)
    for column, kept in zip(frame.columns, columns, strict=True):
        assert len(column) == len(kept)
        assert column.offsets[0] == 0 and column.offsets[-1] == column.flat.size
        for got, array in zip(column.arrays(), kept, strict=True):
            assert_same_array(got, array)


def test_columns_take_non_contiguous_and_big_endian_arrays_as_values() -> None:
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    big = np.arange(6.0).reshape(2, 3).astype(">f8")
    (frame,) = FrameDecoder().feed(encode_columns([[base[::2, ::3].T, big]]))
    got = frame.columns[0].arrays()
    np.testing.assert_array_equal(got[0], base[::2, ::3].T)
    np.testing.assert_array_equal(got[1], big)


def column(dtype: object = "float64", ndim: object = 1, count: object = 1) -> dict[str, object]:
    return {"dtype": dtype, "ndim": ndim, "count": count}


def shapes(*sizes: int) -> bytes:
    return np.array(sizes, dtype="<i8").tobytes()


@pytest.mark.parametrize(
    ("columns", "payload", "match"),
    [
        ([column()], shapes(3) + b"\0" * 16, "short"),  # the entries short of the shape's
        ([column()], shapes(2) + b"\0" * 24, "no array declares"),  # bytes beyond them
        ([column(count=2)], shapes(1), "short"),  # the second shape missing
        ([column(ndim=2)], shapes(2), "short"),
        ([column(count=0)], b"", "count"),
        ([column(count=-1)], b"", "count"),
        ([column(count=True)], shapes(0), "count"),
        ([column(count=1.0)], shapes(0), "count"),
        ([column(count=1 << 40)], shapes(0), "count"),  # more arrays than the payload has bytes
        ([column(ndim=9)], b"", "ndim"),
        ([column(ndim=-1)], b"", "ndim"),
        ([column(ndim="1")], b"", "ndim"),
        ([column(dtype="object")], shapes(1) + b"\0" * 8, "dtype"),
        ([column(dtype="<f8")], shapes(1) + b"\0" * 8, "dtype"),
        ([column(dtype=None)], shapes(1) + b"\0" * 8, "dtype"),
        ([column()], shapes(-1), "size"),  # a negative size
        ([column()], shapes(-(1 << 63)), "size"),
        ([column()], shapes(1 << 62) + b"\0" * 8, "size"),
        ([column(ndim=3)], shapes(1 << 28, 1 << 28, 1 << 28) + b"\0" * 8, "more entries"),  # overflowing
        ([column(ndim=8)], shapes(*[1 << 28] * 8), "more entries"),  # 2**224 entries
        ([column(ndim=2, count=2)], shapes(2, 2, 0, 1 << 28) + b"\0" * 40, "no array declares"),
        ([column(count=2)], shapes(1 << 28, 1 << 28) + b"\0" * 8, "short"),  # offsets past the payload
        ([{**column(), "extra": 1}], shapes(1) + b"\0" * 8, "dtype, ndim, count"),
        ([{"dtype": "float64", "ndim": 1}], shapes(1) + b"\0" * 8, "dtype, ndim, count"),
        (["float64"], b"", "dtype, ndim, count"),
        ({"dtype": "float64"}, b"", "'columns' must be a list"),
        ([column(ndim=0)] * 257, b"\0" * 8 * 257, "at most 256 columns"),
    ],
)
def test_malformed_columns_are_refused(columns: object, payload: bytes, match: str) -> None:
    refused(frame(describe(columns=columns), payload), match)


def test_a_columns_offsets_account_for_its_entries() -> None:
    """Shapes that add up to the entries sent, in any split: offsets ascend from 0 to the last entry."""
    payload = shapes(3, 0, 2) + np.arange(5.0).tobytes()
    (decoded,) = FrameDecoder().feed(frame(describe(columns=[column(count=3)]), payload))
    (got,) = decoded.columns
    assert got.offsets.tolist() == [0, 3, 3, 5]
    assert [a.tolist() for a in got.arrays()] == [[0.0, 1.0, 2.0], [], [3.0, 4.0]]
    refused(frame(describe(columns=[column(count=3)]), shapes(3, 0, 3) + np.arange(5.0).tobytes()), "short")
    refused(
        frame(describe(columns=[column(count=3)]), shapes(3, 0, 1) + np.arange(5.0).tobytes()), "declares"
    )


@given(
    columns=st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "dtype": st.sampled_from([*sorted(NUMERIC_DTYPES), "object", "<f8", ""]),
                    "ndim": st.one_of(st.integers(-1, 9), st.none()),
                    "count": st.one_of(st.integers(-1, 6), st.sampled_from([1 << 28, 1 << 62])),
                }
            ),
            json_values,
        ),
        max_size=3,
    ),
    sizes=st.lists(
        st.one_of(st.integers(-2, 8), st.sampled_from([1 << 28, 1 << 62, -(1 << 63)])), max_size=12
    ),
    tail=st.binary(max_size=64),
)
def test_forged_columns_give_frames_or_protocol_errors(
    columns: list[object], sizes: list[int], tail: bytes
) -> None:
    _decodes_or_refuses(
        frame(json.dumps({"arrays": [], "columns": columns}).encode(), shapes(*sizes) + tail), []
    )
