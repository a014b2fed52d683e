"""Exercises' references computed in a fork of a warm zygote, which has torch imported already: the
grader's own process then never imports it (torch's import is seconds of CPU, a visible part even of a
whole class run's; a cold `grader check` of A2's layers.py imported torch twice).
A request may hold several exercises (a `grader check` of a whole layers.py): the fork computes them in two
processes (this project's machines have 2 cores), each taking the next exercise as it finishes one.

The fork runs the grader's code only, before any hand-in of the exercise is given to that zygote, and the
sandbox holds no process of a submission then: the zygote serves one job at a time and removes every
trace of the last before the next. The grader sends the exercises and their trials (a pickle: it trusts
itself; each input's arrays packed into one), with the text of each instructor's `reference:` file, which
the sandbox cannot read (the fork runs it from that text: instructor.provide_source). What comes back is,
per exercise, a length and the bytes of the reference cache's format, read as the cache reads its files
(plain arrays, a header checked by pydantic, no pickle), and its inputs must be the grader's own trials,
array for array. Whatever goes wrong (a failure of the computation, whose message the grader's own
computation then gives; an instructor's file that reads a file beside it, which the sandbox hides) gives
None for that exercise, and the grader computes its references itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import select
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from grader.exercise.expected import References
    from grader.exercise.settings import ReferenceCache
    from grader.exercise.spec import Exercise
    from grader.exercise.trials import Trial
    from grader.sandbox.warm import ForkedJob, WorkerPool, Zygote

# graph2's 1000 trials took 0.26 s here, its encoded references 0.2 MB; a bound far above any exercise's,
# that still ends a computation that hangs.
_SECONDS = 600.0
_MAX_BYTES = 1 << 30
_PROCESSES = 16  # the computation's threads: torch is on one in the zygote


_LENGTH = 8  # each exercise's answer: its length (little-endian; 0: not computed), then its bytes


# What the grader asks for one exercise: the exercise, its trials, the cache key of their references, and
# the text of its instructor's reference file (None without one).
Wanted = tuple["Exercise", "_PackedTrials", str, "str | None"]


def main(request_fd: int, result_fd: int) -> None:
    """In the zygote's fork: the references of each exercise the grader sent, in the cache's format, each
    after its length, in the request's order."""
    with os.fdopen(request_fd, "rb") as request:
        wanted: list[Wanted] = pickle.loads(request.read())  # the grader's own: it made it
    answers = _computed_in_turns(wanted, result_fd)
    with os.fdopen(result_fd, "wb") as result:
        for number in range(len(wanted)):
            payload = answers.get(number, b"")
            result.write(len(payload).to_bytes(_LENGTH, "little") + payload)


def _computed_in_turns(wanted: Sequence[Wanted], result_fd: int) -> dict[int, bytes]:
    """Each exercise's answer, by its place: this process and a fork of it (where there is more than one
    exercise) each take the next exercise off a shared queue until none is left. The fork's answers come
    back through an anonymous file, read once it has ended."""
    if len(wanted) < 2:
        return {n: _answer(w) for n, w in enumerate(wanted)}
    # Imported once, before the fork, not by each process (with them torch's dispatch modes).
    import grader.exercise.reference
    import grader.exercise.reference_cache  # noqa: F401

    queue_read, queue_write = os.pipe()
    # Written whole before either reads: reads of _NUMBER bytes then never split a number.
    os.write(queue_write, b"".join(n.to_bytes(_NUMBER, "little") for n in _costliest_first(wanted)))
    os.close(queue_write)
    kept = os.memfd_create("grader-references-fork")
    pid = os.fork()
    if pid == 0:  # the fork: its answers into the anonymous file, then out without the parent's clean-up
        code = 1
        try:
            os.close(result_fd)  # the grader reads to its end: only the parent holds it open
            with os.fdopen(kept, "wb", closefd=False) as handle:
                for number, payload in _taken(queue_read, wanted).items():
                    length = len(payload).to_bytes(_LENGTH, "little")
                    handle.write(number.to_bytes(_NUMBER, "little") + length + payload)
            code = 0
        finally:
            os._exit(code)
    answers = _taken(queue_read, wanted)
    os.close(queue_read)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        os.lseek(kept, 0, os.SEEK_SET)  # the fork's writes moved the offset both share
        with os.fdopen(kept, "rb") as handle:
            data = handle.read()
        at = 0
        while at + _NUMBER + _LENGTH <= len(data):
            number = int.from_bytes(data[at : at + _NUMBER], "little")
            size = int.from_bytes(data[at + _NUMBER : at + _NUMBER + _LENGTH], "little")
            at += _NUMBER + _LENGTH
            answers[number] = data[at : at + size]
            at += size
    else:
        os.close(kept)
    return answers


