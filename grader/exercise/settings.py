"""A grading's settings, resolved once for a run: the seed, whether it is secret, how many trials.

`trials or exercise.spec.trials` is decided here (grading.grade's own copy of the rule goes once it takes
its references from sources.find_references).
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.exercise.spec import Exercise


@dataclass(frozen=True)
class Settings:
    """What a grading's trials are drawn from, the same for every exercise and student of a run."""

    seed: int
    trials: int | None = None  # None: each exercise's own count (its spec's `trials`)
    only_trial: int | None = None  # one trial alone (a replay); None: all of them
    secret: bool = False  # `seed` was drawn for this run (trials.secret_seed): results keep under any

    def trial_count(self, exercise: Exercise) -> int:
        return self.trials or exercise.spec.trials
