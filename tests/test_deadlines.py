"""A trial's deadlines: the worker's CPU time, a wall-clock cap several times larger, the first call's own
deadline, and a timeout confirmed by a second run in a fresh worker before it counts.

The gradings are real sandboxed runs. Their hand-ins burn CPU by watching `time.process_time()`, so that
they use the same CPU time however loaded the machine is; the tests assert verdicts and messages, never
durations.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, allow_subprocesses, copy_exercise, grade_source, write_source

from grader.errors import SpecError
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.outcomes import Failure, FailureKind, Verdict
from grader.results import SubmissionResult
from grader.sandbox import cgroups, cpu_watch, failures, isolation
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Overrun, Pass, Returned, TrialOutput
from grader.sandbox.runner import _ran_on

HEAD = """
import time

import numpy as np
import torch


def burn(seconds):
    # CPU seconds, not wall seconds: the same work however loaded the machine is.
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
"""

CORRECT_BODY = """
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
"""

ALL_PASS = {"f": Verdict.PASS, "auto_grad": Verdict.PASS, "user_grad": Verdict.PASS}


def hand_in(first: str, prelude: str = "") -> str:
    """A graph2 hand-in whose function does `first` (lines indented by 4), then computes correctly."""
    return f"{HEAD}\n{prelude}\n\ndef graph2(W_np, x_np, b_np):\n{first}{CORRECT_BODY}"


def exercise_with(folder: Path, limits: str) -> Exercise:
    return load_exercise(copy_exercise(folder, append=f"\nlimits: {limits}\n"))


def verdicts(result: SubmissionResult) -> dict[str, Verdict]:
    return {r.name: r.verdict for r in result.returns}


def timeout_of(result: SubmissionResult, trial: int) -> Failure:
    error = result.error
    assert error is not None and error.kind is FailureKind.TIMEOUT and error.trial == trial, error
    assert set(verdicts(result).values()) == {Verdict.ERROR}
    return error


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deadlines")


# --- code that never ends still times out ---------------------------------------------------------------


def test_a_pure_python_loop_times_out_at_its_cpu_deadline_twice(workdir: Path) -> None:
    # Only trial 2 loops. The fresh worker that confirms it calls trial 0 first (paying the lazy imports
    # as the first worker did), so trial 2 is held to trial_seconds again, not to the first call's 30 s.
    exercise = exercise_with(workdir / "half_second", "{trial_seconds: 0.5}")
    marker = float(make_trials(exercise, 0, 4)[2].inputs["x_np"].flat[0])
    loop = f"    if float(x_np.flat[0]) == {marker!r}:\n        while True:\n            pass\n"
    result = grade_source(exercise, workdir / "loop", "loop.py", hand_in(loop), trials=4)
    error = timeout_of(result, 2)
    assert "trial 2 ran past its 0.5 s CPU deadline twice (used " in error.message, error.message
    assert "of CPU" in error.message and "an infinite loop?" in error.message, error.message
    assert "loop.py" in error.traceback  # where it was stuck
    # Trials 0 and 1 had returned before the loop: kept, not failed; trial 3 never ran.
    assert all(r.failed_trials == 2 for r in result.returns), [r.message for r in result.returns]


def test_a_hand_in_that_sleeps_forever_ends_at_the_wall_clock_cap(workdir: Path) -> None:
    exercise = exercise_with(workdir / "tight", "{trial_seconds: 0.5, first_call_seconds: 0.5}")
    result = grade_source(
        exercise, workdir / "sleep", "sleepy.py", hand_in("    time.sleep(3600)\n"), trials=2
    )
    error = timeout_of(result, 0)
    assert "ran past its 2 s wall-clock cap (4 × its 0.5 s CPU deadline" in error.message, error.message
    assert "twice" in error.message and "waiting, not computing" in error.message, error.message
    assert "sleepy.py" in error.traceback  # the worker stopped it itself, where it slept


# --- the first call pays the lazy imports ---------------------------------------------------------------

# What `torch.func.grad` costs on its first use (1.2 s of CPU, measured), and a little more.
FIRST_CALL_BURNS = hand_in(
    "    global warm\n    if not warm:\n        burn(1.5)\n        warm = True\n", prelude="warm = False"
)


def test_a_slow_first_call_passes_under_its_own_deadline(workdir: Path) -> None:
    exercise = exercise_with(workdir / "one_second", "{trial_seconds: 1}")
    result = grade_source(exercise, workdir / "first", "first.py", FIRST_CALL_BURNS, trials=3)
    assert result.error is None, result.error
    assert verdicts(result) == ALL_PASS


def test_a_first_call_past_first_call_seconds_is_a_timeout(workdir: Path) -> None:
    exercise = exercise_with(workdir / "one_second_first", "{trial_seconds: 1, first_call_seconds: 1}")
    result = grade_source(exercise, workdir / "first_tight", "first.py", FIRST_CALL_BURNS, trials=2)
    error = timeout_of(result, 0)
    assert "its 1 s CPU deadline for the first call after the import twice" in error.message, error.message


# --- a loaded machine does not make correct code late ---------------------------------------------------


def test_correct_code_under_load_gets_the_verdicts_it_gets_alone(workdir: Path) -> None:
    # 0.3 s of CPU per call against a 0.6 s CPU deadline. Two busy processes per core beside the worker
    # share each core at least three ways, stretching a call to ~0.9 s on the clock: past the 0.6 s a
    # wall-clock deadline allowed, well within the 2.4 s wall-clock cap.
    exercise = exercise_with(workdir / "loaded", "{trial_seconds: 0.6}")
    source = hand_in("    burn(0.3)\n")
    alone = grade_source(exercise, workdir / "alone", "busy.py", source, trials=4)
    assert alone.error is None, alone.error
    assert verdicts(alone) == ALL_PASS
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        busy = grade_source(exercise, workdir / "busy", "busy.py", source, trials=4)
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
    assert busy.error is None, busy.error
    assert verdicts(busy) == verdicts(alone)
    assert busy.score == alone.score == busy.max_score


# --- the confirmation, as values ------------------------------------------------------------------------


def _output(trial: int) -> TrialOutput:
    returned = Returned(ReturnedArray(name="f", ok=True, dtype="float64", source="numpy"), np.zeros(1))
    return TrialOutput(trial, {"f": returned}, 0.0)


def _overrun(trial: int, cpu: float = 5.02, first_call: bool = False) -> Overrun:
    return Overrun(trial, "cpu", 30.0 if first_call else 5.0, cpu, first_call)


def _overran(overrun: Overrun) -> Pass:
    failure = failures.overran(overrun)
    return Pass({}, {overrun.trial: failure}, failure, overrun)


def test_a_timeout_not_seen_again_is_gone_and_the_earlier_results_kept() -> None:
    earlier = Pass({0: _output(0), 1: _output(1)}, {}, None, _overrun(2))
    # The fresh worker called trial 0 again first (its answer is left out), then ran 2 and 3.
    later = Pass({0: _output(0), 2: _output(2), 3: _output(3)})
    merged = _ran_on(earlier, _overrun(2), later)
    assert sorted(merged.outputs) == [0, 1, 2, 3]
    assert merged.outputs[0] is earlier.outputs[0]
    assert merged.stopped is None and merged.overrun is None and not merged.failures


def test_the_same_trial_past_its_deadline_again_is_a_confirmed_timeout() -> None:
    kept = Pass({0: _output(0), 1: _output(1)})
    again = _overran(_overrun(2, cpu=5.01))
    merged = _ran_on(kept, _overrun(2), Pass({0: _output(0)}, again.failures, again.stopped, again.overrun))
    assert merged.stopped is not None and merged.stopped.kind is FailureKind.TIMEOUT
    assert merged.stopped.message == (
        "trial 2 ran past its 5 s CPU deadline twice (used 5.02 s of CPU, then 5.01 s in a fresh run; "
        "an infinite loop?): make sure every loop ends, or do less work per call"
    )
    assert merged.failures[2] == merged.stopped
    assert merged.overrun is None  # confirmed once, never again


def test_another_trial_past_its_deadline_in_the_fresh_run_is_told_as_it_is() -> None:
    kept = Pass({0: _output(0)})
    again = _overran(_overrun(3))
    merged = _ran_on(kept, _overrun(1), Pass({1: _output(1), 2: _output(2)}, again.failures, again.stopped))
    assert merged.stopped is not None and merged.stopped.trial == 3
    assert "twice" not in merged.stopped.message
    assert sorted(merged.outputs) == [0, 1, 2] and merged.overrun is None


def test_a_timeout_message_says_where_what_why_and_what_to_do() -> None:
    cpu = failures.overran(_overrun(0, cpu=30.1, first_call=True)).message
    assert cpu == (
        "trial 0 ran past its 30 s CPU deadline for the first call after the import (used 30.10 s of CPU; "
        "an infinite loop?): make sure every loop ends, or do less work per call"
    )
    killed = failures.overran(Overrun(4, "wall", 5.0, 0.25, False, stopped=False)).message
    assert killed == (
        "trial 4 ran past its 20 s wall-clock cap (4 × its 5 s CPU deadline) and did not stop when asked "
        "(used at least 0.25 s of CPU; native code that never returns, or an `except` that catches the "
        "grader's timeout?): let every loop end, and do not catch BaseException"
    )


def test_first_call_seconds_below_trial_seconds_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        exercise_with(tmp_path / "ex", "{trial_seconds: 5, first_call_seconds: 2}")
    assert info.value.field == "limits"
    assert "first_call_seconds (2) is less than trial_seconds (5)" in info.value.message


def test_the_first_call_has_at_least_a_trials_deadline(tmp_path: Path) -> None:
    assert exercise_with(tmp_path / "a", "{trial_seconds: 1}").spec.limits.first_call_cpu_seconds == 30
    assert exercise_with(tmp_path / "b", "{trial_seconds: 60}").spec.limits.first_call_cpu_seconds == 60


# --- the grader counts the CPU itself: a deadline the hand-in cannot switch off -------------------------

# Each hand-in works 3 s of CPU per call against a 1 s deadline, in a way the worker's own alarm (SIGALRM
# reading time.process_time) does not see or cannot act on; all of it within the 4 s wall-clock cap of an
# idle machine. The grader's count of the CPU of the worker's processes must stop each, and report it.
EVADED_BURN = """
import os, signal, sys, threading, time

