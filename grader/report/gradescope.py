"""Gradescope's results.json for one student's hand-in: what the student reads on Gradescope.

One test per (exercise, return), its output in Markdown (`output_format: md`, Gradescope's autograder
specification): the verdict's sentence, the mistake when it is named, the failing-entry grid and the
worst entries of the smallest failing case, and a replay command in the student's terms (the exercise by
id, the student's own file, the seed the submission was graded with: `grader repro graph2 graph2.py
--seed 8231... --trial 9`), which runs where the exercise's folder as the course hands it out and the
file are. A whole-submission error (a syntax error, a missing function) is told once per exercise, in the
top-level output; its tests only point there.

A seed drawn from the image's pool (seed_pool.py) is never shown (`seed_shown=False`): it comes back in
later submissions, and a student who learnt the pool's seeds could hand in a table of their answers. The
replay is then `grader check graph2 graph2.py` on the trials every student has (seed 0), which names its
own smallest failing case and the command that replays it; the staff find the seed in the autograder's
output (stderr, which `stdout_visibility: hidden` keeps from the student), with its replay commands.

Visibility follows the exercise's `gradescope:` and each return's `visibility:`. Gradescope shows a test
whose visibility is `after_due_date` only after the (late) due date, and hides the student's total score
while any test is hidden; with `visible_trials: N`, a preview of each such test, graded on the first N
trials, is visible at once, carrying no points (an informational test: its status, no score).

Student text is escaped (or fenced) for Markdown, and no path of the grading machine is left in any
string: the hand-in's own files are named relative to it, as the student knows them.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grader.environment import versions_line
from grader.exercise.spec import Exercise, Visibility
from grader.handin.prepare import Submission
from grader.outcomes import Failure, FailureKind, Verdict
from grader.report.common import ENVELOPE_MEANING, file_choice_note, grid, mistake_label, number, sizes_text
from grader.report.serialised import ResultRecord, record
from grader.results import ReturnResult, SubmissionResult, file_in_handin
from grader.text import counted, valid_unicode, visible

JSONLike = TypeVar("JSONLike")
_Replay = Callable[[SubmissionResult, str, int | None], str]  # _replay, the seed shown or not
_WORST_SHOWN = 5
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")  # what can start markup within a line
_WHEN = {
    "after_due_date": "after the due date",
    "after_published": "once grades are published",
    "hidden": "to the course staff only",
}
_SEE_ABOVE = "not graded: see the error above"


@dataclass(frozen=True)
class ShownExercise:
    """What the report needs of an exercise beyond its result: the student's file and who sees what."""

    file: str = ""  # the hand-in's file that defines the entry, relative to the hand-in; "" unknown
    visibility: Mapping[str, Visibility] = field(default_factory=dict)  # per return; unnamed: visible
    preview: SubmissionResult | None = None  # graded on the first `visible_trials` trials

    def of(self, name: str) -> Visibility:
        return self.visibility.get(name, "visible")

    @property
    def seen_now(self) -> bool:
        """Whether the student sees every test of the full grading from the start."""
        return all(v == "visible" for v in self.visibility.values())


def shown_exercise(
    exercise: Exercise, submission: Submission | None, preview: SubmissionResult | None
) -> ShownExercise:
    file = submission.files[0] if submission is not None and submission.files else ""
    return ShownExercise(file, {name: exercise.visibility(name) for name in exercise.return_names}, preview)


