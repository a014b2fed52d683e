"""One process per hand-in (worker/seccomp.py), checked from outside the grader: the real `grader run`
and `grader check` in a subprocess, in both layers. A hand-in that forks, spawns, execs or starts a
fresh interpreter (where autograd would run without any check, and CPU would be burnt where no count of
its own process sees it) gets its own error and no points, told in plain words; its classmates keep
their exact grades; honest threads still pass. A course that declares `subprocesses: true` lets its
hand-ins start processes, and the CPU deadline still holds over their children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, allow_subprocesses, copy_exercise, write_source

from grader.sandbox import isolation
from grader.sandbox.worker.tracebacks import ONE_PROCESS

ATTACKS = Path(__file__).resolve().parent / "process_attacks"
REFUSED = [
    "exec_self",
    "fork_at_import_grad",
    "fresh_interpreter",
    "multiprocessing_pool",
    "posix_spawn_burn",
    "sigchld_ignored_children",
]
LIMITS = "\nlimits: {trial_seconds: 1, first_call_seconds: 2, submission_seconds: 20, import_seconds: 20}\n"
TRIALS = 12
MARKER = "grader-attack-spawn-burn"


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _grader(layer: str, *args: str | Path | int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _burners() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if MARKER.encode() in command:
            found.append(pid)
    return found


@pytest.mark.parametrize("layer", _layers())
def test_a_handin_that_starts_a_process_gets_its_own_error_and_classmates_their_grades(
    layer: str, tmp_path: Path
) -> None:
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2", append=LIMITS)
    submissions = tmp_path / "submissions"
    for attack in REFUSED:
        write_source(submissions / attack / "graph2.py", (ATTACKS / f"{attack}.py").read_text())
        write_source(submissions / f"{attack}_classmate" / "graph2.py", textwrap.dedent(CORRECT_GRAPH2))
    write_source(submissions / "honest_threads" / "graph2.py", (ATTACKS / "honest_threads.py").read_text())
    done = _grader(
        layer, "run", exercises, "--submissions", submissions, "--trials", TRIALS, "--json", "--seed", 3
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    results = {json.loads(line)["student"]: json.loads(line) for line in done.stdout.splitlines()}
    for attack in REFUSED:
        result = results[attack]
        assert result["score"] == 0, (attack, result)
        user_grad = next(r for r in result["returns"] if r["name"] == "user_grad")
        assert user_grad["verdict"] == "error", (attack, user_grad)
        told = json.dumps(result)
        # multiprocessing's Pool is refused earlier still, its semaphore in /dev/shm (Errno 13)
        assert "PermissionError" in told, (attack, told[:2000])
        assert ONE_PROCESS in told or attack == "multiprocessing_pool", (attack, told[:2000])
        classmate = results[f"{attack}_classmate"]
        assert classmate["score"] == classmate["max_score"] == 10, classmate
    assert results["honest_threads"]["score"] == 10, results["honest_threads"]
    assert not _burners()


@pytest.mark.parametrize("layer", _layers())
def test_a_course_that_allows_subprocesses_runs_them_and_still_counts_their_cpu(
    layer: str, tmp_path: Path
) -> None:
    allow_subprocesses(tmp_path / "course")
    exercise = copy_exercise(tmp_path / "course" / "graph2", append=LIMITS)
    spawned = write_source(tmp_path / "fresh" / "graph2.py", (ATTACKS / "fresh_interpreter.py").read_text())
    done = _grader(layer, "check", exercise, spawned, "--trials", 3, "--json")
    result = json.loads(done.stdout)
    assert result["error"] is None, result
    assert [r["verdict"] for r in result["returns"]][:2] == ["pass", "pass"], result
    burner = write_source(tmp_path / "burn" / "graph2.py", (ATTACKS / "posix_spawn_burn.py").read_text())
    done = _grader(layer, "check", exercise, burner, "--trials", 3, "--json")
    result = json.loads(done.stdout)
    error = result["error"] or next(r for r in result["returns"] if r["verdict"] == "error")
    assert result["score"] < 10 and "CPU" in json.dumps(error), result
    assert not _burners()


@pytest.mark.parametrize("layer", _layers())
def test_writing_later_trials_into_the_progress_page_moves_no_deadline(layer: str, tmp_path: Path) -> None:
    """The page where the worker notes its running trial is the hand-in's to write: a call that names
    ever later trials there while burning CPU (its own alarm blocked) still meets its CPU deadline, not
    only the wall-clock cap four times later."""
    exercise = copy_exercise(tmp_path / "exercises" / "graph2", append=LIMITS)
    path = write_source(tmp_path / "rewriter" / "graph2.py", (ATTACKS / "progress_rewriter.py").read_text())
    done = _grader(layer, "check", exercise, path, "--trials", 20, "--json")
    result = json.loads(done.stdout)
    error = result["error"]
    # Stopped on its CPU: told as its deadline, or as the kill that came first on a loaded machine (the
    # worker's own CPU limit); never only at the wall-clock cap, as when each write restarted the count.
    assert result["score"] == 0 and error["kind"] in ("timeout", "crash"), error
    assert "wall-clock" not in error["message"], error
