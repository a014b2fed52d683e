"""An exercise's references computed in a fork of a warm zygote, which has torch imported already: the
grader's own process then never imports it (2.2 s of CPU on this project's 2-core machines, a twelfth of
a 40-student class run's CPU in all).

The fork runs the grader's code only, before any hand-in of the exercise is given to that zygote, and the
sandbox holds no process of a submission then: the zygote serves one job at a time and removes every
trace of the last before the next. The grader sends the exercise and the trials (a pickle: it trusts
itself); what comes back is read as the reference cache reads its files (plain arrays, a header checked by
pydantic, no pickle) and its inputs must be the grader's own trials, array for array. Whatever goes wrong
(an exercise whose expected values come from an instructor's file, which the sandbox cannot see; a failure
of the computation, whose message the grader's own computation then gives) returns None, and the grader
computes them itself.
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
    from grader.exercise.spec import Exercise
    from grader.exercise.trials import Trial
    from grader.sandbox.warm import Job, WorkerPool, Zygote

# graph2's 1000 trials took 0.26 s here, its encoded references 0.2 MB; a bound far above any exercise's,
# that still ends a computation that hangs.
_SECONDS = 600.0
_MAX_BYTES = 1 << 30
_PROCESSES = 16  # the computation's threads: torch is on one in the zygote


def main(request_fd: int, result_fd: int) -> None:
    """In the zygote's fork: the references of the trials the grader sent, in the cache's format."""
    from grader.exercise.reference import compute_references
    from grader.exercise.reference_cache import encoded

    with os.fdopen(request_fd, "rb") as request:
        exercise, trials, key = pickle.loads(request.read())  # the grader's own: it made it
    payload = encoded(exercise, compute_references(exercise, trials), key)
    with os.fdopen(result_fd, "wb") as result:
        result.write(payload)


def computable(exercise: Exercise) -> bool:
    """Whether a zygote's fork can compute the exercise's references: not where they come from an
    instructor's `reference:` file, which the sandbox does not see."""
    return exercise.spec.reference_file is None


def computed_in_zygote(
    pool: WorkerPool, zygote: Zygote, exercise: Exercise, seed: int, trials: Sequence[Trial]
) -> References | None:
    """The references of `trials`, computed in a fork of `zygote` (taken from `pool`, given back here);
    None where they could not be."""
    from grader.exercise.expected import References
    from grader.exercise.reference_cache import decoded, key, store

    job = None
    try:
        if not computable(exercise):
            return None
        name = key(exercise, seed, trials)
        request = pickle.dumps((exercise, tuple(trials), name), protocol=pickle.HIGHEST_PROTOCOL)
        job, data = _run(zygote, request)
        if job.wait(_SECONDS) != 0 or data is None:
            return None
        loaded = decoded(data, exercise, name)
        if loaded is None or not _same_trials(loaded.trials, trials):
            return None
        references = References(tuple(trials), loaded.expected, loaded.spread)
        store(exercise, seed, references)
        return references
    except OSError:
        return None
    finally:
        if job is not None:
            job.kill()
        pool.release(zygote, job)


def _run(zygote: Zygote, request: bytes) -> tuple[Job, bytes | None]:
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
    """The fork's trials are the grader's: the same indices, sizes and inputs, value for value."""
    if len(theirs) != len(ours):
        return False
    for mine, other in zip(ours, theirs, strict=True):
        described = (mine.index, dict(mine.sizes), sorted(mine.inputs))
        if described != (other.index, dict(other.sizes), sorted(other.inputs)):
            return False
        for name, array in mine.inputs.items():
            got = other.inputs[name]
            if got.dtype != array.dtype or not np.array_equal(got, array, equal_nan=array.dtype.kind in "fc"):
                return False
    return True
