"""`grader run` with its gradebook, as an instructor uses it: re-runs, a killed run, exports (real CLI)."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import (
    CORRECT_GRAPH2,
    TRANSPOSED_GRAPH2,
    copy_exercise,
    exercise_folder,
    grader_command,
    grader_in_background,
    handins,
    write_source,
)

from grader.gradebook import default_path

STUDENTS = 6


def _class(root: Path) -> tuple[Path, Path]:
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    for i in range(STUDENTS):  # s0 and s3 transpose user_grad
        source = TRANSPOSED_GRAPH2 if i % 3 == 0 else CORRECT_GRAPH2
        write_source(root / "submissions" / f"s{i}" / "hw.py", source)
    return exercises, root / "submissions"


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), "run", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


def _rows(book: Path) -> list[tuple[str, str, int, str]]:
    with sqlite3.connect(book) as db:
        query = "SELECT student, exercise, run_id, graded_at FROM results ORDER BY student"
        return db.execute(query).fetchall()


# One class run, graded once (a sandboxed grading of the whole class), with its exports (--out): the run
# that test_exports_and_report reads, and the first run that test_a_rerun_with_nothing_changed_grades_nothing
# runs again. Its trial count (10) is no matter to the rerun's claims.
CLASS_TRIALS = "10"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The class's folder, graded once with its exports in out/, and that run."""
    root = tmp_path_factory.mktemp("graded")
    exercises, _ = _class(root)
    return root, _run(exercises, "--trials", CLASS_TRIALS, "--out", root / "out", cwd=root)