_process_time = time.process_time  # the real clock, kept before any stub


def burn(seconds, clock=_process_time):
    start = clock()
    while clock() - start < seconds:
        pass
"""

EVASIONS = {
    "blocked_alarm": "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n    burn(3)\n",
    "ignored_alarm": "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    burn(3)\n",
    "timer_off": "    signal.setitimer(signal.ITIMER_REAL, 0)\n    burn(3)\n",
    "stubbed_clock": "    time.process_time = lambda: 0.0\n    burn(3)\n",
    "stubbed_clock_blocked": (
        "    time.process_time = lambda: 0.0\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n    burn(3)\n"
    ),
    "forked_child": (
        "    child = os.fork()\n    if child == 0:\n        burn(3)\n        os._exit(0)\n"
        "    os.waitpid(child, 0)\n"
    ),
    "multiprocessing": (
        "    import multiprocessing\n"
        "    children = [multiprocessing.Process(target=burn, args=(1.5,)) for _ in range(2)]\n"
        "    for child in children:\n        child.start()\n"
        "    for child in children:\n        child.join()\n"
    ),
    "python_subprocess": (
        "    import subprocess\n"
        "    code = 'import time\\ns = time.process_time()\\nwhile time.process_time() - s < 3: pass'\n"
        "    subprocess.run([sys.executable, '-c', code], check=True)\n"
    ),
    "thread": (
        "    worker = threading.Thread(target=burn, args=(3, time.thread_time))\n"
        "    worker.start()\n    while worker.is_alive():\n        time.sleep(0.01)\n"
    ),
    # Children no count of the processes found sees once they end: reaped by the kernel (SIGCHLD
    # ignored), left zombies, and a grandchild orphaned by a double fork. The kernel's count of the
    # worker's cgroup keeps them all.
    "kernel_reaped_children": (
        "    signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
        "    for _ in range(30):\n        child = os.fork()\n"
        "        if child == 0:\n            burn(0.1)\n            os._exit(0)\n"
        "        try:\n            os.waitpid(child, 0)\n"
        "        except ChildProcessError:\n            pass\n"
    ),
    "zombie_children": (
        "    for _ in range(30):\n        child = os.fork()\n"
        "        if child == 0:\n            burn(0.1)\n            os._exit(0)\n"
        "        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)\n"
    ),
    "orphaned_grandchild": (
        "    done, told = os.pipe()\n"
        "    if os.fork() == 0:\n        if os.fork() == 0:\n"
        "            burn(3)\n            os.write(told, b'x')\n"
        "        os._exit(0)\n"
        "    os.read(done, 1)\n"
    ),
}
PROCESS_TREES = (
    "forked_child",
    "multiprocessing",
    "python_subprocess",
    "thread",
    "kernel_reaped_children",
    "zombie_children",
    "orphaned_grandchild",
)
EVADED_LIMITS = "\nlimits: {trial_seconds: 1, first_call_seconds: 1, submission_seconds: 60}\n"


def _class_layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _cpu_reported(message: str) -> float:
    found = re.search(r"used (?:at least )?(\d+\.\d+) s of CPU", message)
    assert found is not None, message
    return float(found.group(1))


@pytest.mark.parametrize("layer", _class_layers())
def test_a_deadline_switched_off_inside_the_worker_still_holds(layer: str, tmp_path: Path) -> None:
    # Evasions through children: the course allows them, and the deadline must hold all the same.
    allow_subprocesses(tmp_path / "exercises")
    exercise = copy_exercise(tmp_path / "exercises" / "graph2", append=EVADED_LIMITS)
    submissions = tmp_path / "submissions"
    # The layers differ in how the worker's processes are found and counted (a PID namespace and its
    # cgroup, or a session): each layer takes the evasions that spread over processes; those inside the
    # worker's own process are the same under both, and bubblewrap's run takes them.
    evasions = {n: e for n, e in EVASIONS.items() if layer == "bubblewrap" or n in PROCESS_TREES}
    for number, (name, first) in enumerate(evasions.items()):
        source = f"{EVADED_BURN}\n\ndef graph2(W_np, x_np, b_np):\n{first}{CORRECT_BODY}"
        source = "import numpy as np\nimport torch\n" + source
        write_source(submissions / f"s{number:02d}a_{name}" / "hw.py", source)
        write_source(submissions / f"s{number:02d}b_classmate" / "hw.py", CORRECT_GRAPH2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "run", str(exercise.parent), "-j", "1", "--trials", "2", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    records = {r["student"]: r for r in map(json.loads, lines)}
    assert len(records) == 2 * len(evasions), done.stdout + done.stderr
    for student, record in sorted(records.items()):
        if student.endswith("classmate"):
            assert record["error"] is None and record["score"] == record["max_score"], (student, record)
            continue
        error = record["error"]
        assert error is not None and error["kind"] == "timeout" and error["trial"] == 0, (student, error)
        # Told to the hundredth: a count stopped right at the 1 s deadline reads "1.00 s".
        assert _cpu_reported(error["message"]) >= 1.0, (student, error["message"])
        assert record["score"] == 0, (student, record)


# A process tree that works in a reaped child (its CPU then in the parent's cutime) and in a grandchild
# that left the session and is still working, then says so on stdout and waits.
TREE = """
import os, sys, time
def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
child = os.fork()
if child == 0:
    burn(0.4)
    os._exit(0)
