"""Numerical derivatives where a course refuses them (`numerical_derivatives: refuse`), graded from outside by
the real CLI.

Each file in tests/numerical_attacks/ is a graph2 hand-in whose user_grad (to be derived by hand) is a
numerical derivative that its values cannot give away: the complex step (exact to rounding) one entry at a
time, in torch, vectorised, in a thread, with its unit made at run time or at import, with the grader's watch
taken off or replaced by cProfile's, after a probe that recognises the checked worker; central and forward
differences in float64 (within float32's rounding, which float32 code is allowed), through a helper, on the
input in place, stacked. None may keep user_grad's points where the course refuses them, and the message says
what was seen; honest derivations (threads and torch.func, state, float32) keep every point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import GRAPH2, copy_exercise, write_source

from grader.sandbox import isolation

TESTS = Path(__file__).resolve().parent
ATTACKS = TESTS / "numerical_attacks"
HONEST = {
    "solution": GRAPH2 / "solution.py",
    "threads_and_func": TESTS / "provenance_attacks" / "honest_threads_func.py",
    "stateful": TESTS / "provenance_attacks" / "stateful_torch.py",
}
TRIALS = 12  # 3 of them checked
COURSE = GRAPH2.parent / "course.yaml"  # MAC0460's, which refuses them


def _grader(*args: str, cwd: Path, layer: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    command = [sys.executable, "-m", "grader", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)


def _course(root: Path, refuse: bool = True) -> Path:
    """graph2 under its course's course.yaml, which refuses numerical derivatives, or under the same
    without that line: the exercise's folder."""
    exercises = root / "exercises"
    exercise = copy_exercise(exercises / "graph2")
    course = COURSE.read_text(encoding="utf-8")
    assert "\nnumerical_derivatives: refuse\n" in course
    if not refuse:
        course = course.replace("\nnumerical_derivatives: refuse\n", "\n")
    (exercises / "course.yaml").write_text(course, encoding="utf-8")
    return exercise


def _user_grad(record: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in record["returns"] if r["name"] == "user_grad")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every attack and honest hand-in as one class of `grader run`, under a course that refuses."""
    root = tmp_path_factory.mktemp("numerical")
    _course(root)
    for path in sorted(ATTACKS.glob("*.py")):
        write_source(root / "submissions" / path.stem / "hw.py", path.read_text())
    for student, path in HONEST.items():
        write_source(root / "submissions" / student / "hw.py", path.read_text())
    done = _grader("run", "exercises", "-j", "1", "--trials", str(TRIALS), "--json", cwd=root)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    by_student = {r["student"]: r for r in records}
    assert len(by_student) == len(list(ATTACKS.glob("*.py"))) + len(HONEST), done.stderr[-3000:]
    return by_student


@pytest.mark.parametrize("attack", sorted(p.stem for p in ATTACKS.glob("*.py")))
def test_a_numerical_derivative_earns_nothing_and_is_told_what_was_seen(
    graded: dict[str, Any], attack: str
) -> None:
    record = graded[attack]
    user_grad = _user_grad(record)
    assert user_grad["verdict"] == "numerical" and user_grad["score"] == 0, user_grad["message"]
    message = user_grad["message"]
    assert "computed as a numerical derivative (finite differences or the complex step)" in message
    assert "the grader saw " in message
    # where it was seen: the hand-in's file, or the grader's watch taken off or replaced
    assert any(w in message for w in ("hw.py", "sys.setprofile", "replaced during the call")), message
    # the other returns are judged on their values alone, every trial
    others = [r for r in record["returns"] if r["name"] != "user_grad"]
    assert all(r["verdict"] == "pass" and r["trials"] == TRIALS for r in others), others


def test_what_was_seen_names_the_kind_and_the_line(graded: dict[str, Any]) -> None:
    assert "the complex constant 1j (hw.py, line 19)" in _user_grad(graded["complex_step_loop"])["message"]
    moved = _user_grad(graded["finite_differences"])["message"]
    assert "W_np with one entry moved by a small step (a finite difference) passed to _f() as W" in moved
    assert "(hw.py, line 20)" in moved  # the line that called _f, not _f's own
    assert "a complex number in the global _I" in _user_grad(graded["complex_unit_at_import"])["message"]


@pytest.mark.parametrize("student", sorted(HONEST))
def test_an_honest_derivation_keeps_every_point(graded: dict[str, Any], student: str) -> None:
    returns = graded[student]["returns"]
    assert {r["verdict"] for r in returns} == {"pass"}, [r["message"] for r in returns]
    assert "derived by hand" in _user_grad(graded[student])["message"]


def test_check_refuses_in_the_other_layer_too(tmp_path: Path) -> None:
    """`grader check`, the student's own command, in the layer the class run above did not use."""
    layer = "base" if isolation.current().level == "bubblewrap" else None
    exercise = _course(tmp_path)
    done = _grader(
        "check",
        str(exercise),
        str(ATTACKS / "finite_differences_torch.py"),
        "--trials",
        "8",
        "--json",
        cwd=tmp_path,
        layer=layer,
    )
    user_grad = _user_grad(json.loads(done.stdout))
    assert user_grad["verdict"] == "numerical", user_grad["message"]


def test_a_course_that_allows_them_grades_numerical_derivatives_by_their_values(tmp_path: Path) -> None:
    """The default (docs/verdicts.md): the complex step is exact and passes; no watch runs."""
    exercise = _course(tmp_path, refuse=False)
    done = _grader(
        "check", str(exercise), str(ATTACKS / "complex_step_loop.py"), "--trials", "8", "--json", cwd=tmp_path
    )
    user_grad = _user_grad(json.loads(done.stdout))
    assert user_grad["verdict"] == "pass", user_grad["message"]
