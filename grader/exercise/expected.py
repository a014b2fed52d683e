"""What grading compares against, as plain numpy: computed with torch (reference.py) or read back from
the cache (reference_cache.py), which is why this module imports no torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from grader.exercise.trials import Trial

Expected = Mapping[str, np.ndarray]  # return name -> float64 array for one trial


@dataclass(frozen=True)
class References:
    """What grading compares against: per trial, the expected returns and each entry's rounding spread."""

    trials: tuple[Trial, ...]
    expected: dict[int, Expected]
    spread: dict[int, Expected]
