"""No formula in any CSV export, however a spreadsheet splits it (issue 39, defence 3).

A spreadsheet in a locale that separates cells with `;` (or told a tab or `|`), or one that splits on the
separator whatever the quoting, starts a cell after each separator: a folder named `x;=1+1` put a live
`=1+1` in gradebook.csv when only a cell's first character was made inert. A class whose folder names,
roster names and sections hold such strings is graded by the real `grader run`, and every CSV it writes
is read as such spreadsheets read it: with the csv module and each separator, and split on the separator
and on line breaks with quoting ignored. No cell may start with a formula character (after any spaces an
importer trims, and the quotes a naive one strips), unless it is a number.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, grader_run, write_source

from grader.text import runs_as_formula, spreadsheet_text

# Each a folder name a student may choose: a formula after each separator a spreadsheet may split on.
FOLDERS = (
    "x;=1+1",
    "x,=1+1",
    "x|+1",
    "x\t=1+1",
    "x\t-2",
    "x; =1+1",
    "x;@SUM(A1)",
    "=HYPERLINK(1)",
    '" ,=1+1',
    'q";=1',
    "line\n=1+1",
    "cr\r+1",
    "\tleading",
    "-1.5",
    "plain",
)
# A roster line holds no line break, and the roster strips a value's surrounding spaces and tabs.
ON_ROSTER = [f for f in FOLDERS if "\n" not in f and "\r" not in f and f == f.strip()]
SEPARATORS = (",", ";", "\t", "|")
FORMULA = ("=", "+", "-", "@")
TRIALS = 3


def _cells(text: str) -> list[str]:
    """Every cell of a CSV as each kind of spreadsheet may split it."""
    cells = []
    for separator in SEPARATORS:
        cells += [
            cell for row in csv.reader(io.StringIO(text, newline=""), delimiter=separator) for cell in row
        ]
        for line in text.replace("\r", "\n").split("\n"):  # quoting ignored
            cells += line.split(separator)
    return cells


def _formulas(text: str) -> list[str]:
    found = []
    for cell in _cells(text):
        for seen in (cell, cell.lstrip(" "), cell.strip('"').lstrip(" ")):
            if seen.startswith(FORMULA) and not _number(seen):
                found.append(cell)
    return found


def _number(cell: str) -> bool:
    try:
        float(cell.strip('"'))
        return True
    except ValueError:
        return False


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formulas")
    copy_exercise(root / "exercises" / "graph2")
    for folder in FOLDERS:
        write_source(root / "submissions" / folder / "hw.py", CORRECT_GRAPH2)
    # A hand-in whose message holds one too: messages go to JSON, and its score row to the CSV.
    write_source(
        root / "submissions" / "message" / "hw.py",
        "def graph2(W_np, x_np, b_np):\n    raise ValueError('x;=1+1\\t=2')\n",
    )
    rows = ["folder,id,name,email,first name,last name,section"]
    for number, folder in enumerate([*ON_ROSTER, "message"]):
        quoted = folder.replace('"', '""')
        rows.append(f'"{quoted}",{number},"Ana;=1+1 {number}",s{number}@uni.edu,=cmd,"-x;+y","A;=1"')
    (root / "roster.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    done = grader_run(
        "run", root / "exercises", "--trials", TRIALS, "--roster", root / "roster.csv", "--per-return",
        "--out", root / "out", cwd=root,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]  # `message` fails to import
    return root / "out"


def test_no_csv_export_holds_a_formula_whatever_the_separator(exports: Path) -> None:
    written = sorted(exports.glob("*.csv"))
    assert [p.name for p in written] == ["canvas.csv", "gradebook.csv", "moodle.csv"]
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert _formulas(text) == [], (path.name, _formulas(text)[:10])


def test_every_field_is_quoted_and_reads_back_as_written(exports: Path) -> None:
    with (exports / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    shown = {row["student"]: row for row in table}
    assert sorted(shown) == sorted(spreadsheet_text(f) for f in [*FOLDERS, "message"])
    assert shown["x;'=1+1"]["graph2"] == "10" and shown["plain"]["graph2"] == "10"
    assert shown["plain"]["name"] == f"Ana;'=1+1 {ON_ROSTER.index('plain')}"
    assert shown["message"]["graph2"] == "0"  # a number stays a number
    first = (exports / "gradebook.csv").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith('"student","lms_id","name","email","graph2"'), first
    points = (exports / "canvas.csv").read_text(encoding="utf-8").splitlines()[1]
    assert points == '"Points Possible","","","",""' + "".join(f',"{p}"' for p in (2, 4, 4)), points


def test_spreadsheet_text_quotes_each_place_a_formula_could_start() -> None:
    assert spreadsheet_text("x;=1+1") == "x;'=1+1"
    assert spreadsheet_text("=1+1") == "'=1+1"
    assert spreadsheet_text("a\t-b|+c, @d") == "a\t'-b|'+c,' @d"
    assert spreadsheet_text("\tx") == "'\tx"
    assert spreadsheet_text("Maria da Silva - TA") == "Maria da Silva - TA"  # a dash mid-text is text
    assert not runs_as_formula("-1.5") and not runs_as_formula("42")
    assert runs_as_formula("-x") and runs_as_formula("a;=1")


def test_an_lms_identifier_that_would_run_is_refused(tmp_path: Path) -> None:
    """Ids and emails are written as the LMS matches them, so one that a spreadsheet would run cannot be
    made inert in the exports: the roster refuses it, naming the line."""
    copy_exercise(tmp_path / "exercises" / "graph2")
    write_source(tmp_path / "submissions" / "s" / "hw.py", CORRECT_GRAPH2)
    roster = tmp_path / "roster.csv"
    roster.write_text('folder,id,name,email\ns,"7;=1+1",S,s@uni.edu\n', encoding="utf-8")
    done = grader_run(
        "run", tmp_path / "exercises", "--trials", TRIALS, "--roster", roster, "--out", tmp_path / "out",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "roster.csv:2" in done.stderr and "formula" in done.stderr, done.stderr