os.waitpid(child, 0)
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    burn(0.4)
    os.write(write, str(os.getpid()).encode())
    time.sleep(60)
    os._exit(0)
print("worked", os.read(read, 32).decode(), flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("where", ["descendants", "cgroup"])
def test_the_grader_counts_the_cpu_of_a_workers_children_reaped_or_not(where: str) -> None:
    group = cgroups.create(16) if where == "cgroup" else None
    if where == "cgroup" and group is None:
        pytest.skip("no cgroup may be made here")
    joined = [] if group is None else [group.open_join_fd()]
    # The tree joins the group before it starts working (as the zygote does), by the descriptor it inherits.
    join = f"os.write({joined[0]}, b'0')\n" if joined else ""
    command = [sys.executable, "-c", f"import os\n{join}{TREE}"]
    tree = subprocess.Popen(
        command if group is None else group.joining(command), stdout=subprocess.PIPE, pass_fds=joined
    )
    grandchild = b""
    try:
        watch = cpu_watch.CpuWatch(cpu_watch.Source.of(group, tree.pid))
        assert tree.stdout is not None
        said, grandchild = tree.stdout.readline().split()
        assert said == b"worked"
        assert watch.sample() >= 0.7, watch.last  # 0.4 s reaped, 0.4 s in the running grandchild
    finally:
        tree.kill()
        tree.wait()
        if grandchild:  # it left the session: ended by its own id
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(grandchild), signal.SIGKILL)
        for fd in joined:
            os.close(fd)
        if group is not None:
            group.remove()


