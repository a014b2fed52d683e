"""`--out DIR --roster FILE`: grade files that Canvas and Moodle import as they are.

DIR/canvas.csv   Canvas's gradebook import layout ("How do I import grades in the Gradebook?", Canvas
                 Instructor Guide): the header `Student,ID,SIS User ID,SIS Login ID,Section`, then one
                 column per assignment; an optional second row whose Student cell is `Points Possible`
                 gives each assignment's points (written: Canvas creates an assignment it does not have
                 yet with those points). Canvas finds each student by ID, SIS User ID or SIS Login ID.
DIR/moodle.csv   Moodle's CSV grade import ("Grade import", MoodleDocs: the file is laid out as the plain
                 text export is, and every column is mapped at import): `First name,Last name,ID number,
                 Email address`, then one column per grade item. Map the user by "Email address" ->
                 useremail or "ID number" -> useridnumber, and each exercise column to its grade item.
                 Moodle matches a row to its user by those identifiers only (userid, username,
                 useridnumber or useremail: grade/import/csv's map_user_data_with_value); the name
                 columns are for the person reading the file. So they are never guessed by splitting a
                 display name ("Maria da Silva" is not "Maria da" + "Silva", and names are not all
                 given-then-family): the roster's own first_name and last_name where it has them, else
                 the whole name in "First name" and "Last name" left empty.

In both, a student who handed nothing in for an exercise has an empty cell, which neither LMS imports as a
grade, while a hand-in that does not even import (a syntax error) is graded 0 like any other. (Canvas's
importer, app/models/gradebook_importer.rb, compares each cell with the stored score: an empty cell changes
nothing where there is no grade, and clears one entered by hand, which its confirmation page shows.)
Folders not on the roster cannot be matched to an LMS user, so they are left out here (the caller reports
them; gradebook.csv keeps them).

Every CSV export (these and gradebook.csv) quotes every field (csv.QUOTE_ALL), and every text a student
may have chosen (a folder's name, an LMS display name) or that is only shown (a section, the column
headers) goes through text.spreadsheet_text: a quote before each place a spreadsheet could start a
formula, whatever separator its locale splits on (`x;=1+1` is `x;'=1+1`). Numbers the grader writes
(scores, points, totals) stay numbers. The identifiers the LMS matches a row by (ID, SIS ids, email) are
written exactly as the roster gives them, since a changed one would match nobody: the roster refuses one
in which a formula could start (report/roster.py).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.report.roster import Roster, RosterEntry
from grader.results import SubmissionResult
from grader.text import spreadsheet_text

CANVAS_FILE = "canvas.csv"
MOODLE_FILE = "moodle.csv"
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_IDENTITY = ["First name", "Last name", "ID number", "Email address"]
POINTS_POSSIBLE = "Points Possible"

Column = tuple[str, str, str | None]  # header, exercise, return (None: the whole exercise)
Cells = Mapping[tuple[str, str], SubmissionResult]  # (student, exercise) -> a hand-in's result


def write_lms(
    folder: Path,
    roster: Roster,
    handed_in: Cells,
    columns: Sequence[Column],
    points: Mapping[str, str],
) -> list[Path]:
    """canvas.csv and moodle.csv, one row per student of the roster, in the roster's order."""
    canvas, moodle = folder / CANVAS_FILE, folder / MOODLE_FILE
    headers = [spreadsheet_text(header) for header, _, _ in columns]
    with canvas.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow([*CANVAS_IDENTITY, *headers])
        writer.writerow([POINTS_POSSIBLE, "", "", "", "", *(points[h] for h, _, _ in columns)])
        for student in roster:
            # Canvas matches by the ids, which are left as they are: only the name is shown text.
            shown = student.name or f"{student.first_name} {student.last_name}".strip() or student.folder
            identity = [spreadsheet_text(shown), student.id, student.sis_user_id]
            identity += [student.sis_login_id, spreadsheet_text(student.section)]
            writer.writerow([*identity, *cells(student.folder, handed_in, columns)])
    with moodle.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow([*MOODLE_IDENTITY, *headers])
        for student in roster:
            first, last = moodle_names(student)
            identity = [spreadsheet_text(first), spreadsheet_text(last), student.id, student.email]
            writer.writerow([*identity, *cells(student.folder, handed_in, columns)])
    return [canvas, moodle]


def cells(student: str, handed_in: Cells, columns: Sequence[Column]) -> list[str]:
    """A student's score per column: empty where nothing was handed in, so that missing is never 0."""
    row = []
    for _, exercise, name in columns:
        result = handed_in.get((student, exercise))
        if result is None:
            row.append("")
        elif name is None:
            row.append(f"{result.score:g}")
        else:
            ret = next((r for r in result.returns if r.name == name), None)
            row.append("" if ret is None else f"{ret.score:g}")
    return row


def moodle_names(student: RosterEntry) -> tuple[str, str]:
    """Moodle's "First name" and "Last name" for a student: the roster's own parts where it gives them,
    else the whole name first and nothing last (see the module's docstring: never a guessed split)."""
    if student.first_name or student.last_name:
        return student.first_name, student.last_name
    return student.name, ""