def test_a_rerun_with_nothing_changed_grades_nothing(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, first = graded  # the shared first run
    exercises, submissions = root / "exercises", root / "submissions"
    assert first.returncode == 1, first.stderr  # two transposed students
    assert f"{STUDENTS} hand-ins graded, 0 unchanged" in first.stderr
    book = default_path(submissions)
    before = _rows(book)
    again = _run(exercises, "--trials", CLASS_TRIALS, cwd=root)
    assert f"0 hand-ins graded, {STUDENTS} unchanged" in again.stderr
    assert again.stdout == first.stdout  # the same table, from the gradebook (--out writes to stderr)
    assert _rows(book) == before
    # One student hands in again (test_exports_and_report's claims hold on the class before or after: it
    # reads the first run's exports, and its report's students and exit code are the same)
    write_source(submissions / "s1" / "hw.py", TRANSPOSED_GRAPH2)
    third = _run(exercises, "--trials", CLASS_TRIALS, cwd=root)
    assert f"1 hand-in graded, {STUDENTS - 1} unchanged" in third.stderr
    changed = {row[0] for row in _rows(book)} - {row[0] for row in set(_rows(book)) & set(before)}
    assert changed == {"s1"}
    other_seed = _run(exercises, "--trials", CLASS_TRIALS, "--seed", "5", cwd=root)
    assert f"{STUDENTS} hand-ins graded, 0 unchanged" in other_seed.stderr


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_a_run_killed_halfway_resumes_without_regrading(tmp_path: Path) -> None:
    exercises, _ = _class(tmp_path)
    book = default_path(tmp_path / "submissions")
    process = _run_until_recorded(exercises, tmp_path, rows=2)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    finished = _safe_rows(book)
    assert 2 <= len(finished) < STUDENTS, "the run was not killed halfway"
    resumed = _run(exercises, "--trials", "200", cwd=tmp_path)
    assert f"{handins(STUDENTS - len(finished))} graded, {len(finished)} unchanged" in resumed.stderr, (
        resumed.stderr
    )
    rows = _rows(book)
    assert sorted(r[0] for r in rows) == [f"s{i}" for i in range(STUDENTS)]  # each exactly once
    assert set(finished) <= set(rows)  # the finished ones were not regraded


def _run_until_recorded(exercises: Path, cwd: Path, rows: int) -> subprocess.Popen[str]:
    """`grader run -j 1` in its own session, returned once the gradebook holds `rows` results."""
    book = default_path(cwd / "submissions")
    command: list[str | Path] = ["run", exercises, "--trials", "200", "-j", "1"]
    return grader_in_background(command, cwd, lambda: len(_safe_rows(book)) >= rows, timeout=240)


def _safe_rows(book: Path) -> list[tuple[str, str, int, str]]:
    try:
        return _rows(book)
    except sqlite3.Error:  # created but not yet initialised
        return []


def test_exports_and_report(graded: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp_path, ran = graded  # the shared class run, with --out
    exercises = tmp_path / "exercises"
    out = tmp_path / "out"
    assert ran.returncode == 1, ran.stderr
    with (out / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [row["student"] for row in table] == [f"s{i}" for i in range(STUDENTS)]
    assert {row["graph2"] for row in table} == {"10", "6"}
    assert table[0]["total"] == "6" and table[0]["max_total"] == "10"
    results = json.loads((out / "students" / "s0" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == 6 and results["max_score"] == 10
    assert {t["status"] for t in results["tests"]} == {"passed", "failed"}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["exercises"]["graph2"]["returns"]["user_grad"]["verdicts"] == {"logic": 2, "pass": 4}

    report = subprocess.run(
        [*grader_command(), "report", str(exercises), "--json", "--out", str(tmp_path / "again")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    lines = [json.loads(line) for line in report.stdout.splitlines()]  # JSON lines only, with --out too
    assert sorted(line["student"] for line in lines) == [f"s{i}" for i in range(STUDENTS)]
    assert "wrote" in report.stderr
    assert report.returncode == 1


def test_gradescope_writes_results_for_one_submission(tmp_path: Path) -> None:
    exercises = tmp_path / "source" / "exercises"
    copy_exercise(exercises / "graph2")
    copy_exercise(exercises / "reciprocal", source=exercise_folder("reciprocal"))
    submission = tmp_path / "submission"
    write_source(submission / "graph2.py", TRANSPOSED_GRAPH2)
    results_file = tmp_path / "results" / "results.json"
    command = [*grader_command(), "gradescope", str(exercises), "--submission", str(submission)]
    done = subprocess.run(
        [*command, "--results", str(results_file), "--trials", "10"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert results["score"] == 6 and results["max_score"] == 20
    by_name = {t["name"]: t for t in results["tests"]}
    assert by_name["graph2: user_grad"]["status"] == "failed"
    assert by_name["graph2: f"]["status"] == "passed"
    assert "not handed in" in by_name["reciprocal: loss"]["output"]
    assert list(results_file.parent.iterdir()) == [results_file]  # nothing else left beside it


def test_gradescope_writes_results_even_when_the_autograder_is_broken(tmp_path: Path) -> None:
    results_file = tmp_path / "results" / "results.json"
    command = [*grader_command(), "gradescope", str(tmp_path / "no_exercises_here")]
    done = subprocess.run(
        [*command, "--submission", str(tmp_path), "--results", str(results_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert results["score"] == 0
    assert "not your fault" in results["output"]


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")
def test_ctrl_c_stops_cleanly_and_keeps_what_is_done(tmp_path: Path) -> None:
    exercises, _ = _class(tmp_path)
    book = default_path(tmp_path / "submissions")
    process = _run_until_recorded(exercises, tmp_path, rows=1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    kept = _safe_rows(book)
    assert 1 <= len(kept) < STUDENTS
    assert f"interrupted: {STUDENTS - len(kept)} left to grade" in " ".join(stderr.split())
    resumed = _run(exercises, "--trials", "200", cwd=tmp_path)
    assert f"{handins(STUDENTS - len(kept))} graded, {len(kept)} unchanged" in resumed.stderr


def test_two_classes_beside_one_exercises_folder_keep_their_own_gradebooks(tmp_path: Path) -> None:
    """Each class's gradebook is beside its folder, named after it: `grader report` shows that class only,
    and a folder of other exercises is told so instead of showing grades that are not its own."""
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2")
    for name, source in (("morning", CORRECT_GRAPH2), ("evening", TRANSPOSED_GRAPH2)):
        write_source(tmp_path / name / f"{name}_student" / "hw.py", source)
        ran = _run(exercises, "--submissions", tmp_path / name, "--trials", "5", cwd=tmp_path)
        assert ran.returncode in (0, 1), ran.stderr
        assert default_path(tmp_path / name).is_file()
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == [
        "evening.gradebook.sqlite",
        "morning.gradebook.sqlite",
    ]

    def report(*args: str | Path) -> subprocess.CompletedProcess[str]:
        command = [*grader_command(), "report", *map(str, args)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)

    morning = report(exercises, "--submissions", tmp_path / "morning", "--json")
    assert [json.loads(line)["student"] for line in morning.stdout.splitlines()] == ["morning_student"]
    assert morning.returncode == 0, morning.stderr
    other = tmp_path / "other"
    copy_exercise(other / "graph1", source=exercise_folder("graph1"))
    wrong_folder = report(other, "--submissions", tmp_path / "evening")
    assert wrong_folder.returncode == 2
    told = " ".join(wrong_folder.stderr.split())
    assert "evening.gradebook.sqlite: holds grades for graph2, none of the exercises under" in told
