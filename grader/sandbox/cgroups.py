"""A worker's processes counted, bounded and ended together, with the kernel's cgroup controllers.

Where the grader may create cgroups (as root, cgroup v1 or v2 with the `pids` controller), each worker
gets its own: `pids.max` bounds its processes and threads (a fork bomb meets EAGAIN instead of loading
the machine), and at the end every process in it is killed, daemons that left the session included.
The worker joins by writing to a `cgroup.procs` file the grader opened for it, before student code runs.

Where the `memory` controller can be had too, the same group bounds the memory of all the hand-in's
processes together (RLIMIT_AS bounds each process alone: three children could each take all of it):
at each job the limit is set to what the zygote holds then plus the exercise's `memory_mb`, without swap,
and the kernel's count of OOM kills in the group says afterwards whether the hand-in went past it. Under
cgroup v2 that is the group itself; under v1 a group of the same name in the memory hierarchy, which the
grader moves the zygote's processes into at each job (the worker, forked after, is born in it).

The same group counts the CPU of all the hand-in's processes, ended ones included, as the kernel charges
it: cgroup v2's `cpu.stat` (`usage_usec`), or under v1 `cpuacct.usage` of a group of the same name in the
`cpuacct` hierarchy, which the zygote is born in as in the v1 memory group. A count of the processes one
finds in /proc misses children reaped by the kernel (`SIGCHLD` ignored), zombies (gone from the group's
member list before their parent reaps them) and whatever ran between two samples; the group's does not.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PREFIX = "grader-"
# What a warm zygote's group holds (torch imported, before any job): 146 MiB under bubblewrap and in the
# base layer alike (cgroup v1, torch 2.13, 2026-12-03), and a third more for other libraries' versions.
ZYGOTE_BYTES = 192 << 20
_counter = itertools.count()


@dataclass(frozen=True)
class Memory:
    """The memory group's files: they differ between cgroup v1 and v2."""

    path: Path
    v2: bool
    # The file of OOM kill counts, kept open: read again with pread as each piece of results arrives, it
    # costs a fraction of opening it each time.
    events: int = -1

    @classmethod
    def opened(cls, path: Path, v2: bool) -> Memory:
        events = os.open(path / ("memory.events" if v2 else "memory.oom_control"), os.O_RDONLY | os.O_CLOEXEC)
        return cls(path, v2, events)

    def close(self) -> None:
        if self.events >= 0:
            with contextlib.suppress(OSError):
                os.close(self.events)

    @property
    def usage(self) -> int:
        return int((self.path / ("memory.current" if self.v2 else "memory.usage_in_bytes")).read_text())

    @property
    def oom_kills(self) -> int:
        """How many processes of the group the kernel's OOM killer has ended so far."""
        for line in os.pread(self.events, 4096, 0).split(b"\n"):
            key, _, value = line.partition(b" ")
            if key == b"oom_kill":
                return int(value)
        return 0

    def reset_peak(self) -> None:
        """Start the count of the most the group held afresh (v1 only: v2's memory.peak is reset per
        open file, and then counts only through that file, which the grader does not keep open)."""
        if not self.v2:
            with contextlib.suppress(OSError):
                (self.path / "memory.max_usage_in_bytes").write_text("0")

    @property
    def peak(self) -> int | None:
        """The most the group held since the job began (v1); None where that is unknown (v2's memory.peak
        counts from the group's making, earlier jobs included)."""
        if self.v2:
            return None
        try:
            return int((self.path / "memory.max_usage_in_bytes").read_text())
        except (OSError, ValueError):
            return None

    def limit(self, nbytes: int) -> None:
        if self.v2:
            (self.path / "memory.max").write_text(str(nbytes))
            with contextlib.suppress(OSError):  # absent where the kernel has no swap accounting
                (self.path / "memory.swap.max").write_text("0")
            return
        # v1: memory+swap may never be below memory alone, so the order of the writes depends on the move.
        files = [self.path / "memory.limit_in_bytes", self.path / "memory.memsw.limit_in_bytes"]
        if not files[1].exists():
            files.pop()
        for ordered in (files, files[::-1]):
            try:
                for file in ordered:
                    file.write_text(str(nbytes))
                return
            except OSError:
                continue
        raise OSError(f"{self.path}: the memory limit cannot be set")


