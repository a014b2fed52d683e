"""`--out DIR`: the files an instructor uploads — a CSV gradebook, Gradescope results, a class summary.

DIR/gradebook.csv       one row per student, one column per exercise (its score; empty: not handed in),
                        with --per-return one per return too, a total, the maximum and the grading time
DIR/students/<student>/results.json   Gradescope's autograder format: one test per (exercise, return)
                        (report/gradescope.py)
DIR/summary.json        per exercise: hand-ins, non-submitters, verdict counts, the most common
                        misconceptions and failing entries
DIR/canvas.csv, DIR/moodle.csv   with --roster: files Canvas and Moodle import as they are (report/lms.py)

A student's folder name is theirs to choose: it is data, never a path. Their files go below `students/`
(a student named gradebook.csv, summary.json or students cannot take the class's files' places), under
`file_names`' name: safe characters only, no leading dot, no name a file system refuses, unique even on
a case-blind file system; the name itself is in the files (gradebook.csv's student column).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grader.outcomes import FailureKind
from grader.report.gradescope import each_string, gradescope_results
from grader.report.lms import Column, cells, write_lms
from grader.report.roster import Roster
from grader.results import SubmissionResult
from grader.text import spreadsheet_text, valid_unicode

STUDENTS = "students"  # the folder of per-student files, in --out and --html alike
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_NAME_LIMIT = 80  # file names stay well under any file system's limit (255 bytes), a suffix included
# Names Windows refuses for a file or folder whatever the extension (a class folder copied there).
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))]
)
_PAGE = ".html"  # the HTML report's pages sit beside the export's folders: no folder name ends so
JSONLike = TypeVar("JSONLike")


def write_all(
    folder: Path,
    results: Sequence[SubmissionResult],
    exercises: Sequence[str],
    students: Sequence[str],
    *,
    roster: Roster | None = None,
    per_return: bool = False,
    graded_at: Mapping[tuple[str, str], str] | None = None,
) -> list[Path]:
    """Write every export for these results; returns the files written.

    `students` are the gradebook's rows: with a roster, its students (those without a folder too) and then
    the folders it does not name. canvas.csv and moodle.csv are written only with a roster: without one
    nothing says who a folder is in the LMS.
    """
    folder.mkdir(parents=True, exist_ok=True)
    grades = class_grades(results, exercises, per_return)
    written = [_gradebook_csv(folder / "gradebook.csv", grades, students, roster, graded_at or {})]
    graded = {r.student for r in results}
    names = file_names(students)
    for student in students:
        if student not in graded:  # on the roster, no folder: no Gradescope file to make
            continue
        mine = [r for r in results if r.student == student]
        path = folder / STUDENTS / names[student] / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(gradescope_results(mine), indent=1), encoding="utf-8")
        written.append(path)
    absent = [s for s in students if s not in graded]
    summary = folder / "summary.json"
    summary.write_text(json.dumps(class_summary(results, exercises, absent), indent=1), encoding="utf-8")
    written.append(summary)
    if roster is not None:
        # One column per exercise, or per return with --per-return: both would count each point twice.
        lms_columns = [c for c in grades.columns if (c[2] is not None) == per_return]
        written += write_lms(folder, roster, grades.handed_in, lms_columns, grades.points)
    return written


@dataclass(frozen=True)
class ClassGrades:
    """The class's numbers as every export shows them (gradebook.csv, the LMS files, the HTML report)."""

    handed_in: Mapping[tuple[str, str], SubmissionResult]
    exercises: list[str]  # those someone handed in: the columns
    columns: list[Column]
    points: Mapping[str, str]  # each column's points possible
    maximum: float  # everyone's maximum: the class's, a missing hand-in included

    def scores(self, student: str) -> list[str]:
        """The student's score per column; '' where nothing was handed in."""
        return cells(student, self.handed_in, self.columns)

    def total(self, student: str) -> str:
        """The sum of the student's hand-ins' scores; '' when nothing was handed in at all, so that it never
        reads as a 0 earned."""
        mine = [self.handed_in[(student, e)] for e in self.exercises if (student, e) in self.handed_in]
        return f"{sum(r.score for r in mine):g}" if mine else ""


def class_grades(
    results: Sequence[SubmissionResult], exercises: Sequence[str], per_return: bool = False
) -> ClassGrades:
    handed_in = {(r.student, r.exercise): r for r in results if handed_in_result(r)}
    # As in the class table: a library's exercises that nobody in the class handed in are not this
    # class's work, and as LMS columns they would become empty assignments.
    attempted = [e for e in exercises if any(exercise == e for _, exercise in handed_in)]
    columns = _columns(results, attempted, per_return)
    points = _points(results, attempted, columns)
    # What the student could have got: the class's maximum, a missing hand-in included.
    maximum = sum(float(points[e]) for e in attempted if points[e])
    return ClassGrades(handed_in, attempted, columns, points, maximum)


def handed_in_result(result: SubmissionResult) -> bool:
    """Whether the student handed anything in for this exercise: a syntax error is a hand-in (graded 0),
    no file attempting the exercise is not (its cells stay empty, and it counts in no mean)."""
    return result.error is None or result.error.kind is not FailureKind.NOT_SUBMITTED


