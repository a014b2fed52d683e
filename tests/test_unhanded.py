"""What nobody handed in costs nothing: a library's other exercises get their results at once, with no
references (so one whose graph fails on its own inputs is not even noticed until a hand-in needs it), and
the reports say "not handed in" exactly as when each was judged over its trials (real CLI, unit)."""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, exercise_folder, grader_command, write_source

from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise
from grader.exercise.trials import make_trials
from grader.grading import not_runnable, not_started
from grader.outcomes import FailureKind, Verdict
from grader.report.json_report import to_json_line

TRIALS = 20
# The graph indexes past its input's end on every trial: the references fail, as an author's mistake would.
BROKEN = (("id: reciprocal", "id: broken"), ("entry: reciprocal", "entry: broken"), ("1 / a_np", "a_np[9]"))


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """graph2, reciprocal and an exercise whose references fail; s0 and s1 hand in graph2, s2 something
    else only (nothing of the library), s3 a notebook that is not one (unusable)."""
    root = tmp_path_factory.mktemp("library")
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    copy_exercise(exercises / "reciprocal", source=exercise_folder("reciprocal"))
    copy_exercise(exercises / "broken", BROKEN, source=exercise_folder("reciprocal"))
    submissions = root / "submissions"
    write_source(submissions / "s0" / "hw.py", CORRECT_GRAPH2)
    write_source(submissions / "s1" / "hw.py", CORRECT_GRAPH2 + "    # s1\n")
    write_source(submissions / "s2" / "hw.py", "def something_else():\n    return 1\n")
    (submissions / "s3").mkdir()
    (submissions / "s3" / "hw.ipynb").write_text("not a notebook", encoding="utf-8")
    done = _grader(
        "run", exercises, "--trials", str(TRIALS), "-j", "2", "--json", "--out", root / "out", cwd=root
    )
    return root, done


def test_an_exercise_nobody_hands_in_is_not_computed_so_its_broken_graph_goes_unnoticed(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    _, done = graded
    assert done.returncode == 1, done.stderr  # some not handed in; no spec error (that would be 2)
    assert "spec error" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {(r["student"], r["exercise"]) for r in lines} == {
        (s, e) for s in ("s0", "s1", "s2", "s3") for e in ("graph2", "reciprocal", "broken")
    }
    # Two hand-ins were graded (s0's and s1's graph2); the library's other results cost nothing.
    summary = " ".join(done.stderr.split())
    assert "2 hand-ins graded, 0 unchanged since the last run" in summary
    assert "12 exercise results (4 students × 3 exercises), 10 of them with nothing to grade" in summary


def test_not_handed_in_reads_as_before_in_the_table_the_json_and_the_exports(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, done = graded
    lines = {(r["student"], r["exercise"]): r for r in map(json.loads, done.stdout.splitlines()[:12])}
    absent = lines["s2", "graph2"]
    assert absent["error"]["kind"] == "not-submitted" and absent["trials"] == TRIALS
    assert absent["score"] == 0 and absent["max_score"] == 10
    message = "not run: not-submitted (not handed in: none of the files defines graph2())"
    for ret in absent["returns"]:
        assert (ret["verdict"], ret["message"], ret["failed_trials"]) == ("error", message, TRIALS)
    unusable = lines["s3", "reciprocal"]
    assert (
        unusable["error"]["kind"] == "missing-function"
        and "not a readable notebook" in unusable["error"]["message"]
    )
    with (root / "out" / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row[0]: row for row in csv.reader(handle)}
    header = rows["student"]
    assert rows["s2"][header.index("graph2")] == ""  # not handed in: an empty cell, never 0
    assert rows["s3"][header.index("graph2")] == "0"  # unusable: a hand-in, graded 0
    assert rows["s0"][header.index("graph2")] == "10"
    summary = json.loads((root / "out" / "summary.json").read_text(encoding="utf-8"))
    graph2 = summary["exercises"]["graph2"]
    assert (graph2["submissions"], graph2["not_submitted"]) == (3, 1)
    shown = _grader("report", root / "exercises", cwd=root)  # the class table, from the gradebook
    table = " ".join(shown.stdout.split())
    assert "s2 did not hand in: broken, graph2, reciprocal" in table, table
    assert "s0 did not hand in: broken, reciprocal" in table
    assert "s2 │ — │ — │ — │ —/30" in table  # no total where nothing was handed in, never 0


def test_once_someone_hands_it_in_its_references_are_computed_and_their_failure_told(
    graded: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, _ = graded
    write_source(root / "submissions" / "s2" / "hw.py", "def broken(a_np):\n    return 1\n")
    again = _grader("run", root / "exercises", "--trials", str(TRIALS), "-j", "2", cwd=root)
    assert again.returncode == 2, again.stderr
    assert "spec error" in again.stderr and "broken" in again.stderr
    assert "| broken" not in again.stdout and " broken " not in again.stdout.split("what failed")[0]


@pytest.fixture(scope="module")
def exercise() -> Exercise:
    from grader.exercise.spec import load_exercise

    return load_exercise(exercise_folder("reciprocal"))


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("not handed in: none of the files defines reciprocal()", FailureKind.NOT_SUBMITTED),
        ("s9: no .py or .ipynb files in this folder", FailureKind.MISSING_FUNCTION),
    ],
)
def test_the_direct_result_is_not_runnables_without_a_failing_case(
    exercise: Exercise, tmp_path: Path, message: str, kind: FailureKind
) -> None:
    references = compute_references(exercise, make_trials(exercise, 3, TRIALS))
    judged = not_runnable(exercise, "s9", tmp_path, Settings(3, TRIALS), references, message, kind)
    direct = not_started(exercise, "s9", tmp_path, Settings(3, TRIALS), message, kind)
    assert all(r.case is not None for r in judged.returns)  # the smallest trial, though none ran
    assert direct == replace(judged, returns=tuple(replace(r, case=None) for r in judged.returns))
    assert all(r.verdict is Verdict.ERROR and r.score == 0 for r in direct.returns)
    as_json, from_judged = json.loads(to_json_line(direct)), json.loads(to_json_line(judged))
    for ret in from_judged["returns"]:
        ret["smallest_failing_case"] = None
    assert as_json == from_judged
