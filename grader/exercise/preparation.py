"""`grader prepare`: an exercise's references computed ahead and stored, for every set of trials a run will
ask for, so that the run itself computes none (reference_cache.py keeps them).

A run asks for the trials 0..N-1 of its seed (N: --trials, else the exercise's), and `grader gradescope`
for the first `gradescope.visible_trials` of them as well, where it previews a grading shown later.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from grader.errors import GraderError
from grader.exercise import reference_cache
from grader.exercise.expected import References
from grader.exercise.settings import ReferenceCache, Settings
from grader.exercise.spec import Exercise
from grader.exercise.trials import DEFAULT_SEED, make_trials


class Status(enum.Enum):
    COMPUTED = "computed"
    STORED = "already stored"
    FAILED = "failed"


@dataclass(frozen=True)
class Preparation:
    """What preparing one set of trials of one exercise and seed did: `seconds` it took to compute them,
    `error` why it could not (the exercise author's, or the folder's)."""

    exercise: str
    seed: int
    trials: int
    status: Status
    seconds: float = 0.0
    error: str = ""


def trial_counts(exercise: Exercise, settings: Settings) -> list[int]:
    """The trial counts runs of the exercise ask references for: the run's, and its Gradescope preview's."""
    count = settings.trial_count(exercise)
    preview = exercise.spec.gradescope.visible_trials
    return [count, *([preview] if preview is not None and preview < count else [])]


def prepare(exercise: Exercise, runs: Sequence[Settings]) -> Iterator[Preparation]:
    """The references of each run (a seed of a pool, each) of each of `trial_counts`, stored in its cache
    where they were not, read back to be sure."""
    for settings in runs:
        for count in trial_counts(exercise, settings):
            yield _prepared(settings.cache, exercise, settings.seed, count)


def _prepared(cache: ReferenceCache, exercise: Exercise, seed: int, count: int) -> Preparation:
    if reference_cache.lookup(cache, exercise, seed, count) is not None:
        return Preparation(exercise.id, seed, count, Status.STORED)
    import grader.exercise.reference  # noqa: F401 - torch's import, once: not the first one's time

    start = time.perf_counter()
    try:
        reference_cache.computed_references(cache, exercise, seed, make_trials(exercise, seed, count))
    except GraderError as exc:  # the exercise's graph or reference fails on its own inputs
        return Preparation(exercise.id, seed, count, Status.FAILED, error=str(exc))
    seconds = time.perf_counter() - start
    if reference_cache.lookup(cache, exercise, seed, count) is None:  # storing is best effort; it must hold
        message = f"computed, but {cache.folder} did not keep them (a folder this user cannot write?)"
        return Preparation(exercise.id, seed, count, Status.FAILED, seconds, message)
    return Preparation(exercise.id, seed, count, Status.COMPUTED, seconds)


def public_references(exercise: Exercise, cache: ReferenceCache) -> References:
    """The references of the trials `grader check` uses by default (the public seed, the spec's count):
    stored ones, else computed (importing torch) and kept in `cache` as well. Raises GraderError where the
    exercise's graph or reference fails on its own inputs."""
    count = exercise.spec.trials
    found = reference_cache.lookup(cache, exercise, DEFAULT_SEED, count)
    if found is not None:
        return found
    trials = make_trials(exercise, DEFAULT_SEED, count)
    return reference_cache.computed_references(cache, exercise, DEFAULT_SEED, trials)
