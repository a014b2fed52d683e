"""Where a grading's trials and references come from: one rule for finding an exercise's references (the
disk cache, else trials drawn now and their expected values computed by whoever asks first: shared.py).

`find_references` is the rule; `ClassReferences` applies it once per exercise for a whole class, and hands
what the cache lacked to where the class's backend computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from grader.errors import GraderError
from grader.exercise.reference_cache import stored_references
from grader.exercise.settings import Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise
from grader.exercise.trials import make_trials


def find_references(exercise: Exercise, settings: Settings, partial: bool = False) -> SharedReferences:
    """The exercise's references for these settings: the cache's, or the trials drawn now and their
    expected values computed on the first `get()`. Raises GraderError where the trials cannot be drawn.
    `partial`: stored ones may keep some spreads only (DeferredSpreads: the caller says where the rest
    are computed)."""
    count = settings.trial_count(exercise)
    only = settings.only_trial
    stored = stored_references(settings.cache, exercise, settings.seed, count, only, partial)
    if stored is not None:
        return SharedReferences(exercise, settings, stored.trials, stored)
    trials = make_trials(exercise, settings.seed, count, settings.only_trial)
    return SharedReferences(exercise, settings, trials)


# Told of an exercise's references that the cache lacked, before any grading asks for them: where to
# compute them (a class's backend: a fork of a warm zygote, say).
Share = Callable[[SharedReferences], None]


class ClassReferences:
    """A class run's references: each exercise's found once (find_references), by the first grading of
    it, and shared by every other; those the cache lacked handed to `share`. An exercise whose trials
    cannot be drawn has references whose `failure` says why (its other gradings are not attempted)."""

    def __init__(self, settings: Settings, share: Share) -> None:
        self._settings = settings
        self._share = share
        self._found: dict[str, SharedReferences] = {}

    def of(self, exercise: Exercise) -> SharedReferences:
        found = self._found.get(exercise.id)
        if found is None:
            try:
                found = find_references(exercise, self._settings)
            except GraderError as exc:  # its inputs cannot be drawn: the other exercises are graded
                found = SharedReferences(exercise, self._settings, (), failure=exc)
            self._found[exercise.id] = found
            if not found.ready and found.failure is None:
                self._share(found)
        return found

    def __iter__(self) -> Iterator[SharedReferences]:
        """Those found so far, in the order they were first asked for."""
        return iter(list(self._found.values()))
