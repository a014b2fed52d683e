"""What grading compares against, as plain numpy: computed with torch (reference.py) or read back from
the cache (reference_cache.py), which is why this module imports no torch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from grader.exercise.trials import Trial

Expected = Mapping[str, np.ndarray]  # return name -> float64 array for one trial


@dataclass(frozen=True)
class References:
    """What grading compares against: per trial, the expected returns and each entry's rounding spread."""

    trials: tuple[Trial, ...]
    expected: Mapping[int, Expected]
    spread: Mapping[int, Expected]  # a dict, or DeferredSpreads: computed where judging needs them


# Computes the spreads of these trials elsewhere (a zygote's fork, or this process): each trial's, by index.
Fill = Callable[[Sequence[int]], Mapping[int, Expected]]


class DeferredSpreads(Mapping[int, Expected]):
    """Every trial's rounding spread, computed only where judging needs it (issue 41): the Monte Carlo
    pass was three quarters of a cold CS231n A2 check's references (2.7 of 3.6 s of CPU), and a correct
    hand-in's returns are within the envelope's lower bound, the spread left out (judging/settling.py),
    on 9276 of its 9500 trials. `fill` computes those asked for; a look-up of one that is not known yet
    computes all that are missing, so whatever reads a spread reads the one the whole pass gives it."""

    def __init__(
        self, trials: Sequence[int], known: Mapping[int, Expected], fill: Fill | None = None
    ) -> None:
        self._order = tuple(trials)
        self._trials = frozenset(self._order)
        self._known = dict(known)
        self._fill = fill
        self._lock = threading.Lock()  # a class run's gradings share one exercise's references
        self._bound: tuple[References, int, References] | None = None  # lower_bound's, while it holds

    def attach(self, fill: Fill) -> None:
        """Where the missing spreads are computed: set by the grading that read them from the cache."""
        self._fill = fill

    def __getitem__(self, trial: int) -> Expected:
        found = self._known.get(trial)
        if found is None:
            if trial not in self._trials:
                raise KeyError(trial)
            self.fill(self._order)
            found = self._known[trial]
        return found

    def __iter__(self) -> Iterator[int]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, trial: object) -> bool:
        return trial in self._trials

    @property
    def complete(self) -> bool:
        return len(self._known) == len(self._order)

    def known(self) -> dict[int, Expected]:
        """The spreads computed so far, by trial."""
        with self._lock:
            return dict(self._known)

    def missing(self, trials: Collection[int]) -> list[int]:
        with self._lock:
            return self._missing(trials)

    def _missing(self, trials: Collection[int]) -> list[int]:
        return [t for t in self._order if t in trials and t not in self._known]

    def fill(self, trials: Collection[int]) -> None:
        """Compute the spreads of `trials` not known yet, all in one call of `fill`."""
        with self._lock:
            missing = self._missing(trials)
            if not missing:
                return
            if self._fill is None:
                raise RuntimeError("deferred spreads without a way to compute them")
            computed = self._fill(missing)
            self._known.update((t, computed[t]) for t in missing)

    def lower_bound(self, references: References) -> References:
        """`references` with each trial's spread where known, else zero: an envelope no wider than the
        true one (a spread is never negative), which judges an entry within it as the true one does.
        The same object until more spreads are known (what is derived from it is kept per object)."""
        with self._lock:
            if (
                self._bound is not None
                and self._bound[0] is references
                and self._bound[1] == len(self._known)
            ):
                return self._bound[2]
            zeros: dict[tuple[int, ...], np.ndarray] = {}

            def zero(shape: tuple[int, ...]) -> np.ndarray:
                found = zeros.get(shape)
                if found is None:
                    found = zeros[shape] = np.zeros(shape)
                    found.flags.writeable = False
                return found

            known, expected = self._known, references.expected
            bound = {
                t: known[t] if t in known else {n: zero(v.shape) for n, v in expected[t].items()}
                for t in self._order
            }
            view = References(references.trials, references.expected, bound)
            self._bound = (references, len(known), view)
            return view
