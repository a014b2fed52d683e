"""An exercise's references as a class run shares them: the trials at once, the expected values computed
once, by whichever asks first (the class run's own thread, or a grading whose worker already runs the
trials), first where `try_first` says (a zygote's fork, for a local run), else in this process.

A class run's first hand-ins used to wait for the references before their workers got a job: the
references (torch's import in the grader, the Monte Carlo spread) took seconds, and the warm workers sat
idle for most of them. Drawing the trials needs numpy only; every grading that needs
the values before they exist waits for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from grader.errors import GraderError
from grader.exercise.reference_cache import computed_references
from grader.exercise.settings import ReferenceCache, Settings
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial

if TYPE_CHECKING:
    from grader.exercise.expected import References


# Computes an exercise's references of these trials (of this seed) somewhere, and keeps them in the
# cache, or gives None where it cannot.
Attempt = Callable[[ReferenceCache, Exercise, int, Sequence[Trial]], "References | None"]


class SharedReferences:
    """`trials` at once; `get()` the references of them, computed on the first call (other callers wait)
    and kept, or the GraderError that computing them raised, raised again on every call."""

    def __init__(
        self,
        exercise: Exercise,
        settings: Settings,
        trials: Sequence[Trial],
        references: References | None = None,
        failure: GraderError | None = None,
    ) -> None:
        """`trials`: drawn from `settings`, whose cache keeps the references computed; `references`: those
        of `trials`, already at hand (from the disk cache); `failure`: why there are none (the trials
        could not be drawn)."""
        self.exercise = exercise
        self.trials = tuple(trials)
        self._seed, self._cache = settings.seed, settings.cache
        self._lock = threading.Lock()
        self._references = references
        self._failure = failure
        self._first_try: Attempt | None = None

    def try_first(self, attempt: Attempt) -> None:
        """Compute them with `attempt` (elsewhere than in this process, say) before computing them here,
        where it gives None. Called once, before any `get`; the attempt runs once, whatever it gives."""
        self._first_try = attempt

    def get(self) -> References:
        with self._lock:
            if self._references is None and self._failure is None:
                attempt, self._first_try = self._first_try, None
                here = (self._cache, self.exercise, self._seed, self.trials)
                found = attempt(*here) if attempt is not None else None
                try:
                    self._references = found or computed_references(*here)
                except GraderError as exc:  # the exercise's graph fails on its own inputs
                    self._failure = exc
            if self._failure is not None:
                raise self._failure
            assert self._references is not None
            return self._references

    @property
    def stored(self) -> References | None:
        """The references, where at hand already (from the disk cache, or computed); never waits."""
        return self._references

    @property
    def ready(self) -> bool:
        """Computed, and without failure: what waits for them (the results of those who handed in nothing)
        may go ahead. Never waits."""
        return self._references is not None

    @property
    def failure(self) -> GraderError | None:
        """Why they could not be computed, once a call found out; never waits."""
        return self._failure
