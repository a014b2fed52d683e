"""References that travel with an exercise: those of the trials `grader check` uses by default (the public
seed, the spec's trial count), written by `grader handout` (and `grader prepare --ship`) into the exercise's
folder, so that a student's first check reads them instead of importing torch and computing thousands of
reference evaluations (a CS231n A2 handout's first check of layers.py: 7.8 s of CPU without them, 2.0 s
with them; docs/benchmarks.md).

A shipped file is `references/<key>.npz` beside the exercise's spec: the reference cache's format
(reference_format.py: plain arrays and a header checked by pydantic, no pickle) after a magic line and
a sha256 of the key and the body. The digest is not a signature, and needs none: a shipped file only ever
gives a student's own check its expected values, which that student could compute anyway from the spec's
graph; what grades counts comes from secret seeds (`grader run`, Gradescope's pool), which no shipped file
is named for. What the digest and the checks on load catch is a file that is not what it claims: cut short,
changed, renamed from another exercise's, or left from an older spec (the key then differs).

The key is the cache's (reference_key.py) without numpy's and torch's release series: students install
whatever release their machine takes, and a file keyed by the instructor's would miss for most of them.
Expected values computed by another torch release differ at most in their last bits, far inside every
rounding envelope; the inputs, drawn by numpy's generator, are what a release could really change, so the
first and last trials are drawn again on load and must equal the stored ones bit for bit (two trials of
hundreds: 1 ms, where drawing them all takes 0.4 s for A2).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import tempfile
from pathlib import Path

import numpy as np

from grader.exercise.expected import References
from grader.exercise.reference_format import decoded, encoded
from grader.exercise.reference_key import references_key
from grader.exercise.spec import Exercise
from grader.exercise.trials import make_trial

FOLDER = "references"  # beside the exercise's spec
_FORMAT = "shipped-1"
_MAGIC = b"grader-shipped-references-1\n"
_DIGEST_BYTES = 32  # sha256
# A2's biggest, conv_naive's 500 trials, is 3.4 MB; a bound far above any exercise's that still refuses
# to read a file that is not one.
_MAX_BYTES = 1 << 30


def path(exercise: Exercise, seed: int, count: int) -> Path:
    """Where the references of trials 0..count-1 of `seed` travel with the exercise."""
    return exercise.root / FOLDER / f"{_key(exercise, seed, count)}.npz"


def shipped(exercise: Exercise, seed: int, count: int, only: int | None = None) -> References | None:
    """The shipped references of trials 0..count-1 of `seed` (of trial `only` alone, taken from them), if
    the exercise has them and they verify; None otherwise."""
    if only is not None and not 0 <= only < count:
        return None
    file = path(exercise, seed, count)
    found = _read(file, exercise, file.stem)
    if found is None or [t.index for t in found.trials] != list(range(count)):
        return None
    if not all(_redrawn_equal(exercise, seed, found, index) for index in {0, count - 1}):
        return None
    if only is None:
        return found
    return References((found.trials[only],), {only: found.expected[only]}, {only: found.spread[only]})


def ship(exercise: Exercise, seed: int, references: References) -> Path:
    """Write `references` (of trials 0..N-1 of `seed`) to travel with the exercise; replaces a file of the
    same key whole (written to a temporary name, renamed into place). Raises OSError where the folder
    cannot be written."""
    count = len(references.trials)
    if [t.index for t in references.trials] != list(range(count)):
        raise ValueError("only a whole run's references travel: trials 0..N-1")
    target = path(exercise, seed, count)
    key = target.stem
    body = encoded(exercise, references, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=target.parent, prefix=".partial-", suffix=".npz")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(_MAGIC + _digest(key, body) + body)
        os.chmod(name, 0o644)  # a handout's file, read by students: mkstemp made it 0600
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return target


def _key(exercise: Exercise, seed: int, count: int) -> str:
    return references_key(exercise, seed, range(count), _FORMAT, releases=False)


def _digest(key: str, body: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + body).digest()


def _read(file: Path, exercise: Exercise, key: str) -> References | None:
    try:
        with file.open("rb") as handle:
            if os.fstat(handle.fileno()).st_size > _MAX_BYTES:
                return None
            data = handle.read()
    except OSError:
        return None
    start = len(_MAGIC) + _DIGEST_BYTES
    if data[: len(_MAGIC)] != _MAGIC:
        return None
    body = data[start:]
    if not hmac.compare_digest(data[len(_MAGIC) : start], _digest(key, body)):
        return None
    return decoded(body, exercise, key)


def _redrawn_equal(exercise: Exercise, seed: int, references: References, index: int) -> bool:
    """Whether trial `index`, drawn again here, is the stored one: its sizes, and each input's dtype,
    shape and bits."""
    stored, drawn = references.trials[index], make_trial(exercise, seed, index)
    if dict(stored.sizes) != dict(drawn.sizes) or set(stored.inputs) != set(drawn.inputs):
        return False
    for name, value in drawn.inputs.items():
        kept = np.asarray(stored.inputs[name])
        value = np.asarray(value)
        if kept.dtype != value.dtype or kept.shape != value.shape or kept.tobytes() != value.tobytes():
            return False
    return True