def gradescope_results(
    results: Sequence[SubmissionResult],
    handouts: Mapping[str, ShownExercise] | None = None,
    notes: Sequence[str] = (),
    private: Iterable[str] = (),
    seed_shown: bool = True,
    versions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """results.json for one student. `notes` go at the end of the top-level output (in Markdown);
    every string loses the `private` paths (the hand-in's, the exercises', the grader's), the hand-in's
    files named relative to it. `seed_shown=False` (a pool's seed): no replay names the seed. `versions`
    (environment.installed_versions): stated last in the output, and in `extra_data`."""
    replay = functools.partial(_replay, seed_shown=seed_shown)
    sections: list[str] = []
    tests: list[_Test] = []
    kept = [record(result) for result in results]  # what results.json states of each, as the gradebook does
    for result, written in zip(results, kept, strict=True):
        shown = (handouts or {}).get(result.exercise) or ShownExercise(file=_file_in_handin(result))
        now = result if shown.seen_now else shown.preview
        above = now.error if now is not None else None
        summary = _summary(result, shown, now)
        if result.file_choice is not None:  # which file was graded is no grade: shown whatever the visibility
            summary += f" — {_escaped(file_choice_note(result.file_choice))}"
        if now is None or above is None or all(shown.of(r.name) == "hidden" for r in result.returns):
            sections.append(summary)
        elif above.kind is FailureKind.NOT_SUBMITTED:  # nothing to show but why: on the exercise's line
            sections.append(f"{summary}: {_text(above.message)}")
        else:
            sections += [summary, _error_section(now, above, shown.file, replay)]
        sections += _notebook_notes(result)
        if shown.preview is not None and not shown.seen_now:
            preview = shown.preview
            tests += _tests(preview, record(preview), shown, above, replay, preview=result.trials)
        tests += _tests(result, written, shown, above, replay)
    sections += notes
    if versions:
        sections.append(f"_Graded with {_escaped(versions_line(dict(versions)))}._")
    # What a rounding envelope is, where the word first appears (Gradescope shows the tests in order).
    first = next((t for t in tests if t.spoken and t.json["visibility"] == "visible"), None)
    if first is not None:
        first.json["output"] += f"\n\n_{_escaped(ENVELOPE_MEANING)}_"
    results_json: dict[str, Any] = {
        "score": sum(r.score for r in kept),
        "max_score": sum(r.max_score for r in kept),
        "execution_time": round(sum(r.seconds for r in kept), 3),
        "output": "\n\n".join(sections),
        "output_format": "md",
        "test_output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [t.json for t in tests],
    }
    if versions:
        results_json["extra_data"] = {"versions": dict(versions)}
    # The longest first: the exercises' folder may lie inside the grader's.
    roots = sorted({p.rstrip("/") for p in private if p.strip("/")}, key=len, reverse=True)
    pattern = re.compile("|".join(rf"{re.escape(root)}(?:/|(?![\w.-]))" for root in roots)) if roots else None
    return each_string(results_json, lambda text: _without(valid_unicode(text), pattern))


def each_string(value: JSONLike, change: Callable[[str], str]) -> JSONLike:
    """`value` (JSON-like: dicts, lists, strings, numbers) with `change` applied to every string in it."""
    if isinstance(value, str):
        return change(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {each_string(k, change): each_string(v, change) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return [each_string(v, change) for v in value]  # type: ignore[return-value]
    return value


def _without(text: str, roots: re.Pattern[str] | None) -> str:
    """`text` with the paths below those roots relative to them, and a root itself as '.'."""
    if roots is None:
        return text
    return roots.sub(lambda found: "" if found.group().endswith("/") else ".", text)


def _file_in_handin(result: SubmissionResult) -> str:
    """The student's file as they know it, from a class run's result (hw3.ipynb for
    submissions/dana/hw3.ipynb); "." where the hand-in is a folder of several files."""
    return file_in_handin(result)


def _notebook_notes(result: SubmissionResult) -> list[str]:
    """What of the notebook did not run, and why: notes on the student's own code, not scored."""
    use = result.notebook
    if use is None:
        return []
    notes = [f"Definition skipped: {_text(refused)}" for refused in use.refused]
    notes += [f"Not imported: {_text(skipped)}" for skipped in use.skipped_imports]
    notes += [
        f"Cell skipped (it failed outside the definitions; not scored): {_text(str(c))}"
        for c in use.failed_cells
    ]
    return notes


def _summary(result: SubmissionResult, shown: ShownExercise, now: SubmissionResult | None) -> str:
    """The exercise's line of the top-level output: its score where the student sees it."""
    name = f"**{_escaped(result.exercise)}**"
    if shown.seen_now:
        return f"{name}: {result.score:g}/{result.max_score:g} ({result.worst.value})"
    when = " or ".join(
        dict.fromkeys(_WHEN[shown.of(r.name)] for r in result.returns if shown.of(r.name) in _WHEN)
    )
    line = f"{name}: graded on {counted(result.trials, 'trial')}, shown {when}"
    if now is not None:
        line += (
            f"; on the first {now.trials} of them (a preview): {now.score:g}/{now.max_score:g} "
            f"({now.worst.value})"
        )
    return line


@dataclass(frozen=True)
class _Test:
    """A test of results.json, and whether its output gives errors in rounding envelopes."""

    json: dict[str, Any]
    spoken: bool


def _tests(
    result: SubmissionResult,
    written: ResultRecord,
    shown: ShownExercise,
    above: Failure | None,
    replay: _Replay,
    preview: int | None = None,
) -> list[_Test]:
    """The tests of one grading: the full one, or (`preview`: the full one's trial count) its preview. Their
    Markdown tells `result`; their scores, verdicts and names are its record's (`written`)."""
    error = result.error
    told_above = error is not None and above is not None and _same(error, above)
    tests = []
    # The first call that raised, once: on the first return it left without a value.
    first_call = result.first_trial_error if error is None else None
    for k, (ret, kept) in enumerate(zip(result.returns, written.returns, strict=True)):
        visibility = shown.of(kept.name)
        if preview is not None and visibility in ("visible", "hidden"):
            continue  # a visible return is seen whole already; nothing of a hidden one is shown
        spoken = error is None and ret.speaks_of_envelopes  # an error's tests show no message of theirs
        if error is None:
            raised = first_call if ret.verdict is Verdict.ERROR else None
            first_call = None if raised is not None else first_call
            output = _return_output(result, ret, shown.file, raised, replay)
        elif told_above:
            pointer = "not handed in: see above" if error.kind is FailureKind.NOT_SUBMITTED else _SEE_ABOVE
            output = f"**{ret.verdict.value}**: {pointer}"
        elif k == 0:
            output = _error_section(result, error, shown.file, replay)
        else:
            output = f"**{ret.verdict.value}**: not graded: see the error in this exercise's first test"
        test: dict[str, Any] = {"name": f"{written.exercise}: {kept.name}"}
        if preview is None:
            test |= {"score": kept.score, "max_score": kept.points}
        else:
            test["name"] += f" (preview: the first {written.trials} of {counted(preview, 'trial')})"
            first = counted(written.trials, "trial")
            output = f"Preview: {kept.score:g}/{kept.points:g} on the first {first}.\n\n{output}"
        test |= {
            "status": "passed" if kept.verdict is Verdict.PASS else "failed",
            "output": output,
            "output_format": "md",
            "visibility": "visible" if preview is not None else visibility,
            "tags": [kept.verdict.value, *([kept.misconception] if kept.misconception else [])],
        }
        tests.append(_Test(test, spoken))
    return tests


def _same(one: Failure, other: Failure) -> bool:
    return (one.kind, one.message, one.trial) == (other.kind, other.message, other.trial)


def _error_section(result: SubmissionResult, error: Failure, file: str, replay: _Replay) -> str:
    """A whole-submission error, told once: what happened, the student's traceback, how to replay it."""
    lines = [f"**{_escaped(result.exercise)}: error ({error.kind.value})**"]
    traceback = error.traceback
    if traceback and error.message in traceback:
        lines.append(_fenced(traceback))
    else:
        lines.append(_text(error.message))
        if traceback:
            lines.append(_fenced(traceback))
    if error.kind is not FailureKind.NOT_SUBMITTED and file:  # nothing of theirs to replay
        lines.append(replay(result, file, error.trial))
    return "\n\n".join(lines)


def _return_output(
    result: SubmissionResult, ret: ReturnResult, file: str, raised: Failure | None, replay: _Replay
) -> str:
    parts = [f"**{ret.verdict.value}**: {_text(ret.message)}"]
    if ret.verdict is Verdict.PASS:
        return parts[0]
    if raised is not None and raised.traceback:
        parts.append(f"The first call that failed (trial {raised.trial}):\n\n{_fenced(raised.traceback)}")
    if ret.misconception is not None:
        feedback = f" {_text(ret.feedback)}" if ret.feedback else ""
        label = mistake_label(ret).capitalize()
        parts.append(f"**{label}: {_escaped(ret.misconception)}.**{feedback}")
    elif ret.verdict.not_by_hand and ret.feedback:
        parts.append(f"**To fix:** {_text(ret.feedback)}")
    case = ret.case
    trial = case.trial if case is not None else None
    if case is not None:
        parts.append(f"**Smallest failing case:** trial {case.trial} ({_escaped(sizes_text(case))})")
        cells = grid(case.mask) if case.mask is not None else None
        if cells is not None:
            drawn = "\n".join(" ".join("x" if bad else "." for bad in row) for row in cells)
            parts.append("Failing entries (x), passing (.):\n\n" + _fenced(drawn))
    if ret.failing_entries:
        rows = ["| entry | expected | got | abs err | rel err |", "| ---: | ---: | ---: | ---: | ---: |"]
        for entry in ret.failing_entries[:_WORST_SHOWN]:
            rows.append(
                f"| `{list(entry.index)}` | {number(entry.expected)} | {number(entry.got)} | "
                f"{entry.abs_error:.2e} | {entry.rel_error:.2e} |"
            )
        parts.append("Worst entries:\n\n" + "\n".join(rows))
    if trial is None and ret.verdict is Verdict.ERROR and result.first_trial_error is not None:
        trial = result.first_trial_error.trial
    if file:
        parts.append(replay(result, file, trial))
    return "\n\n".join(parts)


def _replay(result: SubmissionResult, file: str, trial: int | None, *, seed_shown: bool = True) -> str:
    """The command that replays it, as the student runs it: the exercise by id, their file by its name; with
    `seed_shown=False`, the check of their file on the trials every student has (seed 0) instead."""
    intro = (
        "Replay it in the folder that holds the exercise's folder (as the course hands it out) and your file:"
    )
    if not seed_shown:
        command = f"grader check {result.exercise} {shlex.quote(file)}"
        secret = (
            "These trials were drawn from a secret seed the course uses again, so it is not shown. Check "
            "your file on the trials every student has, in the folder that holds the exercise's folder (as "
            "the course hands it out) and your file: a mistake these trials show usually shows there too, "
            "with its smallest failing case and the command that replays it."
        )
        return f"{secret}\n\n{_fenced(command)}"
    where = f"{result.exercise} {shlex.quote(file)} --seed {result.seed}"
    command = f"grader repro {where} --trial {trial}" if trial is not None else f"grader check {where}"
    return f"{intro}\n\n{_fenced(command)}"


def _escaped(text: str) -> str:
    """Text as Markdown shows it literally: its control characters visible, its markup escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))


def _text(text: str) -> str:
    """A message for Markdown: escaped on one line, fenced where it runs over several (a torch error)."""
    return _fenced(text) if "\n" in text.strip() else _escaped(text)


def _fenced(text: str) -> str:
    """A code block holding `text` whatever backticks it has: the fence is longer than any run of them."""
    shown = visible(text).strip("\n")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{shown}\n{fence}"
