"""What grading produces: immutable results per (submission, exercise), ready for any report."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

import numpy as np

from grader.handin.choice import FileChoice
from grader.judging.compare import EntryError, Precision
from grader.outcomes import FailedCell, Failure, IsolationUsed, MistakeFamily, Verdict


@dataclass(frozen=True)
class FailingCase:
    """The smallest failing trial of a return, to show in full."""

    trial: int
    sizes: Mapping[str, int]
    expected: np.ndarray | None
    got: np.ndarray | None
    mask: np.ndarray | None  # True where the entry fails


@dataclass(frozen=True)
class NearMiss:
    """How far a logic return's values were from a misconception the exercise declares, which did not
    name them: in units of that misconception's own rounding envelope, on the trials compared."""

    name: str
    envelopes: float  # the largest |got - misconception| / envelope; inf where a shape differs
    beyond: int  # entries beyond one envelope
    entries: int  # entries compared
    trials: int  # trials compared
    trial: int  # the trial of the largest
    index: tuple[int, ...]  # its entry
    separated: bool  # whether the misconception differs from the right values beyond rounding anywhere


@dataclass(frozen=True)
class ReturnResult:
    name: str
    verdict: Verdict
    trials: int
    failed_trials: int
    message: str
    points: float
    score: float
    precision: Precision
    max_ratio: float
    failing_entries: tuple[EntryError, ...] = ()
    case: FailingCase | None = None
    # The decisive trials' error in the first run over their rerun's above it (None: not measured): the
    # smallest for instability, the largest for logic, the margins of the rule (judging/reruns/).
    shrink: float | None = None
    misconception: str | None = None  # the mistake the values show, when they match one
    mistake_family: MistakeFamily | None = None  # the kind of that mistake, with it
    feedback: str = ""  # what that mistake means and how to fix it
    # The exercise's declared misconceptions, and how far the values were from each, where none named them.
    near_misses: tuple[NearMiss, ...] = ()
    # Whether `message` gives an error in rounding envelopes: a report explains the word where it first
    # appears, and the message is no place to look for it (a student's exception may hold any word).
    speaks_of_envelopes: bool = False
    # `message` as a report's table shows it above the failing call's traceback: an exception's message
    # of several lines cut to its first. "" where it is `message`.
    summary: str = ""


@dataclass(frozen=True)
class NotebookUse:
    """How a hand-in's notebooks were graded: the exercise's `notebook.cells`, and what it left out."""

    cells: str  # all, definitions or tagged
    tag: str = ""  # for tagged: the tag the cells kept carry
    left_out: int = 0  # not run: top-level statements (definitions) or code cells (tagged)
    refused: tuple[str, ...] = ()  # definitions skipped since defining them would run code, and why
    skipped_imports: tuple[str, ...] = ()  # kept imports of missing modules: "import x (cell 2, line 1)"
    failed_cells: tuple[FailedCell, ...] = ()  # `all`: cells that failed outside their definitions, skipped


@dataclass(frozen=True)
class SubmissionResult:
    exercise: str
    exercise_dir: str
    submission: str
    student: str
    seed: int
    trials: int
    returns: tuple[ReturnResult, ...]
    error: Failure | None  # a failure of the whole submission (it did not import, ran out of time...)
    isolation: IsolationUsed
    first_trial_error: Failure | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    only_trial: int | None = None
    import_seconds: float = 0.0  # how long importing the hand-in took
    runs_at_import: tuple[str, ...] = ()  # where its files run code at their top level ("hw.py line 12")
    notebook: NotebookUse | None = None  # None: no notebook handed in
    # Which file was graded where several define the entry (or the exercise pins one); None: no choice.
    file_choice: FileChoice | None = None

    @property
    def score(self) -> float:
        return sum(r.score for r in self.returns)

    @property
    def max_score(self) -> float:
        return sum(r.points for r in self.returns)

    @property
    def passed(self) -> bool:
        return self.error is None and all(r.verdict is Verdict.PASS for r in self.returns)

    @property
    def worst(self) -> Verdict:
        if self.error is not None:
            return Verdict.ERROR
        return max((r.verdict for r in self.returns), default=Verdict.PASS)

    def as_the_student_knows_it(self) -> SubmissionResult:
        """The result with its exercise named by id and its file relative to the hand-in, as the student
        runs them (`grader repro graph2 hw3.ipynb ...`): never the instructor's folders, which a page
        handed to the student would show otherwise."""
        return replace(self, exercise_dir=self.exercise, submission=file_in_handin(self))

    def repro(self, trial: int | None = None) -> str:
        """The command that replays one trial (shown whole), or the whole run."""
        where = f"{self.exercise_dir} {self.submission} --seed {self.seed}"
        if trial is not None:
            return f"grader repro {where} --trial {trial}"
        return f"grader check {where} --trials {self.trials}"


def file_in_handin(result: SubmissionResult) -> str:
    """The student's file as they know it, from a class run's result (hw3.ipynb for
    submissions/dana/hw3.ipynb); "." where the hand-in is a folder of several files."""
    path = PurePath(result.submission)
    if path.suffix not in (".py", ".ipynb"):
        return "."
    parts = path.parts[:-1]
    if result.student in parts:
        return str(PurePath(*path.parts[len(parts) - parts[::-1].index(result.student) :]))
    return path.name


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory where possible."""
    return _relative(path, Path.cwd())


# A class's results name each exercise folder once per student: resolved once.
@functools.lru_cache(maxsize=4096)
def _relative(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd))
    except ValueError:
        return str(path)
