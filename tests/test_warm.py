"""Warm workers: one zygote serves submission after submission, and nothing of one reaches the next.

Each test uses its own pool, so that which zygote served which submission is known.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, ROOT, allow_subprocesses, copy_exercise, write_source

from grader.errors import WorkerStartError
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.results import SubmissionResult
from grader.sandbox import isolation, sched_attr, warm
from grader.sandbox.warm import WorkerPool

SANDBOXED = isolation.current().level == "bubblewrap"
CORRECT_BODY = textwrap.dedent(CORRECT_GRAPH2).split("def graph2", 1)[1].split("\n", 1)[1]  # indented once

# Leaves something behind everywhere a submission may write, and a process that outlives it.
LITTERER = """
    import ctypes, os, pathlib, time
    import numpy as np
    import torch

    def _litter():
        sandboxed = os.getppid() == 1  # outside a sandbox these would be the machine's own
        places = [pathlib.Path("left.txt"), pathlib.Path(os.environ["TMPDIR"]) / "left-tmpdir.txt"]
        if sandboxed:
            places += [pathlib.Path(p) for p in ("/tmp/left.txt", "/dev/shm/left", "/dev/left")]
        for place in places:
            try:
                place.write_text("left by the previous submission")
            except OSError:
                pass
        locked = pathlib.Path("locked")
        locked.mkdir()
        (locked / "inside.txt").write_text("x")
        locked.chmod(0)
        if not sandboxed:
            return
        ctypes.CDLL(None).shmget(0x5EED, 4096, 0o1000 | 0o666)  # IPC_CREAT
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)

    _done = []

    def graph2(W_np, x_np, b_np):
        if not _done:
            _litter()
            _done.append(1)
