"""A worker without torch (sandbox/torch_use.py) cannot reach it, checked from outside the grader: the
real `grader check` and `grader run` in a subprocess, in both layers. A numpy hand-in of CS231n's affine
layer that never spells torch's name tries every route to it that the worker must hold alone (the
finders removed, a spec made by hand, its library through ctypes, its files read, functorch) and raises
naming what it reached: full marks mean every route held, and each route reaches torch without the
sandbox. Routes through the finder (by name, its folder on sys.path again) are refused and told to the
grader, which grades the hand-in again in a worker with torch: a copy of autograd earns nothing for its
by-hand returns there, an honest hand-in full marks. A copy whose worker has torch from a zygote that
imported it for the hand-in graded before earns nothing too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXERCISES, copy_exercise, grader_run, layer_env, write_source

from grader.sandbox import isolation

ATTACKS = Path(__file__).resolve().parent / "torch_attacks"
AFFINE = EXERCISES / "cs231n" / "a2" / "affine"
TRIALS = 6
AROUND = (
    "finders removed",
    "a spec made by hand",
    "its library through ctypes",
    "its files read",
    "its companion package",
)
THROUGH = ("by name", "its folder on sys.path again")
ROUTES = (*AROUND, *THROUGH)
BY_HAND = ("dx", "dw", "db")


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def test_the_attacks_never_spell_torch_and_each_route_reaches_it_without_the_sandbox(tmp_path: Path) -> None:
    for attack in ATTACKS.glob("*.py"):
        assert b"torch" not in attack.read_bytes(), attack
    done = subprocess.run(
        [sys.executable, "-I", "-c", _EACH_ROUTE, str(ATTACKS / "routes.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stdout.splitlines() if not line.startswith("HELD")] == [
        f"{label} reached" for label in ROUTES
    ], done.stdout


# The routes defined once, each tried in a child forked before any of them ran: torch's import cannot be
# undone in a process, so each route must be the first to reach it.
_EACH_ROUTE = """
import os
import sys

scope = {"__name__": "__control__"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), scope)
for label in scope["ROUTES"]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        scope["attempt"](label, scope["ROUTES"][label])
        print(label, "reached" if scope["REACHED"] == [label] else "held")
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
"""


def _with_references(exercise: Path, layer: str) -> dict[str, str]:
    """The environment of a grader under `layer`, whose cache holds the references of `exercise`'s checks:
    a check that computes them has torch in its zygote for them, and every worker forked after has it too
    (and autograd made wrong in the checked one). The solution's check puts them there, and passes."""
    env = layer_env(layer)
    solved = grader_run("check", exercise, exercise / "solution.py", "--trials", TRIALS, "--json", env=env)
    assert json.loads(solved.stdout)["score"] == 10, solved.stdout
    return env


@pytest.mark.parametrize("layer", _layers())
def test_no_route_reaches_torch_from_a_worker_without_it(layer: str, tmp_path: Path) -> None:
    exercise = copy_exercise(tmp_path / "exercises" / "affine", source=AFFINE)
    env = _with_references(exercise, layer)
    attacker = write_source(tmp_path / "attacker" / "layers.py", (ATTACKS / "routes.py").read_text())
    done = grader_run("check", exercise, attacker, "--trials", TRIALS, "--json", "--show-output", env=env)
    result = json.loads(done.stdout)
    assert "REACHED" not in json.dumps(result), result
    assert result["error"] is None and result["score"] == result["max_score"], result
    assert [line.split(":")[0] for line in result["stdout"].splitlines()] == [f"HELD {r}" for r in AROUND]


@pytest.mark.parametrize("layer", _layers())
def test_a_copy_of_autograd_under_a_built_name_earns_nothing_with_or_without_torch(
    layer: str, tmp_path: Path
) -> None:
    """One zygote serves the class in turn (-j 1): the torch hand-in first (its zygote imports torch), then
    the copier, whose worker then has torch in memory; the copier alone, its references cached, has none."""
    exercise = copy_exercise(tmp_path / "exercises" / "affine", source=AFFINE)
    copier = (ATTACKS / "copier.py").read_text()
    named = "import torch  # named: its worker has torch\n" + copier.replace('"to" + "rch"', '"torch"')
    submissions = tmp_path / "submissions"
    write_source(submissions / "a_named" / "layers.py", named)
    write_source(submissions / "b_copier" / "layers.py", copier)
    done = grader_run(
        "run",
        exercise.parent,
        "--submissions",
        submissions,
        "-j",
        1,
        "--trials",
        TRIALS,
        "--json",
        env=layer_env(layer),
    )
    results = {json.loads(line)["student"]: json.loads(line) for line in done.stdout.splitlines()}
    assert set(results) == {"a_named", "b_copier"}, done.stderr[-3000:]
    for student, result in results.items():
        returns = {r["name"]: r for r in result["returns"]}
        assert returns["out"]["verdict"] == "pass", (student, result)
        for name in BY_HAND:
            assert returns[name]["score"] == 0, (student, returns[name])
            assert returns[name]["verdict"] == "autograd", (student, returns[name])
    env = _with_references(exercise, layer)
    alone = grader_run(
        "check", exercise, submissions / "b_copier" / "layers.py", "--trials", TRIALS, "--json", env=env
    )
    _earns_nothing_by_hand(json.loads(alone.stdout))


def _earns_nothing_by_hand(result: dict[str, Any]) -> None:
    returns = {r["name"]: r for r in result["returns"]}
    assert returns["out"]["verdict"] == "pass", result  # graded: in a worker with torch
    for name in BY_HAND:
        assert returns[name]["score"] == 0 and returns[name]["verdict"] == "autograd", returns[name]


@pytest.mark.parametrize("route", THROUGH)
def test_torch_imported_through_the_finder_is_graded_again_with_torch(route: str, tmp_path: Path) -> None:
    """Its worker starts without torch (the references cached: nothing else loads it), refuses it, and
    the grader grades the hand-in again where torch is: a copy of autograd earns nothing, an honest
    hand-in that only converts arrays with it earns full marks."""
    layer = _layers()[0]
    exercise = copy_exercise(tmp_path / "exercises" / "affine", source=AFFINE)
    env = _with_references(exercise, layer)
    copier = (ATTACKS / "copier.py").read_text().replace('ROUTE = "by name"', f"ROUTE = {route!r}")
    copying = write_source(tmp_path / "copier" / "layers.py", copier)
    honest = write_source(
        tmp_path / "honest" / "layers.py", copier.replace("HONEST = False", "HONEST = True")
    )
    copied = grader_run("check", exercise, copying, "--trials", TRIALS, "--json", env=env)
    _earns_nothing_by_hand(json.loads(copied.stdout))
    done = grader_run("check", exercise, honest, "--trials", TRIALS, "--json", env=env)
    result = json.loads(done.stdout)
    assert result["error"] is None and result["score"] == result["max_score"], result