def file_names(students: Sequence[str]) -> dict[str, str]:
    """Each student's file name (no suffix) below students/: safe characters only (no `/`, NUL, or
    anything a file system refuses), no leading dot (no `..`, no hidden file), none of Windows's reserved
    device names, never ending in .html (a page's name in the HTML report beside it), at most 80
    characters, and unique even where a case-blind file system would merge two."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for student in students:
        base = (_UNSAFE.sub("_", valid_unicode(student)).strip(".") or "_")[:_NAME_LIMIT]
        if base.lower().endswith(_PAGE):  # ana.html's folder would be ana's page
            base = base[: -len(_PAGE)] + "_" + base[-len(_PAGE) + 1 :]
        if base.split(".")[0].upper() in _RESERVED:
            base = f"_{base}"[:_NAME_LIMIT]
        name, number = base, 1
        while name.lower() in taken:
            number += 1
            name = f"{base}-{number}"
        taken.add(name.lower())
        names[student] = name
    return names


def _columns(results: Sequence[SubmissionResult], exercises: Sequence[str], per_return: bool) -> list[Column]:
    """One column per exercise, then (with --per-return) one per exercise's return, as "exercise: return"."""
    columns: list[Column] = [(e, e, None) for e in exercises]
    if per_return:
        for exercise in exercises:
            first = next((r for r in results if r.exercise == exercise), None)
            names = [ret.name for ret in first.returns] if first is not None else []
            columns += [(f"{exercise}: {name}", exercise, name) for name in names]
    return columns


def _points(
    results: Sequence[SubmissionResult], exercises: Sequence[str], columns: Sequence[Column]
) -> dict[str, str]:
    """Each column's points possible, from any result of its exercise (every result has all returns)."""
    first = {e: next((r for r in results if r.exercise == e), None) for e in exercises}
    points: dict[str, str] = {}
    for header, exercise, name in columns:
        result = first[exercise]
        if result is None:
            points[header] = ""
        elif name is None:
            points[header] = f"{result.max_score:g}"
        else:
            points[header] = f"{sum(r.points for r in result.returns if r.name == name):g}"
    return points


def _gradebook_csv(
    path: Path,
    grades: ClassGrades,
    students: Sequence[str],
    roster: Roster | None,
    graded_at: Mapping[tuple[str, str], str],
) -> Path:
    known = roster.by_folder() if roster is not None else {}
    identity = ["lms_id", "name", "email"] if roster is not None else []
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)  # see lms.py: every field quoted, text inert
        headers = [spreadsheet_text(c[0]) for c in grades.columns]
        writer.writerow(["student", *identity, *headers, "total", "max_total", "graded_at"])
        for student in students:
            row: list[Any] = [spreadsheet_text(student)]  # a folder's name may hold bytes that are not UTF-8
            if roster is not None:
                entry = known.get(student)
                if entry is None:
                    row += ["", "", ""]
                else:  # the id and email as the LMS matches them (the roster refuses one that would run)
                    row += [entry.id, spreadsheet_text(entry.name), entry.email]
            row += grades.scores(student)
            # The latest grading of the student's hand-ins: when these grades were made.
            times = [graded_at[k] for k in grades.handed_in if k[0] == student and k in graded_at]
            writer.writerow([*row, grades.total(student), f"{grades.maximum:g}", max(times, default="")])
    return path


def encodable(value: JSONLike) -> JSONLike:
    """`value` with every string valid Unicode: student text may hold lone surrogates."""
    return each_string(value, valid_unicode)


def class_summary(
    results: Sequence[SubmissionResult], exercises: Sequence[str], absent: Sequence[str] = ()
) -> dict[str, Any]:
    """Per exercise and return: how many got each verdict, the misconceptions and entries that fail most.

    Only hand-ins count in `submissions`, the verdicts and `mean_score`: a student who handed nothing in
    would pull the mean towards 0 and show as an error. They are counted in `not_submitted`, with the
    roster's students who have no folder at all (`absent`).
    """
    summary: dict[str, Any] = {"exercises": {}}
    for exercise in exercises:
        everyone = [r for r in results if r.exercise == exercise]
        mine = [r for r in everyone if handed_in_result(r)]
        template = mine[0] if mine else (everyone[0] if everyone else None)
        returns: dict[str, Any] = {}
        names = [ret.name for ret in mine[0].returns] if mine else []
        not_submitted = len(everyone) - len(mine) + len(absent)
        for name in names:
            rets = [ret for r in mine for ret in r.returns if ret.name == name]
            entries = Counter(tuple(e.index) for ret in rets for e in ret.failing_entries)
            returns[name] = {
                "verdicts": dict(Counter(ret.verdict.value for ret in rets)),
                "misconceptions": [
                    {"name": m, "count": c}
                    for m, c in Counter(ret.misconception for ret in rets if ret.misconception).most_common(5)
                ],
                "failing_entries": [{"index": list(i), "count": c} for i, c in entries.most_common(5)],
            }
        summary["exercises"][exercise] = {
            "submissions": len(mine),
            "not_submitted": not_submitted,
            "passed": sum(1 for r in mine if r.passed),
            "errors": dict(Counter(r.error.kind.value for r in mine if r.error is not None)),
            "mean_score": round(sum(r.score for r in mine) / len(mine), 3) if mine else None,
            "max_score": template.max_score if template is not None else None,
            "returns": returns,
        }
    return encodable(summary)
