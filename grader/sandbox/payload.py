"""The worker's messages, validated at the trust boundary before the grader acts on them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from grader.outcomes import Location
from grader.sandbox.protocol import (
    EXTENDED,
    MAX_LOCATION_FILE,
    MAX_LOCATION_FUNCTION,
    MAX_LOCATION_LINE,
    NUMERIC_DTYPES,
    Run,
)
from grader.text import valid_unicode

_TEXT = 64_000
_NAME = 200
_NOTE = 1000
# Text from the worker is the student's: a lone surrogate in it would break every JSON written later.
Text = Annotated[str, BeforeValidator(lambda text: valid_unicode(text) if isinstance(text, str) else text)]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FailedCellSent(_Message):
    """A cell of a notebook run whole that failed outside its definitions (worker/cells.py)."""

    file: Annotated[Text, Field(max_length=_NOTE)]  # the converted notebook, as the worker imported it
    line: int = Field(ge=0, le=10_000_000)  # of the converted file
    error: Annotated[Text, Field(max_length=_NOTE)]


class LocationSent(_Message):
    """Where a failure's traceback ends in the student's files (worker/tracebacks.py: student_location)."""

    file: Annotated[Text, Field(max_length=MAX_LOCATION_FILE)]
    line: int = Field(ge=0, le=MAX_LOCATION_LINE, strict=True)
    function: Annotated[Text, Field(max_length=MAX_LOCATION_FUNCTION)] = ""


def located(location: LocationSent | None) -> Location | None:
    return None if location is None else Location(location.file, location.line, location.function)


class Ready(_Message):
    type: Literal["ready"]
    import_seconds: float = Field(default=0.0, ge=0)  # how long importing the hand-in took
    # What a `definitions` notebook did not import for want of the module ("import x (cell 2, line 1)")
    skipped_imports: list[Annotated[Text, Field(max_length=_NOTE)]] = Field(default=[], max_length=20)
    # Cells of a notebook run whole that failed outside its definitions, skipped ('nb.ipynb.py", line 14:
    # NameError: ...'): notes, not failures
    failed_cells: list[FailedCellSent] = Field(default=[], max_length=20)
    # The job's nonce, echoed: a "ready" written before the grader sent this job (by a hand-in that
    # patched the channel during an earlier exercise) cannot carry it.
    job: str = Field(default="", max_length=64)


class Done(_Message):
    type: Literal["done"]


class PassDone(_Message):
    type: Literal["pass-done"]


class Fatal(_Message):
    type: Literal["fatal"]
    kind: Literal["import", "exit", "missing-function"]
    file: Text = Field(max_length=_NAME)
    message: Text = Field(max_length=_TEXT)
    traceback: Text = Field(default="", max_length=_TEXT)
    location: LocationSent | None = None
    defined: list[Annotated[Text, Field(max_length=_NAME)]] = Field(default=[], max_length=50)


class TorchWanted(_Message):
    """A worker without torch was asked for it (worker/imports.py): the grader runs the hand-in again in a
    worker with torch. Its last word on the exercise."""

    type: Literal["torch-wanted"]


class ReturnedArray(_Message):
    name: Text = Field(max_length=_NAME)
    ok: Literal[True]
    dtype: str = Field(max_length=20)
    source: Text = Field(max_length=_NAME)
    # The Python type it was returned as, where not an array: graded as the array it describes.
    python: Literal["float", "int", "bool", "list", "tuple"] | None = None

    @field_validator("dtype")
    @classmethod
    def _numeric(cls, dtype: str) -> str:
        if dtype not in NUMERIC_DTYPES | {"bfloat16", EXTENDED}:
            raise ValueError(f"dtype {dtype!r} is not a numeric dtype")
        return dtype


class ReturnProblem(_Message):
    name: Text = Field(max_length=_NAME)
    ok: Literal[False]
    problem: Text = Field(max_length=_TEXT)
    # "numerical": not computed wrong but refused, what the course refuses seen in the trial's calls
    # (worker/numerical_watch.py): the problem says what and where
    refused: Literal["numerical"] | None = None


class Overran(_Message):
    """How a call passed its deadline, as the worker measured it."""

    deadline: Literal["cpu", "wall"]  # its CPU deadline, or its wall-clock cap
    cpu_seconds: float = Field(ge=0, allow_inf_nan=False)
    first_call: bool  # the first call after the import (first_call_seconds)


class TrialFailed(_Message):
    type: Literal["trial-error"]
    trial: int = Field(ge=0)
    run: Run
    kind: Literal["exception", "timeout", "exit", "memory", "bad-return"]
    message: Text = Field(max_length=_TEXT)
    traceback: Text = Field(default="", max_length=_TEXT)
    location: LocationSent | None = None
    overrun: Overran | None = None  # with kind "timeout"

    @model_validator(mode="after")
    def _overrun_only_for_a_timeout(self) -> TrialFailed:
        if self.overrun is not None and self.kind != "timeout":
            raise ValueError(f"a {self.kind} error says how a deadline passed")
        return self


ReturnKind = Annotated[ReturnedArray | ReturnProblem, Field(discriminator="ok")]
_MAX_COLUMNS = 1 << 16  # runs of one dtype and ndim in a frame: a return changes them seldom if ever


class Trials(_Message):
    """Trial results sent together, as columns (worker Channel): each distinct description of a return once
    (`kinds`); the frame's arrays give each trial's number, seconds and kind of each return; its columns
    hold the returns' arrays, `returns` naming the return of each (checked against the frame by the
    reader, reading.py)."""

    type: Literal["trials"]
    run: Run
    kinds: list[ReturnKind] = Field(min_length=1)
    returns: list[Annotated[int, Field(ge=0)]] = Field(max_length=_MAX_COLUMNS)


WorkerMessage = Annotated[
    Ready | PassDone | Done | Fatal | TorchWanted | Trials | TrialFailed, Field(discriminator="type")
]
MESSAGE = TypeAdapter(WorkerMessage)
