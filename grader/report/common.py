"""What every human-readable report (terminal, HTML) says the same way: verdict colours and meanings, which
message lines a summary keeps, which trial to replay, when a failing-entry grid is small enough to show."""

from __future__ import annotations

import numpy as np

from grader.handin.choice import FileChoice
from grader.outcomes import FailureKind, MistakeFamily, Verdict
from grader.results import FailingCase, ReturnResult, SubmissionResult

# rich style names; the HTML report maps the colour names to its own shades (report/html_result.py).
STYLE = {
    Verdict.PASS: "green",
    Verdict.PRECISION: "yellow",
    Verdict.INSTABILITY: "magenta",
    Verdict.LOGIC: "red",
    Verdict.AUTOGRAD: "bold magenta",
    Verdict.NUMERICAL: "bold cyan",
    Verdict.ERROR: "bold red",
}

VERDICT_MEANINGS = {
    Verdict.PASS: "matches the float64 reference within the tolerance",
    Verdict.PRECISION: "outside the stated tolerance, but within rounding of the precision used: "
    "the maths is right",
    Verdict.INSTABILITY: "beyond rounding, but right at higher precision: a numerically unstable formula",
    Verdict.LOGIC: "wrong at any precision: a mistake in the formula",
    Verdict.AUTOGRAD: "to be derived by hand, but computed by autograd (it moved with autograd's results)",
    Verdict.NUMERICAL: "to be derived by hand, but computed as a numerical derivative (finite differences, "
    "the complex step), which the course refuses",
    Verdict.ERROR: "no usable value: exception, timeout, crash, wrong type or shape, missing function",
}

# Said once per report, where the word first appears: "4.33e+14 float64 rounding envelopes" is jargon to a
# student. The envelope is compare.py's: its scale is what the reference moves under randomised rounding.
# The one word for a command that runs a grading again, in every report (terminal, HTML, Gradescope).
REPLAY_LABEL = "replay:"
ENVELOPE_MEANING = (
    "rounding envelope: how far rounding alone, in the precision named, can move an entry (measured by "
    "rerunning the reference with randomly rounded arithmetic); under 1 is rounding, far above 1 is a "
    "real error"
)

# A larger grid of x and . (or of cells) is unreadable: the count of failing entries says it instead.
GRID_LIMIT = 12


def number(value: float) -> str:
    return f"{value:.6g}" if np.isfinite(value) else str(value)


def error_summary(result: SubmissionResult) -> str:
    """The whole-submission error's message for its summary line: cut where its traceback tells the rest
    (torch's errors run over lines: a summary, then hints and the operator's whole signature)."""
    error = result.error
    if error is None:
        return ""
    if error.traceback and "\n" in error.message:
        return error.message.splitlines()[0] + " …"
    return error.message


def summary_message(ret: ReturnResult, result: SubmissionResult) -> str:
    """A return's message for the table: cut where the first failing call's traceback, shown below the
    table, tells the rest."""
    if result.error is not None:
        return "not graded: see the error above"
    first = result.first_trial_error
    return ret.summary or ret.message if first is not None and first.traceback else ret.message


def mistake_label(ret: ReturnResult) -> str:
    """What a named mistake is introduced as: code right under another year's convention made none."""
    return (
        "not this course's convention" if ret.mistake_family is MistakeFamily.CONVENTION else "likely mistake"
    )


def focus_trial(result: SubmissionResult) -> int | None:
    """The trial to replay: where the run stopped, else the smallest failing case."""
    if result.error is not None and result.error.trial is not None:
        return result.error.trial
    return next((r.case.trial for r in result.returns if r.case is not None), None)


def shows_failure(ret: ReturnResult) -> bool:
    """Whether a return gets its failure detail (mistake, smallest case, entries): an error has no values."""
    return ret.verdict is not Verdict.PASS and ret.verdict is not Verdict.ERROR


def sizes_text(case: FailingCase) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(case.sizes.items())) or "fixed sizes"


def grid(mask: np.ndarray) -> np.ndarray | None:
    """The mask as rows of cells to draw, or None where it is too large or has too many dimensions."""
    if mask.ndim <= 2 and max(mask.shape, default=1) <= GRID_LIMIT:
        return np.atleast_2d(mask)
    return None


def not_submitted(result: SubmissionResult) -> bool:
    return result.error is not None and result.error.kind is FailureKind.NOT_SUBMITTED


def mentions_envelopes(result: SubmissionResult) -> bool:
    """Whether a report of the result speaks of rounding envelopes: its messages, or an entries table."""
    return any(r.speaks_of_envelopes or r.failing_entries for r in result.returns)


def file_choice_note(choice: FileChoice) -> str:
    """Which file was graded and which others define the function too: a student whose scratch copy was
    graded learns it (the rule is handin/choice.py's)."""
    note = f"graded {choice.graded} ({choice.chosen_by.reason})"
    if not choice.also_defined:
        return note
    others = ", ".join(choice.also_defined)
    return (
        f"{note}; also defined in {others}: not graded. To have another graded, keep the function in one "
        "file only, or name that file after the exercise"
    )