_NUMBER = 4  # an exercise's place in the request, on the queue and in the fork's answers


def _costliest_first(wanted: Sequence[Wanted]) -> list[int]:
    """The exercises' places, the most input values first: the last one taken is then a short one, and
    neither process waits long for the other (A2: affine's and conv_naive's are the longest by far)."""

    def values(number: int) -> int:
        return sum(int(flat.size) for flat, _ in wanted[number][1][1].values())

    return sorted(range(len(wanted)), key=values, reverse=True)


def _taken(queue: int, wanted: Sequence[Wanted]) -> dict[int, bytes]:
    answers: dict[int, bytes] = {}
    while True:
        data = os.read(queue, _NUMBER)
        if len(data) < _NUMBER:
            return answers
        number = int.from_bytes(data, "little")
        answers[number] = _answer(wanted[number])


def _answer(wanted: Wanted) -> bytes:
    """One exercise's references in the cache's format; empty where they cannot be computed here (the
    grader computes them again, and says why they fail)."""
    from grader.exercise.instructor import provide_source
    from grader.exercise.reference import compute_references
    from grader.exercise.reference_format import encoded

    exercise, packed, key, source = wanted
    try:
        if source is not None:
            provide_source(exercise, source)
        return encoded(exercise, compute_references(exercise, _unpacked(packed)), key)
    except Exception:  # the grader's own computation says what went wrong
        return b""


def computed_in_zygote(
    pool: WorkerPool,
    zygote: Zygote,
    cache: ReferenceCache,
    exercise: Exercise,
    seed: int,
    trials: Sequence[Trial],
) -> References | None:
    """The references of `trials`, computed in a fork of `zygote` (taken from `pool`, given back here) and
    stored in `cache`; None where they could not be."""
    return computed_all_in_zygote(pool, zygote, cache, [(exercise, seed, trials)])[0]


def computed_all_in_zygote(
    pool: WorkerPool,
    zygote: Zygote,
    cache: ReferenceCache,
    asked: Sequence[tuple[Exercise, int, Sequence[Trial]]],
) -> list[References | None]:
    """The references of each (exercise, seed, trials), computed in one fork of `zygote` (taken from
    `pool`, given back here) and stored in `cache`; None for those that could not be."""
    from grader.errors import GraderError
    from grader.exercise.expected import References
    from grader.exercise.instructor import reference_source
    from grader.exercise.reference_cache import key, store
    from grader.exercise.reference_format import decoded

    found: list[References | None] = [None] * len(asked)
    job = None
    try:
        names = [key(exercise, seed, trials) for exercise, seed, trials in asked]
        wanted = [
            (exercise, _packed(trials), name, reference_source(exercise))
            for (exercise, _, trials), name in zip(asked, names, strict=True)
        ]
        request = pickle.dumps(wanted, protocol=pickle.HIGHEST_PROTOCOL)
        job, data = _run(zygote, request)
        if job.wait(_SECONDS) != 0 or data is None:
            return found
        payloads = _split(data, len(asked))
        if payloads is None:
            return found
        for number, ((exercise, seed, trials), name) in enumerate(zip(asked, names, strict=True)):
            payload = payloads[number]
            loaded = decoded(payload, exercise, name) if payload else None
            if loaded is None or not _same_trials(loaded.trials, trials):
                continue
            references = References(tuple(trials), loaded.expected, loaded.spread)
            store(
                cache, exercise, seed, references, payload
            )  # the bytes just read, verified: kept as they are
            found[number] = references
        return found
    except (OSError, ValueError, GraderError):  # a reference file unread, trials of ragged shapes: done here
        return found
    finally:
        if job is not None:
            job.kill()
        pool.release(zygote, job)


