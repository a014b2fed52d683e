"""One process per hand-in (worker/seccomp.py), checked from outside the grader: the real `grader run`
and `grader check` in a subprocess, in both layers. A hand-in that forks, spawns, execs or starts a
fresh interpreter (where autograd would run without any check, and CPU would be burnt where no count of
its own process sees it) gets its own error and no points, told in plain words; its classmates keep
their exact grades; honest threads still pass. A course that declares `subprocesses: true` lets its
hand-ins start processes, and the CPU deadline still holds over their children, however they end
(reaped by the kernel, left zombies, orphaned): told by the error, by the CPU the whole run took as an
outer cgroup of the test's counts it, and by no process of theirs being left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, allow_subprocesses, copy_exercise, grader_run, layer_env, write_source

from grader.sandbox import cgroups, isolation
from grader.sandbox.worker.tracebacks import ONE_PROCESS

ATTACKS = Path(__file__).resolve().parent / "process_attacks"
REFUSED = [
    "double_fork_burn",
    "exec_self",
    "fork_at_import_grad",
    "fork_child_serves",
    "fresh_interpreter",
    "multiprocessing_pool",
    "posix_spawn_burn",
    "raw_syscalls",
    "sigchld_ignored_burn",
    "sigchld_ignored_children",
    "unreaped_children",
]
# Where the course allows subprocesses: each burns 3 to 10 s of CPU in its first call in children (a
# /bin/sh loop it waits for, short children the kernel reaps, zombies, orphaned grandchildren), while
# the call itself only waits.
BURNERS = ["posix_spawn_burn", "sigchld_ignored_burn", "unreaped_children", "double_fork_burn"]
FIRST_CALL_SECONDS = 2
LIMITS = (
    f"\nlimits: {{trial_seconds: 1, first_call_seconds: {FIRST_CALL_SECONDS}, submission_seconds: 20, "
    "import_seconds: 20}\n"
)
# For a hand-in whose every call starts a Python that imports torch: 1.5 to 1.85 s of CPU on a quiet CI
# machine (2026-12-06), past the 1 s the burners are held to.
SPAWNING_LIMITS = (
    "\nlimits: {trial_seconds: 8, first_call_seconds: 8, submission_seconds: 20, import_seconds: 20}\n"
)
# A first call's timeout is confirmed in a fresh worker: two runs of the call. Each may take its deadline,
# the grace and two samples before the grader kills it (2.64 to 2.87 s of 2 s, 2026-12-05), and the
# grader's own work differs from an honest hand-in's (a second worker): 4 s a run on top (a CI run with
# another test file beside it took 10.4 s more than the honest hand-in for the double fork, 2026-12-05).
# Before the cgroup counted the CPU, children reaped by the kernel or left zombies took 10 to 13.5 s more
# than an honest hand-in (the calls ran on to their 8 s wall-clock caps, "waiting, not computing"): every
# burner burns 10 s a call, so that uncounted it would take 16 s more at least.
CPU_RUNS, CPU_MARGIN = 2, 4
TRIALS = 12
MARKER = "grader-attack-spawn-burn"
BURNER_NAME = "grader-burn"  # the name (comm) the attackers' children give themselves


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _grader(layer: str, *args: str | Path | int) -> subprocess.CompletedProcess[str]:
    return grader_run(*args, env=layer_env(layer))


def _grader_counted(
    layer: str, *args: str | Path | int
) -> tuple[subprocess.CompletedProcess[str], float | None]:
    """`_grader`, run in a cgroup of the test's own: what it did, and the CPU it took in all, its
    zygotes, workers and every child included (None where no cgroup counts CPU here)."""
    outer = cgroups.create(4096)
    if outer is None or outer.cpu is None:
        if outer is not None:
            outer.remove()
        return _grader(layer, *args), None
    env = layer_env(layer)
    join = outer.open_join_fd()
    try:
        before = outer.cpu.seconds()
        script = (
            f"import os, runpy, sys; os.write({join}, b'0'); runpy.run_module('grader', run_name='__main__')"
        )
        done = subprocess.run(
            outer.joining([sys.executable, "-c", script, *map(str, args)]),
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            stdin=subprocess.DEVNULL,
            pass_fds=[join],
        )
        after = outer.cpu.seconds()
    finally:
        os.close(join)
        outer.remove()
    return done, None if before is None or after is None else after - before


def _burners() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if (MARKER.encode() in command or name == BURNER_NAME) and state != "Z":
            found.append(pid)
    return found


def _gone() -> list[str]:
    """The attackers' processes still alive once the grader has exited (a killed one may take a moment
    to be reaped by its parent, the machine's init)."""
    for _ in range(100):
        left = _burners()
        if not left:
            return left
        time.sleep(0.1)
    return left


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
        # (multiprocessing's Pool may be refused earlier still, its semaphore in /dev/shm: Errno 13)
        assert "PermissionError" in told and ONE_PROCESS in told, (attack, told[:2000])
        assert "no new processes (seccomp)" in result["isolation"], result["isolation"]
        classmate = results[f"{attack}_classmate"]
        assert classmate["score"] == classmate["max_score"] == 10, classmate
    assert results["honest_threads"]["score"] == 10, results["honest_threads"]
    assert not _gone()


@pytest.mark.parametrize("layer", _layers())
def test_a_course_that_allows_subprocesses_runs_them_and_still_counts_their_cpu(
    layer: str, tmp_path: Path
) -> None:
    allow_subprocesses(tmp_path / "course")
    exercise = copy_exercise(tmp_path / "course" / "graph2", append=LIMITS)
    spawning = copy_exercise(tmp_path / "course" / "graph2_spawning", append=SPAWNING_LIMITS)
    spawned = write_source(tmp_path / "fresh" / "graph2.py", (ATTACKS / "fresh_interpreter.py").read_text())
    done = _grader(layer, "check", spawning, spawned, "--trials", 3, "--json")
    result = json.loads(done.stdout)
    assert result["error"] is None, result
    assert [r["verdict"] for r in result["returns"]][:2] == ["pass", "pass"], result
    assert "subprocesses allowed by the course" in result["isolation"], result["isolation"]
    honest = write_source(tmp_path / "honest" / "graph2.py", textwrap.dedent(CORRECT_GRAPH2))
    done, honest_cpu = _grader_counted(layer, "check", exercise, honest, "--trials", 3, "--json")
    assert json.loads(done.stdout)["score"] == 10, done.stdout
    counted = "CPU counted by a cgroup" in result["isolation"]
    for attack in BURNERS:
        burner = write_source(tmp_path / attack / "graph2.py", (ATTACKS / f"{attack}.py").read_text())
        done, cpu = _grader_counted(layer, "check", exercise, burner, "--trials", 3, "--json")
        result = json.loads(done.stdout)
        error = result["error"]
        assert result["score"] == 0 and error is not None and error["kind"] == "timeout", (attack, result)
        if counted:  # else the grader adds up the processes it finds: the kernel's reaped ones escape it
            assert "CPU deadline" in error["message"] and "wall-clock" not in error["message"], (
                attack,
                error,
            )
            if cpu is not None and honest_cpu is not None:
                assert cpu - honest_cpu <= CPU_RUNS * (FIRST_CALL_SECONDS + CPU_MARGIN), (
                    attack,
                    cpu,
                    honest_cpu,
                )
        assert not _gone(), attack


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
