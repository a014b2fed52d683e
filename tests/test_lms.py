"""`--roster` and the LMS exports: Canvas's and Moodle's import layouts, missing never 0 (real CLI, csv)."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from conftest import (
    CORRECT_GRAPH2,
    TRANSPOSED_GRAPH2,
    copy_exercise,
    exercise_folder,
    grader_command,
    write_source,
)

from grader.errors import UsageError
from grader.report.lms import CANVAS_IDENTITY, MOODLE_IDENTITY, moodle_names
from grader.report.roster import load_roster

ROSTER = """\
Folder,Student ID,Full Name,Email Address,Section
s0,101,Ana María López,ana@uni.edu,A
s1,102,Bo Chen,bo@uni.edu,A
s2,103,Cy Doe,cy@uni.edu,B
s3,104,Di Eve,di@uni.edu,B
ghost,105,Gus Host,gus@uni.edu,B
"""


def _class(root: Path) -> tuple[Path, Path, Path]:
    """s0 transposes user_grad (6/10), s1 is right (10), s2 does not parse (0), s3 hands in another
    function only (not handed in); `stranger` is not on the roster, `ghost` has no folder."""
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    submissions = root / "submissions"
    write_source(submissions / "s0" / "hw.py", TRANSPOSED_GRAPH2)
    write_source(submissions / "s1" / "hw.py", CORRECT_GRAPH2)
    write_source(submissions / "s2" / "hw.py", "def graph2(W_np, x_np, b_np:\n    return 1\n")
    write_source(submissions / "s3" / "hw.py", "def something_else():\n    return 1\n")
    write_source(submissions / "stranger" / "hw.py", CORRECT_GRAPH2)
    roster = root / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    return exercises, submissions, roster


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


def _csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("lms")
    exercises, _, roster = _class(root)
    ran = _grader(
        "run", exercises, "--trials", "10", "--out", "out", "--roster", roster, "--per-return", cwd=root
    )
    return root, ran


def test_canvas_csv_has_canvas_import_layout(graded: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, ran = graded
    assert ran.returncode == 1, ran.stderr  # s0 fails a return
    rows = _csv(root / "out" / "canvas.csv")
    header = rows[0]
    assert header[:5] == CANVAS_IDENTITY == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    # --per-return: one column per return, in place of the exercise's (each point counted once)
    assert header[5:] == ["graph2: f", "graph2: auto_grad", "graph2: user_grad"]
    assert rows[1] == ["Points Possible", "", "", "", "", "2", "4", "4"]
    by_id = {row[1]: row for row in rows[2:]}
    assert list(by_id) == ["101", "102", "103", "104", "105"]  # the roster's order; no stranger
    assert by_id["101"] == ["Ana María López", "101", "", "", "A", "2", "4", "0"]
    assert by_id["102"][5:] == ["2", "4", "4"]
    assert by_id["103"][5:] == ["0", "0", "0"]  # a syntax error is a hand-in graded 0
    assert by_id["104"][5:] == ["", "", ""]  # nothing handed in: no grade, not 0
    assert by_id["105"][5:] == ["", "", ""]  # on the roster, no folder


def test_moodle_csv_has_moodle_import_layout(graded: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, _ = graded
    with (root / "out" / "moodle.csv").open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
        assert handle.seek(0) == 0
        header = next(csv.reader(handle))
    assert header[:4] == MOODLE_IDENTITY == ["First name", "Last name", "ID number", "Email address"]
    assert header[4:] == ["graph2: f", "graph2: auto_grad", "graph2: user_grad"]
    by_email = {row["Email address"]: row for row in table}
    assert list(by_email) == ["ana@uni.edu", "bo@uni.edu", "cy@uni.edu", "di@uni.edu", "gus@uni.edu"]
    ana = by_email["ana@uni.edu"]
    # one name column on the roster: kept whole, never split at a guessed place
    assert (ana["First name"], ana["Last name"], ana["ID number"]) == ("Ana María López", "", "101")
    assert ana["graph2: user_grad"] == "0" and ana["graph2: auto_grad"] == "4"
    assert by_email["cy@uni.edu"]["graph2: f"] == "0"
    assert by_email["di@uni.edu"]["graph2: f"] == "" and by_email["gus@uni.edu"]["graph2: f"] == ""


def test_gradebook_csv_keeps_everyone_and_tells_missing_from_zero(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, ran = graded
    with (root / "out" / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        table = {row["student"]: row for row in csv.DictReader(handle)}
    assert list(table) == ["s0", "s1", "s2", "s3", "ghost", "stranger"]  # roster order, then the rest
    assert table["s0"]["graph2"] == "6" and table["s0"]["graph2: user_grad"] == "0"
    assert table["s0"]["lms_id"] == "101" and table["s0"]["email"] == "ana@uni.edu"
    assert table["s2"]["graph2"] == "0" and table["s3"]["graph2"] == ""
    assert table["ghost"]["graph2"] == "" and table["ghost"]["graded_at"] == ""
    assert table["stranger"]["graph2"] == "10" and table["stranger"]["lms_id"] == ""
    assert table["s3"]["graded_at"] == ""  # nothing of theirs was graded
    for student in ("s0", "s1", "s2", "stranger"):
        assert table[student]["graded_at"].endswith("+00:00"), table[student]  # UTC, ISO 8601
    assert (table["s0"]["total"], table["s0"]["max_total"]) == ("6", "10")
    # nothing handed in: no total (never a 0 earned), and the class's maximum all the same
    assert (table["s3"]["total"], table["s3"]["max_total"]) == ("", "10")
    assert (table["ghost"]["total"], table["ghost"]["max_total"]) == ("", "10")
    stderr = " ".join(ran.stderr.split())
    assert "1 folder is not on the roster: stranger" in stderr
    assert "1 student of the roster has no folder: ghost" in stderr


def test_summary_counts_hand_ins_only(graded: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, _ = graded
    summary = json.loads((root / "out" / "summary.json").read_text(encoding="utf-8"))["exercises"]["graph2"]
    assert summary["submissions"] == 4  # s0, s1, s2 (syntax error) and stranger
    assert summary["not_submitted"] == 2  # s3 handed in no graph2, ghost has no folder
    assert summary["mean_score"] == round((6 + 10 + 0 + 10) / 4, 3)
    assert summary["errors"] == {"import": 1}  # not-submitted is no error kind of a hand-in
    assert summary["max_score"] == 10


def test_report_writes_the_same_exports(graded: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, _ = graded
    again = _grader(
        "report", "exercises", "--out", "again", "--roster", "roster.csv", "--per-return", cwd=root
    )
    assert again.returncode == 1, again.stderr
    for name in ("canvas.csv", "moodle.csv", "gradebook.csv", "summary.json"):
        assert (root / "again" / name).read_bytes() == (root / "out" / name).read_bytes(), name


def test_without_per_return_one_column_per_exercise(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, _ = graded
    done = _grader("report", "exercises", "--out", "plain", "--roster", "roster.csv", cwd=root)
    assert done.returncode == 1, done.stderr
    canvas = _csv(root / "plain" / "canvas.csv")
    assert canvas[0] == [*CANVAS_IDENTITY, "graph2"] and canvas[1][5:] == ["10"]
    assert [row[5] for row in canvas[2:]] == ["6", "10", "0", "", ""]
    assert next(csv.reader((root / "plain" / "gradebook.csv").open(encoding="utf-8"))) == [
        "student",
        "lms_id",
        "name",
        "email",
        "graph2",
        "total",
        "max_total",
        "graded_at",
    ]


def test_a_bad_roster_stops_the_run_before_grading(tmp_path: Path) -> None:
    exercises, _, roster = _class(tmp_path)
    roster.write_text("folder,id,email\ns0,101,ana@uni.edu\ns1,102,bo-at-uni\n", encoding="utf-8")
    done = _grader("run", exercises, "--trials", "10", "--out", "out", "--roster", roster, cwd=tmp_path)
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert f"{roster}:3: email 'bo-at-uni' is not an email address" in message
    assert not list(tmp_path.glob("*.sqlite"))  # nothing graded


def test_no_roster_no_lms_files_and_missing_still_empty(tmp_path: Path) -> None:
    exercises, submissions, _ = _class(tmp_path)
    # Nobody hands in reciprocal (a file that does not parse could define anything: s2 goes here).
    copy_exercise(exercises / "reciprocal", source=exercise_folder("reciprocal"))
    (submissions / "s2" / "hw.py").unlink()
    (submissions / "s2").rmdir()
    done = _grader("run", exercises, "--trials", "10", "--out", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / "out" / "canvas.csv").exists() and not (tmp_path / "out" / "moodle.csv").exists()
    with (tmp_path / "out" / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        table = {row["student"]: row for row in reader}
    # Handed in by nobody: no column (as in the class table), and no points in anyone's maximum.
    assert reader.fieldnames == ["student", "graph2", "total", "max_total", "graded_at"]
    assert table["s3"]["graph2"] == "" and table["s0"]["graph2"] == "6"
    assert (table["s3"]["total"], table["s3"]["max_total"]) == ("", "10")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["exercises"]
    nobody = summary["reciprocal"]
    assert (nobody["submissions"], nobody["not_submitted"], nobody["mean_score"]) == (0, 4, None)


# --- the roster on its own --------------------------------------------------------------------------


def _roster(tmp_path: Path, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding=encoding)
    return path


def test_roster_accepts_common_headers_a_bom_and_semicolons(tmp_path: Path) -> None:
    text = "Username;ID number;Name;E-mail\n ana ; 7 ;Ana;a@b.cd\n\n"
    roster = load_roster(_roster(tmp_path, text, "utf-8-sig"))
    (entry,) = roster.entries
    assert (entry.folder, entry.id, entry.name, entry.email) == ("ana", "7", "Ana", "a@b.cd")
    # A Canvas export as the roster: its Student is the name; a folder column still has to be added.
    canvas = "folder,Student,ID,SIS User ID,SIS Login ID,Section,graph2\nana,Ana,7,S7,ana1,A,10\n"
    (entry,) = load_roster(_roster(tmp_path, canvas)).entries
    assert (entry.name, entry.id, entry.sis_user_id, entry.sis_login_id, entry.section) == (
        "Ana",
        "7",
        "S7",
        "ana1",
        "A",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name,email\nAna,a@b.cd\n", ":1: the header ['name', 'email'] has no folder or id column"),
        ("folder,id\nana,1\nbo,1\n", ":3: id '1' is already on line 2"),
        ("folder,id\nana,1\nana,2\n", ":3: folder 'ana' is already on line 2"),
        ("folder,id\nana,\n", ":2: id '' is empty"),
        ("folder,id\nsub/ana,1\n", ":2: folder 'sub/ana' is a path"),
        ("folder,id\nana,1,extra\n", ":2: 3 cells where the header has 2 (the first extra is 'extra')"),
        ("folder,email,mail\n", ":1: columns 'email' and 'mail' both name the email"),
        ("", ":1: the roster has no header row"),
    ],
)
def test_a_bad_roster_says_file_line_and_value(tmp_path: Path, text: str, expected: str) -> None:
    path = _roster(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        load_roster(path)
    assert str(caught.value).startswith(f"{path}{expected}"), str(caught.value)


def test_a_roster_that_is_not_utf8_says_how_to_save_it(tmp_path: Path) -> None:
    path = _roster(tmp_path, "folder,id,name\nana,1,Jos\xe9\n", "latin-1")
    with pytest.raises(UsageError, match=r"not UTF-8 text .*save it as CSV UTF-8"):
        load_roster(path)


def test_moodle_names_come_from_the_roster_never_from_splitting_a_name(tmp_path: Path) -> None:
    """Moodle matches by ID number or email; its name columns are read by people: "Maria da Silva" is
    not "Maria da" + "Silva", so the name stays whole unless the roster gives its parts."""
    path = _roster(
        tmp_path,
        "folder,id,name,email,first name,surname\n"
        "m,1,Maria da Silva,m@uni.edu,,\n"
        "j,2,Jan van der Berg,j@uni.edu,Jan,van der Berg\n",
        "utf-8",
    )
    maria, jan = load_roster(path)
    assert moodle_names(maria) == ("Maria da Silva", "")
    assert moodle_names(jan) == ("Jan", "van der Berg")


def test_names_that_a_spreadsheet_would_run_are_kept_as_text(tmp_path: Path) -> None:
    """A folder or display name is the student's to choose: `=HYPERLINK(...)` must open as text."""
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2")
    write_source(tmp_path / "submissions" / "=1+1" / "hw.py", CORRECT_GRAPH2)
    roster = tmp_path / "roster.csv"
    roster.write_text('folder,id,name,email\n=1+1,7,"@SUM(A1) -Evil",e@uni.edu\n', encoding="utf-8")
    done = _grader("run", exercises, "--trials", "3", "--out", "out", "--roster", roster, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    book = _csv(tmp_path / "out" / "gradebook.csv")
    assert book[1][:3] == ["'=1+1", "7", "'@SUM(A1) -Evil"]
    assert _csv(tmp_path / "out" / "canvas.csv")[2][:2] == ["'@SUM(A1) -Evil", "7"]  # the id matches as it is
    assert _csv(tmp_path / "out" / "moodle.csv")[1][:3] == ["'@SUM(A1) -Evil", "", "7"]
