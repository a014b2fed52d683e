"""The per-worker cgroup: it bounds what a process may start and ends everything in it, daemons included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader.sandbox import cgroups

pytestmark = pytest.mark.skipif(not cgroups.available(), reason="the grader may not make cgroups here")

# Joins the group through the inherited descriptor (as the worker does), then forks sleepers until refused.
_FORKER = textwrap.dedent(
    """
    import os, sys
    try:
        os.write(int(sys.argv[1]), b"0")
    except OSError:
        sys.exit(3)  # the group was removed before this process could join it
    forked = 0
    try:
        while forked < 500:
            if os.fork() == 0:
                os.setsid()  # a daemon in its own session: a process-group kill would miss it
                quiet = os.open(os.devnull, os.O_WRONLY)
                os.dup2(quiet, 1)
                os.dup2(quiet, 2)
                os.execv("/bin/sleep", ["sleep", sys.argv[2]])
            forked += 1
    except OSError:
        pass
    print(forked, flush=True)
    """
)


def _run_forker(group: cgroups.PidsGroup, marker: str) -> int:
    fd = group.open_join_fd()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FORKER, str(fd), marker],
            pass_fds=[fd],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        os.close(fd)
    return int(done.stdout)


def _sleepers(marker: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
            state = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in words and state != "Z":
            found.append(int(cmdline.parent.name))
    return found


def test_a_group_bounds_processes_and_its_removal_ends_them_all() -> None:
    group = cgroups.create(20)
    assert group is not None
    try:
        forked = _run_forker(group, "7411")
        # The forker itself counts: 19 more at most, not the 500 it tried.
        assert forked == 19
        assert len(_sleepers("7411")) == 19  # detached, outliving the forker, still in the group
    finally:
        group.remove()
    deadline = time.monotonic() + 30  # ends when they are gone; the margin is for a loaded machine
    while _sleepers("7411") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers("7411") == []
    assert not group.path.exists()


def test_groups_of_a_grader_that_was_killed_are_tidied_up() -> None:
    group = cgroups.create(20)
    assert group is not None
    orphan = group.path.parent / f"grader-{_free_pid()}-0"
    orphan.mkdir()
    try:
        try:
            # All it could start, detached, in the orphan: what a killed grader leaves behind.
            assert _run_forker(cgroups.PidsGroup(orphan), "7412") > 0
        except subprocess.CalledProcessError as killed:
            # Another grader on the machine (the other test process) tidied the orphan first, killing
            # what it held or removing it before the forker joined: the same outcome, reached by someone else.
            assert killed.returncode in (-signal.SIGKILL, 3), killed
        cgroups._remove_stale(group.path.parent)
        deadline = time.monotonic() + 30
        while orphan.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not orphan.exists()
        assert group.path.exists()  # this grader's own group is alive and kept
        assert _sleepers("7412") == []
    finally:
        group.remove()
        cgroups.PidsGroup(orphan).remove()


def _free_pid() -> int:
    """A process id no live process has: the owner of a group left behind."""
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid


_memory = pytest.mark.skipif(
    not cgroups.memory_available(), reason="no memory controller for the grader here"
)

# Joins the group (pids, and memory under v2) through the inherited descriptor, then writes to `argv[2]`
# MiB of memory in each of `argv[3]` processes at once (itself and children).
_EATER = textwrap.dedent(
    """
    import os, sys, time
    os.write(int(sys.argv[1]), b"0")
    megabytes, processes = int(sys.argv[2]), int(sys.argv[3])
    children = [pid for pid in (os.fork() for _ in range(processes - 1)) if pid]
    if len(children) == processes - 1:  # the parent, or the only process
        held = b"x" * (megabytes << 20)
        time.sleep(1)
        statuses = [os.waitpid(pid, 0)[1] for pid in children]
        print(statuses, flush=True)
    else:
        held = b"x" * (megabytes << 20)
        time.sleep(1)
        os._exit(0)
    """
)


def _eat(group: cgroups.PidsGroup, megabytes: int, processes: int) -> subprocess.CompletedProcess[str]:
    fd = group.open_join_fd()
    try:
        command = group.joining([sys.executable, "-c", _EATER, str(fd), str(megabytes), str(processes)])
        return subprocess.run(command, pass_fds=[fd], capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.close(fd)


@_memory
def test_a_budget_bounds_the_memory_of_all_the_groups_processes_together() -> None:
    group = cgroups.create(20)
    assert group is not None and group.memory is not None
    try:
        budget = group.budget(256)
        assert budget is not None
        assert budget.allowed == 256 << 20 and budget.baseline >= cgroups.ZYGOTE_BYTES
        # 3 x 150 MiB, each under the budget alone, 450 MiB together, while the group's limit is the
        # baseline (192 MiB: nothing is in it yet) + 256 MiB.
        assert not group.exceeded(budget)
        eaten = _eat(group, 150, 3)
        assert group.exceeded(budget), (eaten.returncode, eaten.stdout, eaten.stderr[-2000:])
    finally:
        group.remove()
    assert group.memory is not None and not group.memory.path.exists()


@_memory
def test_a_handin_within_its_budget_is_not_counted_as_over_it() -> None:
    group = cgroups.create(20)
    assert group is not None
    try:
        budget = group.budget(256)
        assert budget is not None
        eaten = _eat(group, 60, 3)  # 180 MiB together
        assert eaten.returncode == 0 and eaten.stdout.strip() == "[0, 0]", eaten.stderr[-2000:]
        assert not group.exceeded(budget)
        again = group.budget(256)  # the next job's: the earlier job's OOM kills are not its own
        assert again is not None and not group.exceeded(again)
    finally:
        group.remove()


def test_a_killed_graders_group_holding_groups_of_its_own_is_tidied_up() -> None:
    """A grader run inside another grader's group, both killed: the outer group holds the inner one's,
    which holds a process. Removed whole, its process killed (rmdir of a group that holds groups fails:
    every later grader's start retried it for 5 s, and left it)."""
    group = cgroups.create(20)
    assert group is not None
    orphan = group.path.parent / f"grader-{_free_pid()}-0"
    inner = orphan / f"grader-{_free_pid()}-3"
    inner.mkdir(parents=True)
    try:
        try:
            assert _run_forker(cgroups.PidsGroup(inner), "7413") > 0
        except subprocess.CalledProcessError as killed:  # tidied by the other test process first
            assert killed.returncode in (-signal.SIGKILL, 3), killed
        cgroups._remove_stale(group.path.parent)
        assert not orphan.exists()  # at once: not left for the next grader to retry
        assert _sleepers("7413") == []
        assert group.path.exists()
    finally:
        group.remove()


@pytest.mark.parametrize("side", ["memory", "cpu"])
def test_memory_and_cpu_groups_of_a_grader_that_was_killed_are_tidied_up(side: str) -> None:
    group = cgroups.create(20)
    assert group is not None
    other = group.memory if side == "memory" else group.cpu
    if other is None:
        pytest.skip(f"no {side} controller for the grader here")
    try:
        if other.path == group.path:
            pytest.skip(f"the {side} group is the pids group here, tidied as above")
        orphan = other.path.parent / f"grader-{_free_pid()}-0"
        orphan.mkdir()
        cgroups._remove_stale(orphan.parent)
        assert not orphan.exists()
        assert other.path.exists()  # this grader's own group is kept
    finally:
        group.remove()
    assert not other.path.exists()


def test_a_group_counts_the_cpu_of_every_process_it_held_ended_ones_included() -> None:
    """Four children each burn 0.2 s and end, reaped by the kernel (SIGCHLD ignored): the group still
    counts their 0.8 s, where no process is left to read it from."""
    group = cgroups.create(20)
    assert group is not None
    if group.cpu is None:
        pytest.skip("no cgroup that counts CPU here")
    try:
        before = group.cpu.seconds()
        assert before is not None
        fd = group.open_join_fd()
        try:
            burner = textwrap.dedent(
                f"""
                import os, signal, time
                os.write({fd}, b"0")
                signal.signal(signal.SIGCHLD, signal.SIG_IGN)
                for _ in range(4):
                    if os.fork() == 0:
                        start = time.process_time()
                        while time.process_time() - start < 0.2:
                            pass
                        os._exit(0)
                while True:
                    try:
                        os.wait()
                    except ChildProcessError:
                        break
                """
            )
            command = group.joining([sys.executable, "-c", burner])
            subprocess.run(command, pass_fds=[fd], timeout=60, check=True)
        finally:
            os.close(fd)
        after = group.cpu.seconds()
        assert after is not None and after - before >= 0.8
    finally:
        group.remove()
