"""What a trial's reruns came back as, read from the worker's report: an array (`Answered`), the input
refused (`Refused`), no answer for another reason (`RerunFailed`), or, for an extended rerun of torch code,
torch's own refusal (`TorchRefused`); and a trial beyond rounding decided by them (`decided`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from grader.judging.compare import Comparison, RerunOutcome
from grader.outcomes import FailureKind, Verdict
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.report import Pass, Returned, WorkerReport


@dataclass(frozen=True)
class Answered:
    """A rerun that returned the array: its values, and their dtype as the worker described it."""

    array: np.ndarray
    dtype: str


@dataclass(frozen=True)
class Refused:
    """A rerun the code answered otherwise than its first run, which returned values: it raised, returned
    the wrong number of values, None or another shape. The worker tried it with exact ndarrays too
    (worker/trial.py), so what is left is a check of the dtype (`assert x.dtype == np.float64`), torch's
    refusal of extended precision, or the like: the input was refused, the formula not judged."""

    what: str  # what the code did, in the student's words (the exception and the line that raised it)


@dataclass(frozen=True)
class RerunFailed:
    """A rerun that came to no answer for another reason than its input: it timed out, ran out of memory."""

    message: str


@dataclass(frozen=True)
class TorchRefused:
    """An extended rerun of torch code, refused by torch: torch stops at float64 (its tensor() of an
    extended array raises), which no change to the code lifts."""

    what: str


Rerun = Answered | Refused | RerunFailed
_REFUSALS = (FailureKind.EXCEPTION, FailureKind.BAD_RETURN)
_TORCH = "torch.Tensor"  # in the source of a return made by torch (worker/returns.py)


def rerun_of(run: Pass, index: int, name: str) -> Rerun | None:
    """Trial `index`'s answer for return `name` in `run`; None where the run has nothing of the trial."""
    if index in run.outputs:
        item = run.outputs[index].by_name[name]
        return Refused(item.problem) if isinstance(item, ReturnProblem) else Answered(item.array, item.dtype)
    if index in run.failures:
        failure = run.failures[index]
        return Refused(failure.message) if failure.kind in _REFUSALS else RerunFailed(failure.message)
    return None


def extended_of(report: WorkerReport, index: int, name: str) -> Rerun | TorchRefused | None:
    """A trial's extended rerun, where torch code's refusal of it is torch's: torch stops at float64 (its
    tensor() of an extended array raises), which no change to the code lifts. Torch code is told by what
    its first run returned, torch tensors."""
    extended = rerun_of(report.extended, index, name)
    output = report.first.outputs.get(index)
    if (
        isinstance(extended, Refused)
        and output is not None
        and any(
            isinstance(item, Returned) and _TORCH in item.description.source
            for item in output.by_name.values()
        )
    ):
        return TorchRefused(extended.what)
    return extended


_Run = TypeVar("_Run", bound=Answered | Refused | RerunFailed | TorchRefused | None)


def same_values(rerun: np.ndarray, got: np.ndarray) -> bool:
    """Whether a rerun gave back exactly the first run's values: nothing it lifted changed them."""
    return np.array_equal(rerun.reshape(got.shape), got.astype(np.float64), equal_nan=True)


def same_shape(rerun: _Run, expected: np.ndarray) -> _Run | Refused:
    """A rerun's array, or why it is of no use: code that returns another shape when lifted."""
    if isinstance(rerun, Answered) and rerun.array.size != expected.size:
        return Refused(f"it returned shape {rerun.array.shape}, expected {expected.shape}")
    return rerun


def no_answer(run: Refused | RerunFailed | None) -> str:
    """Why a run that should decide a trial gave no array, in the student's words."""
    if run is None:
        return "it was not run"
    return run.what if isinstance(run, Refused) else run.message


def decided(
    original: Comparison, outcome: RerunOutcome, note: str, shrink: float | None = None
) -> Comparison:
    verdict = Verdict.INSTABILITY if outcome.unstable else original.verdict
    return replace(original, verdict=verdict, rerun=outcome, note=note, shrink=shrink)
