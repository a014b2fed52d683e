"""A `SubmissionResult` as plain data: the one conversion that every written form of a result starts from.

`record(result)` is the whole result, losslessly: the gradebook stores its JSON and reads it back
(`ResultRecord.result()`); the `--json` output (json_report.py) and Gradescope's results.json
(gradescope.py) pick and name their fields from it, so that a score, a verdict or a return's points
cannot read one way in the gradebook and another on Gradescope.

Its JSON is the gradebook's format: each field as the dataclass names it, in its order; arrays as
{"__array__": values, "dtype", "shape"} (a NumPy scalar where an array usually is, as its value); NaN and
infinities as JSON's extensions (NaN, Infinity), which Python reads back. Older rows lack fields added
since have a default, or are filled in by the gradebook before they reach here (gradebook.upgraded_row):
nothing here reads a message's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from grader.handin.choice import ChosenBy, FileChoice
from grader.judging.compare import EntryError, Precision
from grader.outcomes import (
    FailedCell,
    Failure,
    FailureKind,
    IsolationLevel,
    IsolationUsed,
    Location,
    MistakeFamily,
    Verdict,
)
from grader.results import FailingCase, NearMiss, NotebookUse, ReturnResult, SubmissionResult


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, from_attributes=True, populate_by_name=True)


class ArrayRecord(_Record):
    values: Any = Field(alias="__array__")  # nested lists, as ndarray.tolist() gives them
    dtype: str
    shape: list[int]

    def array(self) -> np.ndarray:
        array: np.ndarray = np.array(self.values, dtype=self.dtype).reshape(self.shape)
        return array


# A NumPy scalar stands where an array usually is (a scalar return's mask): kept as its plain value.
_ArrayLike = ArrayRecord | bool | int | float | None


def _plain_array(value: object) -> object:
    if isinstance(value, np.ndarray):
        return {"__array__": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _numpy(value: _ArrayLike) -> Any:
    if isinstance(value, ArrayRecord):
        return value.array()
    return None if value is None else np.asarray(value)[()]


class EntryRecord(_Record):
    index: list[int]
    expected: float
    got: float
    abs_error: float
    rel_error: float
    ulps: float
    envelope_ratio: float

    def entry(self) -> EntryError:
        return EntryError(
            tuple(self.index),
            self.expected,
            self.got,
            self.abs_error,
            self.rel_error,
            self.ulps,
            self.envelope_ratio,
        )


class CaseRecord(_Record):
    trial: int
    sizes: dict[str, int]
    expected: _ArrayLike
    got: _ArrayLike
    mask: _ArrayLike

    @field_validator("expected", "got", "mask", mode="before")
    @classmethod
    def _arrays(cls, value: object) -> object:
        return _plain_array(value)

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Mapping[str, int]) -> dict[str, int]:
        return dict(value)

    def case(self) -> FailingCase:
        return FailingCase(self.trial, self.sizes, _numpy(self.expected), _numpy(self.got), _numpy(self.mask))

    def failing_indices(self) -> list[list[int]]:
        """Where the mask is set, entry by entry (none without a mask)."""
        return [] if self.mask is None else np.argwhere(_numpy(self.mask)).tolist()


class NearMissRecord(_Record):
    name: str
    envelopes: float
    beyond: int
    entries: int
    trials: int
    trial: int
    index: list[int]
    separated: bool

    def near_miss(self) -> NearMiss:
        return NearMiss(
            self.name,
            self.envelopes,
            self.beyond,
            self.entries,
            self.trials,
            self.trial,
            tuple(self.index),
            self.separated,
        )


class ReturnRecord(_Record):
    name: str
    verdict: Verdict
    trials: int
    failed_trials: int
    message: str
    points: float
    score: float
    precision: Precision
    max_ratio: float
    failing_entries: list[EntryRecord]
    case: CaseRecord | None
    shrink: float | None
    misconception: str | None
    mistake_family: MistakeFamily | None = None
    feedback: str = ""
    near_misses: list[NearMissRecord] = []
    speaks_of_envelopes: bool
    summary: str = ""  # a row written before the field: its report shows the message in full

    @field_serializer("precision")
    def _precision_named(self, precision: Precision) -> str:
        return precision.value  # as every other form writes it (the enum's own members are not JSON)

    def returned(self) -> ReturnResult:
        return ReturnResult(
            name=self.name,
            verdict=self.verdict,
            trials=self.trials,
            failed_trials=self.failed_trials,
            message=self.message,
            points=self.points,
            score=self.score,
            precision=self.precision,
            max_ratio=self.max_ratio,
            failing_entries=tuple(e.entry() for e in self.failing_entries),
            case=None if self.case is None else self.case.case(),
            shrink=self.shrink,
            misconception=self.misconception,
            mistake_family=self.mistake_family,
            feedback=self.feedback,
            near_misses=tuple(n.near_miss() for n in self.near_misses),
            speaks_of_envelopes=self.speaks_of_envelopes,
            summary=self.summary,
        )


class LocationRecord(_Record):
    file: str
    line: int
    function: str
    cell: int

    def location(self) -> Location:
        return Location(self.file, self.line, self.function, self.cell)


class FailureRecord(_Record):
    kind: FailureKind
    message: str
    traceback: str
    trial: int | None
    location: LocationRecord | None = None  # absent from a row kept before failures carried one

    def failure(self) -> Failure:
        location = None if self.location is None else self.location.location()
        return Failure(self.kind, self.message, self.traceback, self.trial, location)


class IsolationRecord(_Record):
    level: IsolationLevel
    line: str
    brief: str

    def used(self) -> IsolationUsed:
        return IsolationUsed(self.level, self.line, self.brief)


class FailedCellRecord(_Record):
    notebook: str
    cell: int
    line: int
    error: str


class NotebookRecord(_Record):
    cells: str
    tag: str
    left_out: int
    refused: list[str] = []
    skipped_imports: list[str] = []
    failed_cells: list[FailedCellRecord] = []

    def use(self) -> NotebookUse:
        failed = tuple(FailedCell(c.notebook, c.cell, c.line, c.error) for c in self.failed_cells)
        return NotebookUse(
            self.cells, self.tag, self.left_out, tuple(self.refused), tuple(self.skipped_imports), failed
        )


class FileChoiceRecord(_Record):
    graded: str
    chosen_by: ChosenBy
    also_defined: list[str]

    def choice(self) -> FileChoice:
        return FileChoice(self.graded, self.chosen_by, tuple(self.also_defined))


class ResultRecord(_Record):
    exercise: str
    exercise_dir: str
    submission: str
    student: str
    seed: int
    trials: int
    returns: list[ReturnRecord]
    error: FailureRecord | None
    isolation: IsolationRecord
    first_trial_error: FailureRecord | None
    stdout: str
    stderr: str
    seconds: float
    only_trial: int | None
    import_seconds: float
    runs_at_import: list[str] = []
    notebook: NotebookRecord | None = None
    file_choice: FileChoiceRecord | None = None

    @property
    def score(self) -> float:
        return sum(r.score for r in self.returns)

    @property
    def max_score(self) -> float:
        return sum(r.points for r in self.returns)

    def result(self) -> SubmissionResult:
        return SubmissionResult(
            exercise=self.exercise,
            exercise_dir=self.exercise_dir,
            submission=self.submission,
            student=self.student,
            seed=self.seed,
            trials=self.trials,
            returns=tuple(r.returned() for r in self.returns),
            error=None if self.error is None else self.error.failure(),
            isolation=self.isolation.used(),
            first_trial_error=None if self.first_trial_error is None else self.first_trial_error.failure(),
            stdout=self.stdout,
            stderr=self.stderr,
            seconds=self.seconds,
            only_trial=self.only_trial,
            import_seconds=self.import_seconds,
            runs_at_import=tuple(self.runs_at_import),
            notebook=None if self.notebook is None else self.notebook.use(),
            file_choice=None if self.file_choice is None else self.file_choice.choice(),
        )

    def to_json(self) -> str:
        return json.dumps(self.model_dump(by_alias=True), allow_nan=True)


def record(result: SubmissionResult) -> ResultRecord:
    return ResultRecord.model_validate(result)


def from_data(data: object) -> ResultRecord:
    return ResultRecord.model_validate(data)
