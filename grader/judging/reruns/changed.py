"""A return whose answer changed between identical calls (a trial run again exactly as it first ran):
state kept between calls, in the student's words. No rerun of such code says anything of its precision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from grader.judging.reruns.outcomes import same_values
from grader.sandbox.report import Pass, Returned

if TYPE_CHECKING:
    from grader.exercise.reference import References


_NO_RERUN = "so no rerun can tell rounding from a mistake: judged by its values"


@dataclass(frozen=True)
class ChangedAnswer:
    """A trial whose return came back otherwise from the same call, run again as it first ran."""

    trial: int
    first_error: float  # the largest |error| of each answer, as a share of the reference's largest entry
    again_error: float

    def words(self, name: str, consequence: str = _NO_RERUN) -> str:
        return (
            f"it returned different answers for the same inputs: on trial {self.trial} its {name} was "
            f"{_off_by(self.first_error)} on the first call and {_off_by(self.again_error)} when called "
            f"again with the same inputs, {consequence}. "
            "Your function keeps state between calls (a call counter, a global list, a cache) or draws "
            f"random numbers it does not seed: compute {name} from the arguments alone"
        )


def _off_by(error: float) -> str:
    """An answer's error, as a share of the reference's largest entry, in words."""
    if error == 0:
        return "exact"
    if not np.isfinite(error):
        return "not finite"
    return f"off by {error:.2g} of its largest entry" if error < 0.01 else f"off by {error:.0%}"


def answer_error(array: np.ndarray, expected: np.ndarray, scale_of: np.ndarray | None = None) -> float:
    """The largest |array - expected| as a share of the largest finite entry of `scale_of` (by default
    `expected`); inf: NaN, another size, or nothing to measure against."""
    expected = np.asarray(expected, dtype=np.float64)
    if array.size != expected.size:
        return float("inf")
    change = np.abs(array.astype(np.float64).reshape(expected.shape) - expected)
    largest = float(np.nan_to_num(change, nan=np.inf).max(initial=0.0))
    measure = expected if scale_of is None else np.asarray(scale_of, dtype=np.float64)
    scale = float(np.abs(measure[np.isfinite(measure)]).max(initial=0.0))
    if largest == 0:
        return 0.0
    return largest / scale if scale > 0 else float("inf")


def changed_answer(
    name: str, references: References, got: Mapping[int, np.ndarray], again: Pass
) -> ChangedAnswer | None:
    """The first trial, run again as it first ran, on which `name` came back materially otherwise than the
    first time (the two answers apart by more than _MATERIAL of the reference's largest entry: the same
    call is bit for bit the same computation, and rounding differs by far less anyway), or None."""
    # From the few trials run again: `keys() & keys()` walked every trial returned, a thousand per return.
    for index in sorted(index for index in again.outputs if index in got):
        item = again.outputs[index].by_name.get(name)
        if not isinstance(item, Returned) or index not in references.expected:
            continue
        first_array = np.asarray(got[index])
        if same_values(item.array, first_array):
            continue
        expected = references.expected[index][name]
        if answer_error(item.array, first_array, scale_of=expected) > _MATERIAL:
            return ChangedAnswer(
                index, answer_error(first_array, expected), answer_error(item.array, expected)
            )
    return None


# Below this share of the reference's largest entry a change is rounding's at any precision a hand-in
# computes in (float16's unit roundoff is 4.9e-4): never called a changed answer.
_MATERIAL = 1e-3