"""

# Reports whatever the previous submission left that it can see.
INSPECTOR = """
    import os, pathlib
    import numpy as np
    import torch

    def _inspect():
        places = ("left.txt", "locked", os.environ["TMPDIR"] + "/left-tmpdir.txt")
        found = [p for p in places if os.path.exists(p)]
        if os.getppid() == 1:  # in a sandbox: everything in it is the submission's
            mounts = [line.split()[4] for line in open("/proc/self/mountinfo").read().splitlines()]
            held = {m.split("/")[2] for m in mounts if m.startswith("/tmp/")}  # where the sandbox binds
            found += ["/tmp/" + n for n in os.listdir("/tmp") if n not in held]
            found += ["/dev/shm/" + n for n in os.listdir("/dev/shm")]
            found += ["/dev/left"] if os.path.exists("/dev/left") else []
            found += ["shm " + line for line in open("/proc/sysvipc/shm").read().splitlines()[1:]]
            me = os.getpid()
            found += ["process " + p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        print("CHECKED", "LEFT:" if found else "nothing left", found)

    _done = []

    def graph2(W_np, x_np, b_np):
        if not _done:
            _inspect()
            _done.append(1)
"""

# Tries to reach the zygote (PID 1 of the sandbox), which serves the submissions after this one.
ATTACKER = """
    import ctypes, os, signal
    import numpy as np
    import torch

    def _attack():
        os.kill(1, signal.SIGSTOP)  # the kernel drops them: PID 1 gets only signals it handles
        os.kill(1, signal.SIGKILL)
        attempts = {
            "mem": lambda: open("/proc/1/mem", "rb").read(1),
            "fd": lambda: [os.readlink("/proc/1/fd/" + n) for n in os.listdir("/proc/1/fd")],
            "environ": lambda: open("/proc/1/environ", "rb").read(),
        }
        for name, attempt in attempts.items():
            try:
                attempt()
                print(name, "done")
            except OSError as exc:
                print(name, "refused", exc.errno)
        libc = ctypes.CDLL(None, use_errno=True)
        print("ptrace", "refused" if libc.ptrace(16, 1, 0, 0) != 0 else "done")  # PTRACE_ATTACH

    _done = []

    def graph2(W_np, x_np, b_np):
        if not _done:
            _attack()
            _done.append(1)
"""

# Changes its parent's (the zygote's) scheduling attributes with sched_setattr: its time slice.
SLICER = """
    import ctypes, os, struct
    import numpy as np
    import torch

    _LAYOUT = "=IIQiIQQQII"  # struct sched_attr, 56 bytes
    _GET, _SET = {"x86_64": (315, 314), "aarch64": (275, 274)}[os.uname().machine]

    def _slice():
        libc = ctypes.CDLL(None, use_errno=True)
        buffer = ctypes.create_string_buffer(56)
        if libc.syscall(_GET, os.getppid(), buffer, 56, 0) != 0:
            print("SLICE unreadable")
            return
        fields = list(struct.unpack(_LAYOUT, buffer.raw))
        fields[5] = 100_000_000 if fields[5] != 100_000_000 else 50_000_000  # sched_runtime, ns
        changed = libc.syscall(_SET, os.getppid(), struct.pack(_LAYOUT, *fields), 0) == 0
        print("SLICE", "changed" if changed else f"refused {ctypes.get_errno()}")

    _done = []

    def graph2(W_np, x_np, b_np):
        if not _done:
            _slice()
            _done.append(1)
"""

# Reports its own and its parent's (the zygote's) scheduling attributes, as the grader reads them.
SLICE_INSPECTOR = """
    import os
    import numpy as np
    import torch
    from grader.sandbox import sched_attr

    _done = []

    def graph2(W_np, x_np, b_np):
        if not _done:
            print("ATTRIBUTES", sched_attr.read(), sched_attr.read(os.getppid()))
            _done.append(1)
"""

SPINNER = """
    import signal
    import numpy as np
    import torch

    def graph2(W_np, x_np, b_np):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass
"""


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    folder = tmp_path_factory.mktemp("warm") / "graph2"
    allow_subprocesses(folder.parent)  # the litterer's daemon: a zygote must end it where a course allows it
    limits = "\nlimits: {trial_seconds: 1, first_call_seconds: 1}\n"
    return load_exercise(copy_exercise(folder, append=limits))


def graded(
    exercise: Exercise, folder: Path, source: str, pool: WorkerPool, trials: int = 5
) -> SubmissionResult:
    path = write_source(folder / "hand_in.py", source)
    return grade(exercise, submission_from_path(path, exercise.spec.entry), Settings(0, trials), pool=pool)


def then_correct(source: str) -> str:
    """`source`, whose graph2 does its business on the first call, then computes graph2 correctly."""
    return textwrap.dedent(source) + CORRECT_BODY


def test_the_next_submission_finds_nothing_of_the_previous_one(fast: Exercise, tmp_path: Path) -> None:
    pool = WorkerPool()
    try:
        litterer = graded(fast, tmp_path / "a", then_correct(LITTERER), pool)
        assert litterer.passed, litterer.error
        (zygote,) = pool.idle
        inspector = graded(fast, tmp_path / "b", then_correct(INSPECTOR), pool)
        # Two submissions, each an ordinary worker and the autograd check's, all from the same zygote.
        assert pool.idle == (zygote,) and zygote.jobs_served == 4, "the second submission had a fresh zygote"
        assert inspector.passed, inspector.error
        assert "CHECKED" in inspector.stdout
        assert "nothing left" in inspector.stdout, inspector.stdout
    finally:
        pool.close()


@pytest.mark.skipif(not SANDBOXED, reason="the zygote is PID 1 of a sandbox only under bubblewrap")
def test_a_submission_cannot_reach_the_zygote(fast: Exercise, tmp_path: Path) -> None:
    pool = WorkerPool()
    try:
        attacker = graded(fast, tmp_path / "a", then_correct(ATTACKER), pool)
        assert attacker.passed, attacker.error
        for attempt in ("mem", "fd", "environ", "ptrace"):
            assert f"{attempt} refused" in attacker.stdout, attacker.stdout
        (zygote,) = pool.idle
        assert zygote.process.poll() is None
        after = graded(fast, tmp_path / "b", CORRECT_GRAPH2, pool)
        assert after.passed and pool.idle == (zygote,) and zygote.jobs_served == 4  # 2 workers a submission
    finally:
        pool.close()


def test_the_next_submission_inherits_no_scheduling_attribute(fast: Exercise, tmp_path: Path) -> None:
    """A job that changes the zygote's time slice with sched_setattr (bubblewrap: the same uid) gets the
    zygote replaced: the next submission's worker and its zygote have the grader's attributes."""
    pool = WorkerPool()
    try:
        slicer = graded(fast, tmp_path / "a", then_correct(SLICER), pool)
        assert slicer.passed, slicer.error
        assert "SLICE" in slicer.stdout, slicer.stdout
        first = pool.idle
        inspector = graded(fast, tmp_path / "b", then_correct(SLICE_INSPECTOR), pool)
        assert inspector.passed, inspector.error
        mine = sched_attr.read()
        assert mine is not None
        assert f"ATTRIBUTES {mine} {mine}" in inspector.stdout, (mine, inspector.stdout)
        if "SLICE changed" in slicer.stdout:  # refused where the job runs as a uid of its own (base layer)
            assert first == (), "the zygote whose slice the job changed served again"
    finally:
        pool.close()


def test_a_submission_killed_at_its_deadline_does_not_harm_the_next(fast: Exercise, tmp_path: Path) -> None:
    pool = WorkerPool()
    try:
        spinner = graded(fast, tmp_path / "a", SPINNER, pool, trials=2)
        assert spinner.error is not None and spinner.error.kind == "timeout", spinner.error
        after = graded(fast, tmp_path / "b", CORRECT_GRAPH2, pool)
        assert after.passed, after.error
    finally:
        pool.close()


def test_fresh_workers_serve_one_submission_each(fast: Exercise, tmp_path: Path) -> None:
    pool = WorkerPool(fresh=True)
    try:
        first = graded(fast, tmp_path / "a", CORRECT_GRAPH2, pool)
        assert first.passed and pool.idle == ()
    finally:
        pool.close()


def test_a_worker_that_cannot_start_is_an_error_of_the_grader(
    fast: Exercise, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm, "_BOOT", "raise ImportError('the zygote lacks a library')")
    pool = WorkerPool()
    try:
        with pytest.raises(WorkerStartError, match="ImportError: the zygote lacks a library"):
            graded(fast, tmp_path / "a", CORRECT_GRAPH2, pool)
    finally:
        pool.close()


def test_zygotes_end_with_the_grader(tmp_path: Path) -> None:
    """A grader killed outright leaves no warm worker behind: the zygote sees its control socket close."""
    script = "import os; from grader.sandbox import warm; print(warm.Zygote().process.pid, flush=True)"
    script += "; os._exit(0)"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT, timeout=60
    )
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"the zygote's process {pid} outlived the grader"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_a_pool_with_a_limit_lends_no_more_workers_than_that() -> None:
    """`-j N` keeps at most N submissions running: the next one waits for a worker to come back."""
    pool = WorkerPool(limit=1)
    try:
        first = pool.acquire()
        waiter = ThreadPoolExecutor(max_workers=1)
        second = waiter.submit(pool.acquire)
        time.sleep(0.5)
        assert not second.done(), "a second worker was lent while the first was out"
        pool.release(first, None)  # not reusable without a finished job: discarded, and the slot is free
        assert second.result(timeout=30) is not first
        pool.release(second.result(), None)
        waiter.shutdown()
    finally:
        pool.close()


@pytest.mark.parametrize("torch", [True, False])
def test_what_every_job_does_is_imported_once_in_the_zygote(torch: bool) -> None:
    """A forked worker seeds the generators and converts returns for every trial: what those import must
    be imported by the zygote's preparation, or every hand-in pays the import again (numpy.random: 13 ms
    of CPU in each). A zygote prepared without torch imports none of it."""
    tensor = 'returns.converted("out", sys.modules["torch"].ones(2, requires_grad=True) * 2)' if torch else ""
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        from grader.sandbox import seeding
        from grader.sandbox.worker import loop, returns
        loop.prepare({torch})
        assert ("torch" in sys.modules) is {torch}, "torch imported: {not torch}"
        before = set(sys.modules)
        seeding.seed_randomness(0, None)
        seeding.seed_randomness(0, 3)
        {tensor}
        returns.converted("out", np.float32(1.0))
        print(sorted(set(sys.modules) - before))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT, timeout=120
    )
    assert done.stdout.strip() == "[]", f"imported by each forked worker: {done.stdout.strip()}"
