"""`--json`: one object per graded (submission, exercise). Field names are a contract: keep them stable."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, field_validator

from grader.report.common import file_choice_note
from grader.report.serialised import CaseRecord, EntryRecord, FileChoiceRecord, NotebookRecord, record
from grader.results import SubmissionResult
from grader.text import valid_unicode


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="null")

    @field_validator("*")
    @classmethod
    def _encodable(cls, value: object) -> object:
        # Student text (messages, output, file names) may hold lone surrogates, which no UTF-8 can carry.
        return valid_unicode(value) if isinstance(value, str) else value


class ErrorOut(_Out):
    kind: str
    message: str
    traceback: str
    trial: int | None


class EntryOut(_Out):
    index: list[int]
    expected: float
    got: float
    abs_error: float
    rel_error: float
    ulps: float
    envelope_ratio: float


class CaseOut(_Out):
    trial: int
    sizes: dict[str, int]
    failing_indices: list[list[int]]
    repro: str


class ReturnOut(_Out):
    name: str
    verdict: str
    trials: int
    failed_trials: int
    message: str
    misconception: str | None
    mistake_family: str | None  # the kind of mistake named (outcomes.MistakeFamily)
    feedback: str
    failing_entries: list[EntryOut]
    points: float
    score: float
    precision: str
    max_envelope_ratio: float | None
    smallest_failing_case: CaseOut | None


class FailedCellOut(_Out):
    notebook: str
    cell: int
    line: int
    error: str


class NotebookOut(_Out):
    cells: str
    tag: str | None
    left_out: int
    refused_definitions: list[str]
    skipped_imports: list[str]
    failed_cells: list[FailedCellOut]


class FileChoiceOut(_Out):
    """Which file was graded where several define the entry (or the exercise pins one)."""

    graded: str
    chosen_by: str  # pinned, named, notebook or first (handin/choice.py's ChosenBy)
    also_defined: list[str]  # the other files that define it: not graded
    note: str  # the sentence the other reports show


class ResultOut(_Out):
    exercise: str
    submission: str
    student: str
    seed: int
    trials: int
    score: float
    max_score: float
    error: ErrorOut | None
    returns: list[ReturnOut]
    isolation: str
    seconds: float
    stdout: str
    import_seconds: float
    runs_at_import: list[str]
    notebook: NotebookOut | None
    file_choice: FileChoiceOut | None = None


def _entry(entry: EntryRecord) -> EntryOut:
    return EntryOut(
        index=entry.index,
        expected=entry.expected,
        got=entry.got,
        abs_error=entry.abs_error,
        rel_error=entry.rel_error,
        ulps=entry.ulps,
        envelope_ratio=entry.envelope_ratio,
    )


def _case(result: SubmissionResult, case: CaseRecord) -> CaseOut:
    return CaseOut(
        trial=case.trial,
        sizes=case.sizes,
        failing_indices=case.failing_indices(),
        repro=result.repro(case.trial),
    )


def result_model(result: SubmissionResult) -> ResultOut:
    """The result's JSON object: serialised.py's record of it, its fields picked and named as this contract
    has them."""
    kept = record(result)
    error = kept.error
    return ResultOut(
        exercise=kept.exercise,
        submission=kept.submission,
        student=kept.student,
        seed=kept.seed,
        trials=kept.trials,
        score=kept.score,
        max_score=kept.max_score,
        error=ErrorOut(
            kind=error.kind.value, message=error.message, traceback=error.traceback, trial=error.trial
        )
        if error is not None
        else None,
        returns=[
            ReturnOut(
                name=r.name,
                verdict=r.verdict.value,
                trials=r.trials,
                failed_trials=r.failed_trials,
                message=r.message,
                misconception=r.misconception,
                mistake_family=None if r.mistake_family is None else r.mistake_family.value,
                feedback=r.feedback,
                failing_entries=[_entry(e) for e in r.failing_entries],
                points=r.points,
                score=r.score,
                precision=r.precision.value,
                max_envelope_ratio=r.max_ratio if math.isfinite(r.max_ratio) else None,
                smallest_failing_case=_case(result, r.case) if r.case is not None else None,
            )
            for r in kept.returns
        ],
        isolation=kept.isolation.line,
        seconds=round(kept.seconds, 3),
        stdout=kept.stdout,
        import_seconds=round(kept.import_seconds, 3),
        runs_at_import=kept.runs_at_import,
        notebook=_notebook(kept.notebook),
        file_choice=_file_choice(kept.file_choice),
    )


def _file_choice(choice: FileChoiceRecord | None) -> FileChoiceOut | None:
    if choice is None:
        return None
    return FileChoiceOut(
        graded=choice.graded,
        chosen_by=choice.chosen_by.value,
        also_defined=[valid_unicode(f) for f in choice.also_defined],
        note=file_choice_note(choice.choice()),
    )


def _notebook(use: NotebookRecord | None) -> NotebookOut | None:
    if use is None:
        return None
    return NotebookOut(
        cells=use.cells,
        tag=use.tag or None,
        left_out=use.left_out,
        refused_definitions=[valid_unicode(r) for r in use.refused],
        skipped_imports=use.skipped_imports,
        failed_cells=[
            FailedCellOut(notebook=c.notebook, cell=c.cell, line=c.line, error=c.error)
            for c in use.failed_cells
        ],
    )


def to_json_line(result: SubmissionResult) -> str:
    return result_model(result).model_dump_json()
