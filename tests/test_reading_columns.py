"""The grader's reading of columnar trial frames (reading.py): a frame the worker's Channel writes is read
into each trial's returns as before; a forged one, whatever it declares, ends the pass as a protocol error
and nothing else (the worker is the student's)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from grader.outcomes import FailureKind
from grader.sandbox.pass_state import Reading
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.protocol import (
    MAX_COLUMNS,
    PROGRESS,
    ColumnWriter,
    FrameDecoder,
    Run,
    encode_wire,
    to_wire,
)
from grader.sandbox.reading import FrameReader
from grader.sandbox.report import Returned
from grader.sandbox.worker.channel import Channel, Converted, return_kind

NAMES = ("f", "grad")


def reader() -> FrameReader:
    exercise: Any = SimpleNamespace(return_names=NAMES, spec=SimpleNamespace(limits=None))
    return FrameReader(process=Any, exercise=exercise, deadlines=Any, captures={})  # type: ignore[arg-type]


def channel_frames(tmp_path: Path, trials: list[tuple[int, list[Any]]], run: Run = Run.FIRST) -> list[Any]:
    """What the worker's Channel writes for these trials (each: its number, and per return an array or a
    problem), decoded."""
    progress = tmp_path / "progress"
    progress.write_bytes(b"\0" * PROGRESS.size)
    results = tmp_path / "results"  # a file, not a pipe: nothing reads while the channel writes
    write_fd = os.open(results, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    channel = Channel(write_fd, os.open(progress, os.O_RDWR))
    for trial, returns in trials:
        converted: list[Converted] = [
            (name, None, value, None, None)
            if isinstance(value, str)
            else (name, str(value.dtype), "numpy.ndarray", None, value)
            for name, value in zip(NAMES, returns, strict=True)
        ]
        channel.queue(trial, run, 0.001, converted)
    channel.flush()
    os.close(write_fd)
    data = results.read_bytes()
    return FrameDecoder().feed(data)


def read(frames: list[Any], pending: list[int], run: Run = Run.FIRST) -> Reading:
    reading = Reading(run, list(pending))
    frame_reader = reader()
    for frame in frames:
        frame_reader._receive(reading, frame)
    return reading


def test_trials_read_from_columns_as_they_were_returned(tmp_path: Path) -> None:
    sent = [
        (0, [np.float64(1.5) * np.ones(()), np.arange(6.0).reshape(2, 3)]),
        (1, [np.ones(()), "returned None"]),
        (2, [np.zeros(()), np.arange(4, dtype=np.float32).reshape(2, 2)]),  # another dtype: a new column
        (3, [np.ones(()), np.arange(6.0).reshape(3, 2).T]),  # not contiguous
        (4, [np.ones(()), np.zeros(3)]),  # another ndim
    ]
    frames = channel_frames(tmp_path, sent)
    assert len(frames) == 1 and len(frames[0].columns) == 5  # f; grad by (dtype, ndim) run: 4
    reading = read(frames, [0, 1, 2, 3, 4])
    assert reading.stopped is None and not reading.pending
    for trial, returns in sent:
        output = reading.outputs[trial]
        for name, value in zip(NAMES, returns, strict=True):
            item = output.by_name[name]
            if isinstance(value, str):
                assert isinstance(item, ReturnProblem) and item.problem == value
            else:
                assert isinstance(item, Returned) and item.dtype == str(value.dtype)
                assert item.array.dtype == value.dtype and item.array.shape == value.shape
                np.testing.assert_array_equal(item.array, value)
                assert reading.returned[name][trial].array is item.array  # one array, in its column
    assert 1 not in reading.returned["grad"]


def test_an_answer_out_of_order_ends_the_pass_after_the_trials_owed(tmp_path: Path) -> None:
    frames = channel_frames(tmp_path, [(0, [np.ones(()), np.ones(2)]), (5, [np.ones(()), np.ones(2)])])
    reading = read(frames, [0, 1, 2])
    assert list(reading.outputs) == [0]
    assert reading.stopped is not None and reading.stopped.kind is FailureKind.PROTOCOL
    assert "answer for trial 5 while trial 1" in reading.stopped.message


KINDS = [return_kind(name, "float64", "numpy.ndarray") for name in NAMES]


def forged(
    trials: Any = (0,),
    seconds: Any = None,
    kinds: Any = None,
    columns: Any = None,
    returns: Any = None,
    extra: list[np.ndarray] | None = None,
) -> list[Any]:
    """A trials frame with each part as given, the others as a frame of these trials with one array of
    one entry per return would have them."""
    trials = np.asarray(trials)
    count = len(trials)
    seconds = np.full(count, 0.001) if seconds is None else np.asarray(seconds)
    kinds = np.tile(np.arange(len(NAMES)), (count, 1)) if kinds is None else np.asarray(kinds)
    if columns is None:
        columns = []
        for _ in NAMES:
            column = ColumnWriter("float64", 1)
            for _ in range(count):
                column.append(np.ones(1))
            columns.append(column)
    returns = list(range(len(columns))) if returns is None else returns
    header = {"type": "trials", "run": "first", "kinds": KINDS, "returns": returns}
    arrays = [trials, seconds, kinds, *(extra or [])]
    return FrameDecoder().feed(encode_wire(header, [to_wire(a) for a in arrays], columns))


def column_of(count: int, dtype: str = "float64", ndim: int = 1) -> ColumnWriter:
    column = ColumnWriter(dtype, ndim)
    for _ in range(count):
        column.append(np.ones((1,) * ndim, dtype=dtype))
    return column


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        (lambda: forged(trials=np.array([0], dtype=np.int32)), "arrays are"),  # wrong dtype
        (lambda: forged(trials=np.array([0.0])), "arrays are"),
        (lambda: forged(trials=np.array([[0]])), "arrays are"),
        (lambda: forged(trials=np.array([], dtype=np.int64), columns=[]), "arrays are"),
        (lambda: forged(seconds=np.array([0.1, 0.2])), "arrays are"),  # not one per trial
        (lambda: forged(seconds=np.array([1], dtype=np.int64)), "arrays are"),
        (lambda: forged(kinds=np.array([[0, 1, 1]])), "arrays are"),  # a return too many
        (lambda: forged(kinds=np.array([0, 1])), "arrays are"),
        (lambda: forged(extra=[np.zeros(1)]), "3 arrays"),
        (lambda: forged(trials=np.array([-1])), "negative"),
        (lambda: forged(seconds=np.array([np.nan])), "negative"),
        (lambda: forged(seconds=np.array([-1.0])), "negative"),
        (lambda: forged(kinds=np.array([[0, 2]])), "return kind"),  # past the frame's kinds
        (lambda: forged(kinds=np.array([[0, -1]])), "return kind"),
        (lambda: forged(kinds=np.array([[1, 0]])), "named"),  # the returns in another order
        (lambda: forged(returns=[0]), "columns"),  # a column not named
        (lambda: forged(returns=[0, 1, 1]), "columns"),
        (lambda: forged(returns=[0, 2]), "return 2"),
        (lambda: forged(columns=[column_of(1), column_of(2)]), "declare 1 arrays of return 'grad'"),
        (lambda: forged(columns=[column_of(1)], returns=[0]), "carries 0"),
        (lambda: forged(trials=[0, 1], columns=[column_of(2), column_of(1)]), "carries 1"),
    ],
)
def test_forged_trials_frames_end_the_pass_as_a_protocol_error(frames: Any, match: str) -> None:
    reading = read(frames(), [0, 1])
    assert reading.stopped is not None and reading.stopped.kind is FailureKind.PROTOCOL, reading.stopped
    assert match in reading.stopped.message, reading.stopped.message
    assert not reading.returned.get("grad")


def test_a_trials_frame_without_columns_where_every_return_is_a_problem(tmp_path: Path) -> None:
    frames = channel_frames(tmp_path, [(0, ["returned None", "returned a str"])])
    assert frames[0].columns == ()
    reading = read(frames, [0])
    assert reading.stopped is None
    assert [type(i) for i in reading.outputs[0].by_name.values()] == [ReturnProblem, ReturnProblem]


def test_a_pass_restricted_to_some_trials_keeps_their_columns(tmp_path: Path) -> None:
    """The autograd check's trials split off (judging/provenance.py): both parts read as the whole did."""
    sent = [
        (t, [np.full((), float(t)), np.full(2, float(t)) if t != 2 else "returned None"]) for t in range(5)
    ]
    reading = read(channel_frames(tmp_path, sent), list(range(5)))
    whole = reading.result()
    part = whole.restricted({1, 2, 4})
    assert list(part.outputs) == [1, 2, 4]
    assert list(part.returned("grad")) == [1, 4]
    assert part.returned("grad").arrays[1].tolist() == [4.0, 4.0]
    assert isinstance(part.outputs[2].by_name["grad"], ReturnProblem)
    assert part.outputs[4].by_name["f"].array.tolist() == 4.0  # type: ignore[union-attr]
    assert 3 not in part.outputs and 3 not in part.returned("f")
    assert list(whole.returned("f")) == [0, 1, 2, 3, 4]  # the whole pass unchanged