def _split(data: bytes, count: int) -> list[bytes] | None:
    """The fork's answer cut into its `count` exercises' payloads; None where it is not exactly that."""
    payloads: list[bytes] = []
    at = 0
    for _ in range(count):
        if at + _LENGTH > len(data):
            return None
        size = int.from_bytes(data[at : at + _LENGTH], "little")
        at += _LENGTH
        if at + size > len(data):
            return None
        payloads.append(data[at : at + size])
        at += size
    return payloads if at == len(data) else None


def _run(zygote: Zygote, request: bytes) -> tuple[ForkedJob, bytes | None]:
    """The fork started with the request; what it sent back before its pipe closed (None: too much, or
    too late)."""
    from grader.sandbox.process import PIPE_BYTES

    (request_read, request_write), (result_read, result_write) = os.pipe(), os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(result_write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    progress = os.memfd_create("grader-references")
    null = os.open(os.devnull, os.O_WRONLY)
    passed = [request_read, result_write, progress, null, os.dup(null)]
    try:
        job = zygote.start(passed, _PROCESSES, references=True)
    finally:
        for fd in passed:
            os.close(fd)
    try:
        with os.fdopen(request_write, "wb") as sending:  # the fork reads it all before computing
            sending.write(request)
        return job, _read_all(result_read)
    finally:
        os.close(result_read)


def _read_all(fd: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + _SECONDS
    while True:
        readable, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
        if not readable:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_BYTES:
            return None
        chunks.append(chunk)


def _same_trials(theirs: Sequence[Trial], ours: Sequence[Trial]) -> bool:
    """The fork's trials are the grader's: the same indices, sizes and inputs, value for value (bit for bit:
    the cache's format keeps every bit), each input's arrays compared all trials at once (one by one, A2's
    42,500 arrays were slow)."""
    if len(theirs) != len(ours):
        return False
    names: set[str] = set()
    for mine, other in zip(ours, theirs, strict=True):
        described = (mine.index, dict(mine.sizes), sorted(mine.inputs))
        if described != (other.index, dict(other.sizes), sorted(other.inputs)):
            return False
        names.update(mine.inputs)
    for name in names:
        mine_arrays = [t.inputs[name] for t in ours if name in t.inputs]
        their_arrays = [t.inputs[name] for t in theirs if name in t.inputs]
        if [(a.dtype, a.shape) for a in mine_arrays] != [(a.dtype, a.shape) for a in their_arrays]:
            return False
        if b"".join(a.tobytes() for a in mine_arrays) != b"".join(a.tobytes() for a in their_arrays):
            return False
    return True


# The trials as the grader sends them: each trial's index and sizes, and each input's arrays of every
# trial as one flat array and a table of shapes (pickled one by one, A2's 42,500 arrays were slow).
_PackedTrials = tuple[list[tuple[int, dict[str, int], list[str]]], dict[str, tuple[np.ndarray, np.ndarray]]]


def _packed(trials: Sequence[Trial]) -> _PackedTrials:
    described = [(t.index, dict(t.sizes), list(t.inputs)) for t in trials]
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in dict.fromkeys(name for t in trials for name in t.inputs):
        chosen = [t.inputs[name] for t in trials if name in t.inputs]
        shapes = np.array([a.shape for a in chosen], dtype=np.int64).reshape(len(chosen), chosen[0].ndim)
        arrays[name] = (np.concatenate([np.ravel(a) for a in chosen]), shapes)
    return described, arrays


def _unpacked(packed: _PackedTrials) -> tuple[Trial, ...]:
    """The trials `_packed` gave, each input a read-only view of its flat array (as make_trials leaves
    them)."""
    from grader.exercise.trials import Trial

    described, arrays = packed
    views: dict[str, list[np.ndarray]] = {}
    for name, (flat, shapes) in arrays.items():
        flat.flags.writeable = False
        ends = np.cumsum(shapes.prod(axis=1)).tolist()
        starts = [0, *ends[:-1]]
        views[name] = [
            flat[start:end].reshape(shape)
            for start, end, shape in zip(starts, ends, map(tuple, shapes.tolist()), strict=True)
        ]
    taken = dict.fromkeys(views, 0)
    trials = []
    for index, sizes, names in described:
        inputs = {}
        for name in names:
            inputs[name] = views[name][taken[name]]
            taken[name] += 1
        trials.append(Trial(index, sizes, inputs))
    return tuple(trials)
