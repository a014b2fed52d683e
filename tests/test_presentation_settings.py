"""Changing how results are shown (Gradescope visibility, titles, the author's wrong solutions) regrades
nobody in `grader run`; changing how they are graded regrades everyone (real CLI, and the hash alone)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, TRANSPOSED_GRAPH2, copy_exercise, grader_command, write_source

from grader.exercise.spec import exercise_hash, load_exercise

TRIALS = "20"
# Every presentation field at once, YAML comments and layout too: none of it changes a grade.
PRESENTATION_EDITS = (
    ("title: Gradient of a sigmoid layer", "title: The sigmoid layer, renamed  # a comment"),
    ("  Build u = W @ x + b", "  Now build u = W @ x + b"),
    ("  - {name: f, value: f}", "  - {name: f, value: f, visibility: after_due_date}"),
    ("solution: solution.py", "solution: solution.py\ngradescope: {visibility: hidden}"),
    (
        "    expect: {f: pass, auto_grad: pass, user_grad: error}",
        "    expect: {f: pass, auto_grad: pass, user_grad: logic}",
    ),
)


def _run(exercises: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), "run", str(exercises), "--trials", TRIALS, "--seed", "3", "--json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


def _edit(spec: Path, edits: tuple[tuple[str, str], ...]) -> None:
    text = spec.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    spec.write_text(text, encoding="utf-8")


def _scores(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[float, float]]:
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {r["student"]: (r["score"], r["max_score"]) for r in lines}


def test_visibility_and_titles_regrade_nobody_while_points_regrade_everyone(tmp_path: Path) -> None:
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2")
    write_source(tmp_path / "submissions" / "right" / "hw.py", CORRECT_GRAPH2)
    write_source(tmp_path / "submissions" / "transposed" / "hw.py", TRANSPOSED_GRAPH2)
    first = _run(exercises, tmp_path)
    assert first.returncode == 1, first.stderr
    assert "2 hand-ins graded, 0 unchanged" in " ".join(first.stderr.split())

    _edit(exercises / "graph2" / "exercise.yaml", PRESENTATION_EDITS)
    shown = _run(exercises, tmp_path)
    assert "0 hand-ins graded, 2 unchanged" in " ".join(shown.stderr.split()), shown.stderr
    assert _scores(shown) == _scores(first)

    _edit(exercises / "graph2" / "exercise.yaml", (("points: {f: 2,", "points: {f: 3,"),))
    regraded = _run(exercises, tmp_path)
    assert "2 hand-ins graded, 0 unchanged" in " ".join(regraded.stderr.split()), regraded.stderr
    assert _scores(regraded)["right"] == (11.0, 11.0)


@pytest.mark.parametrize(
    "edit",
    [
        ("trials: 1000", "trials: 999"),
        ("d: {min: 2, max: 9}", "d: {min: 2, max: 8}"),
        ("by_hand: true}", "by_hand: false}"),
        (
            "{name: auto_grad, grad: {of: f, wrt: W_np}}",
            "{name: auto_grad, grad: {of: f, wrt: W_np}, atol: 0.1}",
        ),
        ("entry: graph2", "entry: graph2\nprecision_credit: 0.25"),
    ],
)
def test_a_grading_field_changes_the_hash(tmp_path: Path, edit: tuple[str, str]) -> None:
    folder = copy_exercise(tmp_path / "graph2")
    before = exercise_hash(load_exercise(folder))
    _edit(folder / "exercise.yaml", PRESENTATION_EDITS)
    assert exercise_hash(load_exercise(folder)) == before
    _edit(folder / "exercise.yaml", (edit,))
    assert exercise_hash(load_exercise(folder)) != before
