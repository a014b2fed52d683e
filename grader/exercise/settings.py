"""A grading's settings, resolved once for a run: the seed, whether it is secret, how many trials, and where
its references are kept and found.

`trials or exercise.spec.trials` is decided here, and nowhere else. The reference cache's folder and its
policy on a miss are the user's to set ($GRADER_CACHE_DIR, $GRADER_REFERENCES): read once, when the
settings are made, and carried from there to whatever looks references up (a class's Dask workers get
them pickled with the settings), never set back into the environment for another module to find.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.exercise.spec import Exercise

CACHE_ENV = "GRADER_CACHE_DIR"
POLICY_ENV = "GRADER_REFERENCES"
STORED_ONLY = "stored"  # $GRADER_REFERENCES's value that makes a miss an error


class OnMiss(enum.Enum):
    """What a grading does where the cache lacks the references it asks for."""

    COMPUTE = "compute"
    REFUSE = "refuse"  # an error (reference_cache.ReferencesNotStored): a Gradescope image's, a test's


@dataclass(frozen=True)
class ReferenceCache:
    """Where references are kept (reference_cache.py): `folder`, None where the cache is off."""

    folder: Path | None
    on_miss: OnMiss = OnMiss.COMPUTE

    @staticmethod
    def from_environment() -> ReferenceCache:
        """$GRADER_CACHE_DIR (empty: no cache), else $XDG_CACHE_HOME/grader/references, else
        ~/.cache/grader/references; $GRADER_REFERENCES=stored refuses a miss."""
        chosen = os.environ.get(CACHE_ENV)
        if chosen is not None:
            folder = Path(chosen) if chosen else None
        else:
            base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            folder = Path(base) / "grader" / "references"
        refused = os.environ.get(POLICY_ENV) == STORED_ONLY
        return ReferenceCache(folder, OnMiss.REFUSE if refused else OnMiss.COMPUTE)

    def at(self, folder: Path) -> ReferenceCache:
        """The same policy, another folder (a seed pool's)."""
        return replace(self, folder=folder.resolve())

    def off(self) -> ReferenceCache:
        return replace(self, folder=None)


@dataclass(frozen=True)
class Settings:
    """What a grading's trials are drawn from, the same for every exercise and student of a run."""

    seed: int
    trials: int | None = None  # None: each exercise's own count (its spec's `trials`)
    only_trial: int | None = None  # one trial alone (a replay); None: all of them
    secret: bool = False  # `seed` was drawn for this run (trials.secret_seed): results keep under any
    cache: ReferenceCache = field(default_factory=ReferenceCache.from_environment)

    def trial_count(self, exercise: Exercise) -> int:
        return self.trials or exercise.spec.trials
