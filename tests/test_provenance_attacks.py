"""Hostile hand-ins against the autograd check, graded from outside by the real CLI, in both isolation layers.

Each file in tests/provenance_attacks/ is a graph2 hand-in whose user_grad (to be derived by hand) comes from
autograd, dressed to get past the check: answers memoized per input (1), the check's factor probed on a
graph of its own or beside the loss and divided out (2), torch's engine captured at import and restored or
called directly, or a fresh one made from torch._C (3), forward mode (4), leaving or raising where it
notices the check (5), recognizing the check from the seed, the engine's type or a public constant (6),
the job channel closed at import (7), torch's grad_fn nodes called directly (walked through next_functions,
one node, down to AccumulateGrad, in a thread, with the default hooks popped or its own on top), probe then
finite differences, the grader's state searched through gc, answers memoised by input bytes in a file;
plain and partial copies besides. None may keep user_grad's points. The stateful_* files are correct hand
derivations with state (a call counter, a running mean, a cache, a list of earlier answers: case 8), and
honest_threads_func one in a thread with torch.func for auto_grad, which must keep every point. Before this
check was rebuilt, all of the
attacks but the plain copies got full marks (see the git log of judging/provenance.py).
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

ATTACKS = Path(__file__).resolve().parent / "provenance_attacks"
TRIALS = 20  # 3 of them checked
# A first call of 4 s, not the default 30: hang_on_check spins in the checked worker's first call, and a
# timeout is confirmed by a second run (2 x 30 s of CPU a layer, most of this file's time, 2026-12-05).
LIMITS = (
    "\nlimits: {trial_seconds: 2, first_call_seconds: 4, submission_seconds: 60, import_seconds: 20, "
    "memory_mb: 2048}\n"
)
CORRECT = ("stateful_counter", "stateful_torch", "honest_threads_func")
# What each attack gets: no points for user_grad, and the verdict that says why. An attack that leaves or
# stalls when it notices the check ends its whole run (every return errs); one that raises there loses
# user_grad, whose check could not run.
EXPECTED = {
    "honest_asserts_equal": "error",
    "exit_on_check": "error",
    "hang_on_check": "error",
    "raise_on_check": "error",
}


def _grader(layer: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command, in a subprocess, under `layer` ("bubblewrap" or "base")."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    command = [sys.executable, "-m", "grader", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _attacks() -> list[str]:
    return sorted(p.stem for p in ATTACKS.glob("*.py") if p.stem not in CORRECT)


@pytest.fixture(scope="module", params=_layers())
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every hand-in of the folder as a student of one `grader run` class, with the bundled solution."""
    root = tmp_path_factory.mktemp(f"provenance-{request.param}")
    exercises = root / "exercises"
    exercise = copy_exercise(exercises / "graph2", append=LIMITS)
    submissions = root / "submissions"
    for path in sorted(ATTACKS.glob("*.py")):
        write_source(submissions / path.stem / "hw.py", path.read_text())
    write_source(submissions / "solution" / "hw.py", (exercise / "solution.py").read_text())
    done = _grader(
        request.param, "run", str(exercises), "-j", "1", "--trials", str(TRIALS), "--json", cwd=root
    )
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    by_student = {r["student"]: r for r in records}
    assert len(by_student) == len(list(ATTACKS.glob("*.py"))) + 1, done.stderr[-3000:]
    return {"layer": request.param, **by_student}


def _returns(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in record["returns"]}


@pytest.mark.parametrize("attack", _attacks())
def test_no_attack_keeps_user_grads_points(graded: dict[str, Any], attack: str) -> None:
    user_grad = _returns(graded[attack])["user_grad"]
    assert user_grad["score"] == 0, user_grad["message"]
    assert user_grad["verdict"] == EXPECTED.get(attack, "autograd"), user_grad["message"]


@pytest.mark.parametrize("attack", sorted(set(_attacks()) - set(EXPECTED)))
def test_a_caught_copy_is_told_what_was_seen_and_keeps_its_other_points(
    graded: dict[str, Any], attack: str
) -> None:
    returns = _returns(graded[attack])
    message = returns["user_grad"]["message"]
    assert "user_grad changed when only autograd's results changed" in message
    assert "in a process where the grader had altered every gradient autograd gives" in message
    assert "comes from autograd, not from your own derivation" in message
    # f and auto_grad are judged on every trial of the ordinary worker, which has no hook of the check
    assert returns["f"]["verdict"] == returns["auto_grad"]["verdict"] == "pass"
    assert returns["f"]["trials"] == returns["auto_grad"]["trials"] == TRIALS


def test_raising_where_the_check_runs_fails_closed(graded: dict[str, Any]) -> None:
    returns = _returns(graded["raise_on_check"])
    # the call raised where it was checked: the return to be derived by hand earns nothing; f and auto_grad
    # keep theirs (the checked worker judges nothing else)
    assert returns["user_grad"]["verdict"] == "error" and returns["user_grad"]["score"] == 0
    assert returns["f"]["verdict"] == returns["auto_grad"]["verdict"] == "pass"
    message = returns["user_grad"]["message"]
    assert "RuntimeError: not today" in message and "the check that user_grad is derived by hand" in message
    assert "a return whose check could not run earns no points" in message


def test_an_assertion_that_autograd_agrees_fails_where_autograd_was_changed(graded: dict[str, Any]) -> None:
    """Honest code comparing autograd with its own derivation inside the function: the comparison fails on
    the checked trials, which costs the by-hand return its points (its check could not run) and nothing
    else, and the message says why."""
    returns = _returns(graded["honest_asserts_equal"])
    assert returns["f"]["score"] == 2 and returns["auto_grad"]["score"] == 4
    message = returns["user_grad"]["message"]
    assert "autograd and my derivation disagree" in message
    assert "the check that user_grad is derived by hand did not complete" in message


@pytest.mark.parametrize("student", [*CORRECT, "solution"])
def test_a_correct_hand_derivation_keeps_every_point(graded: dict[str, Any], student: str) -> None:
    returns = _returns(graded[student])
    assert {r["verdict"] for r in returns.values()} == {"pass"}, [r["message"] for r in returns.values()]
    # every return is judged on every trial; user_grad also held where autograd was altered
    assert returns["user_grad"]["trials"] == returns["f"]["trials"] == TRIALS
    assert (
        "also gave the same user_grad on the 3 trials run again where the grader secretly altered"
        in returns["user_grad"]["message"]
    )


def test_check_grades_a_copy_and_a_derivation_alike(tmp_path: Path) -> None:
    """`grader check` (one hand-in, the student's own command) runs the same check."""
    for layer in _layers():
        copy = _grader(
            layer,
            "check",
            str(GRAPH2),
            str(ATTACKS / "probe_same_call.py"),
            "--trials",
            "12",
            "--json",
            cwd=tmp_path,
        )
        assert _returns(json.loads(copy.stdout))["user_grad"]["verdict"] == "autograd", copy.stderr[-2000:]
        right = write_source(tmp_path / "right.py", (ATTACKS / "stateful_torch.py").read_text())
        done = _grader(layer, "check", str(GRAPH2), str(right), "--trials", "12", "--json", cwd=tmp_path)
        assert json.loads(done.stdout)["score"] == 10, done.stdout[-2000:]
