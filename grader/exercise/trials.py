"""Randomized trials: sizes and inputs derived only from (seed, exercise id, trial index).

The same triple always gives the same trial, on any machine, so every failure can be replayed. A grading
that counts (`grader run`, `grader gradescope`) draws its seed with `secret_seed()`: this module is
importable from a hand-in, so a seed it could guess would let it precompute every trial's answers.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from grader.exercise.graph import evaluate_size_expression
from grader.exercise.spec import Exercise, InputSpec

DEFAULT_SEED = 0  # `grader check` and `repro`: a student's own checks, the same trials every time
SECRET_BITS = 63  # a seed nobody guesses, that still fits SQLite's and JSON readers' signed 64-bit integers


def secret_seed() -> int:
    """A fresh seed from the OS's generator: no hand-in can know it before it is graded with it."""
    return secrets.randbits(SECRET_BITS)


@dataclass(frozen=True)
class Trial:
    index: int
    sizes: Mapping[str, int]
    inputs: Mapping[str, np.ndarray]

    @property
    def size_key(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self.sizes.items()))

    def describe_sizes(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.sizes.items())) or "fixed sizes"


def student_seed(exercise: Exercise, seed: int) -> int:
    """The seed of the student's own randomness (random, numpy's and torch's global generators) for this
    exercise and trial seed: the worker derives each trial's from it, so a hand-in that draws random
    numbers (a check loop left at the top of the file, say) gets the same ones on every run."""
    digest = hashlib.sha256(f"{seed}:{exercise.id}:student".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _exercise_key(exercise_id: str) -> int:
    return int.from_bytes(hashlib.sha256(exercise_id.encode()).digest()[:8], "little")


def make_trial(exercise: Exercise, seed: int, index: int) -> Trial:
    return _made(exercise, _entropy_words(seed, _exercise_key(exercise.id)), index)


def make_trials(exercise: Exercise, seed: int, count: int, only: int | None = None) -> list[Trial]:
    indices = [only] if only is not None else range(count)
    prefix = _entropy_words(seed, _exercise_key(exercise.id))  # hashed and split once, not per trial
    return [_made(exercise, prefix, i) for i in indices]


def _entropy_words(*numbers: int) -> list[int]:
    """The 32-bit words numpy's SeedSequence makes of a list of non-negative ints (each int's words, least
    significant first, one 0 word for 0): a generator seeded with them as a uint32 array is the one seeded
    with the list, state for state (tests/test_trials.py), without numpy's conversion of the list in
    Python, more than half of what seeding a trial's generator took."""
    words: list[int] = []
    for number in numbers:
        if number < 0:
            raise ValueError(f"a seed must be non-negative, got {number}")
        words.append(number & 0xFFFFFFFF)
        number >>= 32
        while number:
            words.append(number & 0xFFFFFFFF)
            number >>= 32
    return words


def _made(exercise: Exercise, prefix: list[int], index: int) -> Trial:
    rng = np.random.default_rng(np.array([*prefix, *_entropy_words(index)], dtype=np.uint32))
    sizes: dict[str, int] = {}
    derived = dict(exercise.derived_sizes)
    for name in sorted(exercise.spec.sizes):
        if name in derived:
            continue
        low, high = exercise.size_range(name)
        drawn = int(rng.integers(low, high + 1))
        # Trial 0 has every size at its smallest: a mistake that shows at any size is shown at the smallest.
        sizes[name] = low if index == 0 else drawn
    for name, expression in derived.items():  # in the spec's order: each may use those before it
        sizes[name] = evaluate_size_expression(expression, sizes)
    inputs = {
        name: _draw(spec, exercise.shape(name, sizes), sizes, rng)
        for name, spec in exercise.spec.inputs.items()
        if spec.dist != "rejection"
    }
    # Derived after every drawn input, drawing nothing unless a sequence must be mended: exercises without
    # one draw exactly what they drew before rejection existed.
    for name, spec in exercise.spec.inputs.items():
        if spec.dist == "rejection":
            assert spec.of is not None and spec.reject is not None  # the spec model guarantees them
            source = exercise.spec.inputs[spec.of]
            bounds = (int(_bound(source.low, 0, sizes)), int(_bound(source.high, 0, sizes)))
            count = exercise.shape(name, sizes)[0]
            inputs[name] = _kept(inputs[spec.of], int(inputs[spec.reject]), count, bounds, rng)
    inputs = {name: inputs[name] for name in exercise.spec.inputs}  # the spec's order
    for name in exercise.sizes_handed:  # the student gets these sizes as Python ints
        inputs[name] = np.array(sizes[name], dtype=np.int64)
    for array in inputs.values():
        array.flags.writeable = False  # the reference's inputs must stay pristine
    return Trial(index=index, sizes=sizes, inputs=inputs)


def _bound(value: float | str | None, default: float, sizes: Mapping[str, int]) -> float:
    if value is None:
        return default
    if isinstance(value, float | int):
        return float(value)
    return float(evaluate_size_expression(value, sizes))


def _draw(
    spec: InputSpec, shape: tuple[int, ...], sizes: Mapping[str, int], rng: np.random.Generator
) -> np.ndarray:
    if spec.dist == "uniform":
        low, high = _bound(spec.low, 0.0, sizes), _bound(spec.high, 1.0, sizes)
        return _rounded(rng.uniform(low, high, size=shape), spec)
    if spec.dist == "normal":
        return _rounded(rng.normal(spec.mean, spec.std, size=shape), spec)
    if spec.dist == "integer":
        low, high = int(_bound(spec.low, 0, sizes)), int(_bound(spec.high, 0, sizes))
        return rng.integers(low, high + 1, size=shape, dtype=np.int64)
    if spec.dist == "bernoulli":  # a 0/1 float mask, as dropout's: 1 with chance p
        assert spec.p is not None  # the spec model guarantees it
        return (rng.random(size=shape) < spec.p).astype(np.float64)
    assert spec.value is not None  # the spec model guarantees it
    return _rounded(np.full(shape, float(spec.value)), spec)


def _kept(
    draws: np.ndarray, reject: int, count: int, bounds: tuple[int, int], rng: np.random.Generator
) -> np.ndarray:
    """The first `count` entries of `draws` that differ from `reject`, as a loop that redraws any sample
    equal to it keeps them.

    Where `draws` holds fewer such entries, its last entries equal to `reject` are redrawn among the other
    values, in place, before anything sees it: code that redraws never runs out of draws, and the sequence
    handed out is the one derived from. (With a few values to draw from and room for rejections, rare.)
    """
    low, high = bounds
    rejected = np.flatnonzero(draws == reject)
    for position in rejected[::-1][: max(0, count - (draws.size - rejected.size))]:
        other = int(rng.integers(low, high))  # one of high - low values: those in [low, high] but reject
        draws[position] = other + 1 if other >= reject else other
    kept: np.ndarray = draws[draws != reject][:count].copy()
    return kept


def _rounded(values: np.ndarray, spec: InputSpec) -> np.ndarray:
    """Float64 values that the input's dtype holds exactly: what the student gets, the reference too."""
    return values if spec.dtype == "float64" else values.astype(spec.dtype).astype(np.float64)