@dataclass(frozen=True)
class Cpu:
    """The group's own count of its processes' CPU: they differ between cgroup v1 and v2."""

    path: Path
    v2: bool

    def seconds(self) -> float | None:
        """The CPU seconds the group's processes have used since it was made, those that ended included;
        None where the count cannot be read (the group is gone)."""
        try:
            if not self.v2:
                return int((self.path / "cpuacct.usage").read_text()) / 1e9  # nanoseconds
            for line in (self.path / "cpu.stat").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            return None
        return None


@dataclass(frozen=True)
class Budget:
    """A job's memory budget as set: what the zygote held when it began, the allowance, the OOM kills
    counted before it (those after are the job's)."""

    baseline: int
    allowed: int
    oom_kills: int


@dataclass(frozen=True)
class PidsGroup:
    path: Path
    memory: Memory | None = None  # where the memory controller could be had
    cpu: Cpu | None = None  # where the group counts its CPU (cgroup v2, or v1's cpuacct)

    def open_join_fd(self) -> int:
        """A file descriptor the worker writes "0" to, joining the group (with all its threads)."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def allow(self, more: int) -> None:
        """Let the group hold `more` processes and threads beyond those in it now (the zygote's own)."""
        current = int((self.path / "pids.current").read_text())
        (self.path / "pids.max").write_text(str(current + more))

    def joining(self, command: list[str]) -> list[str]:
        """`command`, started inside the v1 memory and cpuacct groups (the v2 group is joined through
        open_join_fd): a shell that moves itself in, then becomes the command, so that no process of it
        is born outside."""
        joined = [
            str(group.path / "cgroup.procs")
            for group in (self.memory, self.cpu)
            if group is not None and group.path != self.path
        ]
        if not joined:
            return command
        moves = " && ".join(f'echo 0 > "${n}"' for n in range(1, len(joined) + 1))
        script = f'{moves} && shift {len(joined)} && exec "$@"'
        return ["/bin/sh", "-c", script, "grader-join", *joined, *command]

    def budget(self, memory_mb: int) -> Budget | None:
        """Let the job's processes, all together, hold `memory_mb` MiB beyond what the zygote holds now;
        None where there is no memory group (each process is then bounded alone, by RLIMIT_AS)."""
        memory = self.memory
        if memory is None:
            return None
        # A zygote still importing torch holds less now than it will once warm, and what it adds would be
        # taken from the hand-in's budget: it is counted as at least what a warm one holds.
        baseline = max(memory.usage, ZYGOTE_BYTES)
        memory.limit(baseline + (memory_mb << 20))
        memory.reset_peak()
        return Budget(baseline, memory_mb << 20, memory.oom_kills)

    def exceeded(self, budget: Budget) -> bool:
        """Whether the kernel ended a process of the group for want of memory since `budget` was set."""
        if self.memory is None:
            return False
        try:
            return self.memory.oom_kills > budget.oom_kills
        except (OSError, ValueError):
            return False

    def held(self, budget: Budget) -> int | None:
        """The most the job's processes held together, as far as the group can tell (at its OOM kill: its
        limit, less the zygote's part); None if unknown."""
        peak = None if self.memory is None else self.memory.peak
        return None if peak is None else max(peak - budget.baseline, 0)

    def remove(self) -> None:
        """Kill everything still in the group, then remove it."""
        if self.memory is not None:
            self.memory.close()
        _remove(self.path)
        for other in (self.memory, self.cpu):
            if other is not None and other.path != self.path:
                _remove(other.path)


def _remove(path: Path) -> None:
    # A group holding groups of its own (a grader run inside another's group, killed with its zygotes'
    # groups still in it) cannot be removed before them: each such stale group cost every later grader's
    # start 5 s of retrying, then stayed.
    with contextlib.suppress(OSError):
        for child in [entry for entry in path.iterdir() if entry.is_dir()]:
            _remove(child)
    deadline = time.monotonic() + 5
    while path.exists() and time.monotonic() < deadline:
        pids = _members(path)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            path.rmdir()  # fails while a killed process has not been reaped yet
            return
        time.sleep(0.01 if pids else 0.05)


def create(limit: int) -> PidsGroup | None:
    """A fresh group allowing `limit` processes, or None where this machine does not let the grader."""
    parent = _parent()
    if parent is None:
        return None
    name = f"{_PREFIX}{os.getpid()}-{next(_counter)}"
    path = parent / name
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return PidsGroup(path, _memory_group(path, name), _cpu_group(path, name))


def _memory_group(path: Path, name: str) -> Memory | None:
    """The memory side of a new group: the group itself under cgroup v2 (where memory is enabled for it),
    else a group of the same name in the v1 memory hierarchy; None where neither can be had."""
    try:
        if (path / "memory.max").is_file():
            return Memory.opened(path, v2=True)
        found = _v1_group("memory", "memory.limit_in_bytes", path, name)
        return None if found is None else Memory.opened(found, v2=False)
    except OSError:
        return None


def _cpu_group(path: Path, name: str) -> Cpu | None:
    """The CPU count of a new group: the group itself under cgroup v2 (cpu.stat's usage is there whatever
    controllers are enabled), else a group of the same name in the v1 cpuacct hierarchy; None where
    neither can be had."""
    if (path / "cpu.stat").is_file() and (path / "cgroup.controllers").is_file():
        return Cpu(path, v2=True)
    found = _v1_group("cpuacct", "cpuacct.usage", path, name)
    return None if found is None else Cpu(found, v2=False)


def _v1_group(controller: str, probe: str, path: Path, name: str) -> Path | None:
    """The group of `name` in `controller`'s v1 hierarchy, made: the pids group itself where the two are
    mounted together; None without such a hierarchy the grader may write."""
    if (path / probe).is_file():
        return path
    parent = _v1_parent(controller, probe)
    if parent is None:
        return None
    try:
        (parent / name).mkdir()
    except OSError:
        return None
    return parent / name


@cache
def _v1_parent(controller: str, probe: str) -> Path | None:
    """Where this process's v1 groups of `controller` go (beside its own, whose file `probe` says the
    controller is there), after tidying stale ones; None without a v1 hierarchy of it."""
    mount = own = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            before, _, after = line.partition(" - ")
            fields, (fstype, _source, options) = before.split(), after.split()[:3]
            if fstype == "cgroup" and controller in options.split(","):
                mount = Path(fields[4])
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                own = path
    if mount is None:
        return None
    parent = mount / (own or "/").lstrip("/")
    if not (parent / probe).is_file() or not os.access(parent, os.W_OK):
        return None
    _remove_stale(parent)
    return parent


@cache
def memory_available() -> bool:
    """Whether the groups made here bound memory too (said in the isolation line)."""
    group = create(1)
    if group is None:
        return False
    try:
        return group.memory is not None and group.budget(256) is not None
    except (OSError, ValueError):
        return False
    finally:
        group.remove()


@cache
def cpu_available() -> bool:
    """Whether the groups made here count their CPU, ended processes included (said in the isolation
    line; without it the grader counts the processes it finds)."""
    group = create(1)
    if group is None:
        return False
    try:
        return group.cpu is not None and group.cpu.seconds() is not None
    finally:
        group.remove()


@cache
def available() -> bool:
    group = create(1)
    if group is None:
        return False
    group.remove()
    return True


@cache
def _parent() -> Path | None:
    """Where this process's groups go: beside it in the pids hierarchy, after tidying stale ones."""
    for parent in _candidates():
        if (parent / "cgroup.procs").is_file() and os.access(parent, os.W_OK):
            _remove_stale(parent)
            return parent
    return None


def _candidates() -> list[Path]:
    mounts: dict[str, Path] = {}  # "v1" or "v2" -> mount point
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            before, _, after = line.partition(" - ")
            fields, (fstype, _source, options) = before.split(), after.split()[:3]
            if fstype == "cgroup" and "pids" in options.split(","):
                mounts["v1"] = Path(fields[4])
            elif fstype == "cgroup2":
                mounts.setdefault("v2", Path(fields[4]))
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(","):
                own["v1"] = path
            elif controllers == "":
                own["v2"] = path
    found = []
    if "v1" in mounts:
        found.append(mounts["v1"] / own.get("v1", "/").lstrip("/"))
    if "v2" in mounts:
        parent = mounts["v2"] / own.get("v2", "/").lstrip("/")
        if _enable_pids(parent):
            found.append(parent)
    return found


def _enable_pids(parent: Path) -> bool:
    try:
        if "pids" not in (parent / "cgroup.controllers").read_text().split():
            return False
        if "pids" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+pids")
    except OSError:
        return False  # not ours to change, or cgroup v2's rule against processes in inner groups
    with contextlib.suppress(OSError):  # memory as well where it may be had: the groups then bound it
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+memory")
    return True


def _members(path: Path) -> list[int]:
    try:
        return [int(pid) for pid in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _remove_stale(parent: Path) -> None:
    """Groups left by graders that were killed before they could remove them."""
    for path in parent.glob(f"{_PREFIX}*-*"):
        owner = path.name[len(_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            PidsGroup(path).remove()