def test_a_return_that_changes_dtype_every_trial_is_sent_in_frames_the_grader_takes(tmp_path: Path) -> None:
    """A new column for every trial's arrays: the Channel sends the frame before it holds more columns
    than a frame may (protocol.MAX_COLUMNS), and every trial is read."""
    dtypes = [np.float64, np.float32]
    sent = [(t, [np.ones((), dtype=dtypes[t % 2]), np.ones(2, dtype=dtypes[t % 2])]) for t in range(600)]
    frames = channel_frames(tmp_path, sent)
    assert len(frames) > 2 and all(len(f.columns) <= MAX_COLUMNS for f in frames)
    reading = read(frames, list(range(600)))
    assert reading.stopped is None and len(reading.outputs) == 600
    assert [a.dtype for a in reading.returned["grad"].arrays[:2]] == [np.float64, np.float32]


def test_returns_alike_stay_columns_read_whole_or_by_trial(tmp_path: Path) -> None:
    """Frames whose trials returned alike are kept as the columns they came in: joined end to end for
    judging, any one trial's array a view of them, and a later frame of other layouts after them."""
    alike: list[tuple[int, list[Any]]] = [(t, [np.full((), float(t)), np.arange(3.0) + t]) for t in range(4)]
    later: list[tuple[int, list[Any]]] = [
        (4, [np.ones(()), "returned None"]),
        (5, [np.ones(()), np.full(3, 5.0)]),
    ]
    frames = channel_frames(tmp_path, alike) + channel_frames(tmp_path, later)
    reading = read(frames[:1], list(range(6)))
    grad = reading.returned["grad"]
    joined = grad.joined()
    assert joined is not None
    np.testing.assert_array_equal(joined[0], np.concatenate([np.arange(3.0) + t for t in range(4)]))
    assert joined[1].tolist() == [[3]] * 4
    assert grad[2].array.tolist() == [2.0, 3.0, 4.0] and np.shares_memory(grad[2].array, joined[0])
    for frame in frames[1:]:
        FrameReader._receive(reader(), reading, frame)
    assert reading.stopped is None and not reading.pending
    assert grad.joined() is None  # split by the later frame's arrays, in the order they came
    assert list(grad) == [0, 1, 2, 3, 5]
    assert [a.tolist() for a in grad.arrays] == [[t, t + 1.0, t + 2.0] for t in range(4)] + [[5.0] * 3]
    assert reading.result().restricted({3, 5}).returned("grad").arrays[0].tolist() == [3.0, 4.0, 5.0]