# Work no count of the processes found can see, once it is over: a child the kernel reaps itself (SIGCHLD
# ignored, so its CPU is added to no parent's cutime), one left a zombie (gone from its group's member
# list), and one whose parent exited before it (the orphan's CPU goes to whoever reaps it). Waits for a
# line on stdin before working, so that all of it comes after the grader's first sample; each says on a
# pipe when its work is done.
UNSEEN = """
import os, signal, sys, time
def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    os.write(done, b"x")
    os._exit(0)
sys.stdin.readline()
told, done = os.pipe()
if os.fork() == 0:  # left a zombie
    burn(0.3)
middle = os.fork()
if middle == 0:
    if os.fork() == 0:  # orphaned
        burn(0.3)
    os._exit(0)
os.waitpid(middle, 0)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
if os.fork() == 0:  # reaped by the kernel
    burn(0.3)
got = b""
while len(got) < 3:
    got += os.read(told, 3)
print("worked", flush=True)
time.sleep(60)
"""


def test_the_cgroups_own_count_keeps_what_ended_children_used_however_they_ended() -> None:
    """Children reaped by the kernel, left zombies, or orphaned: 0.9 s between them, all counted."""
    group = cgroups.create(16)
    if group is None or group.cpu is None:
        pytest.skip("no cgroup that counts CPU may be made here")
    fd = group.open_join_fd()
    command = [sys.executable, "-c", f"import os\nos.write({fd}, b'0')\n{UNSEEN}"]
    tree = subprocess.Popen(
        group.joining(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=[fd]
    )
    try:
        watch = cpu_watch.CpuWatch(cpu_watch.Source.of(group, tree.pid))
        assert watch.counter is not None
        assert tree.stdin is not None and tree.stdout is not None
        tree.stdin.write(b"go\n")
        tree.stdin.flush()
        assert tree.stdout.readline().strip() == b"worked"
        assert watch.sample() >= 0.85, watch.last
    finally:
        tree.kill()
        tree.wait()
        os.close(fd)
        group.remove()
