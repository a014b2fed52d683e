"""A student's folder name is data, never a path (issue 30, family 7): folders named as the class's own
export files (gradebook.csv, summary.json, canvas.csv, moodle.csv, index.html, students) or holding
characters a file system refuses leave `--out` and `--html` whole, for `grader run` and `grader report`
(real CLI; the exports do not depend on the isolation layer, so one layer is enough)."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, grader_run, write_source

from grader.report.exports import file_names

# Each the name of a file the exports write, or of their folder, or one that a case-blind file system
# merges with another, or characters that are not a plain file name.
HOSTILE = (
    "gradebook.csv",
    "summary.json",
    "canvas.csv",
    "moodle.csv",
    "index.html",
    "students",
    "Students",
    "ana.html",
    "ana",
    "a b",
    "a_b",
    "CON",
    "nul.txt",
    "back\\slash",
    "new\nline",
    "名前",
    "x" * 200,
)
TRIALS = 3
ON_ROSTER = [s for s in HOSTILE if "\\" not in s and "\n" not in s]  # the roster refuses what reads as a path


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names")
    copy_exercise(root / "exercises" / "graph2")
    for student in HOSTILE:
        write_source(root / "submissions" / student / "hw.py", CORRECT_GRAPH2)
    rows = "".join(f'"{s}",id{i},Student {i},s{i}@example.edu\n' for i, s in enumerate(ON_ROSTER))
    (root / "roster.csv").write_text("folder,id,name,email\n" + rows, encoding="utf-8")
    return root


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return grader_run(*args, cwd=cwd)


def _check_exports(out: Path, site: Path) -> None:
    """Every export written, every student's file below out/students/, nothing outside `out`."""
    with (out / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert sorted(row["student"] for row in table) == sorted(HOSTILE)
    assert {row["graph2"] for row in table} == {"10"}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["exercises"]["graph2"]["submissions"] == len(HOSTILE)
    with (out / "canvas.csv").open(newline="", encoding="utf-8") as handle:
        assert len(list(csv.reader(handle))) == 2 + len(ON_ROSTER)  # header, points possible, students
    assert (out / "moodle.csv").is_file()
    results = sorted((out / "students").glob("*/results.json"))
    assert len(results) == len(HOSTILE)  # one each: no two students share a file, none is lost
    names = {path.parent.name.lower() for path in results}
    assert len(names) == len(HOSTILE)  # unique on a case-blind file system too
    for path in results:
        assert path.resolve().is_relative_to(out.resolve())
        assert json.loads(path.read_text(encoding="utf-8"))["score"] == 10
    assert (site / "index.html").is_file()
    pages = [p for p in (site / "students").glob("*.html") if p.is_file()]
    assert len({p.name.lower() for p in pages}) == len(HOSTILE)


def test_hostile_folder_names_leave_run_and_report_exports_whole(course: Path) -> None:
    out = course / "out"  # --out and --html into one folder: the pages and the folders do not collide
    ran = _grader(
        "run", course / "exercises", "--trials", str(TRIALS), "--roster", course / "roster.csv",
        "--out", out, "--html", out, cwd=course,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    _check_exports(out, out)
    again, site = course / "again", course / "site"
    reported = _grader(
        "report", course / "exercises", "--roster", course / "roster.csv", "--out", again, "--html", site,
        cwd=course,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stderr
    _check_exports(again, site)


def test_file_names_are_names_never_paths() -> None:
    students = ["..", ".", "../../etc/passwd", "/abs", "a\x00b", ".hidden", "CON", "con.txt", "LPT1",
                "p.html", "p", "A", "a", "", "\udcff", "x" * 300]  # fmt: skip
    names = file_names(students)
    assert len(names) == len(students)
    assert len({n.lower() for n in names.values()}) == len(students)
    for name in names.values():
        assert name and not name.startswith(".") and len(name) <= 90
        assert all(c.isascii() and (c.isalnum() or c in "_.-") for c in name), name
        assert name.split(".")[0].upper() not in {"CON", "NUL", "LPT1"}
        assert not name.lower().endswith(".html")
