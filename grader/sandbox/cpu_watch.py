"""The CPU a worker's processes use, counted by the grader from outside.

The worker's own deadline (worker/deadline.py's SIGALRM, which reads `time.process_time()`) is the student's
to switch off: block or ignore the signal, stub the clock, or do the work in a child process or a thread the
alarm never interrupts. The grader therefore counts the CPU of the hand-in as a whole itself, from the
kernel's own count where it has one: the worker's cgroup (cgroup v2's `cpu.stat`, v1's `cpuacct.usage`),
which keeps what every process of the group used, ended ones included, however they ended (cgroups.py).

Without such a group, it adds up the processes it finds: the members of the worker's pids group, or every
descendant of the zygote (under bubblewrap the sandbox's processes; in the base layer the job's, whatever
session or process group they moved to, since the zygote is their subreaper), each with the children it
has reaped (`cutime`/`cstime`). That count misses children the kernel reaped itself (`SIGCHLD` ignored),
and a child's CPU between its last sample and its end; it is exact for one process, threads included,
which is all a hand-in may have where its course does not allow subprocesses (worker/seccomp.py), and
each process it could make has the worker's RLIMIT_CPU.

The zygote is in the same set (it is the group's first member), idle while its job runs: what it used
before is taken off by counting from a sample taken when the job starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox import cgroups

_TICKS = os.sysconf("SC_CLK_TCK")  # /proc/<pid>/stat's unit: 100 a second on Linux


@dataclass(frozen=True)
class Source:
    """Where the job's CPU is counted: its cgroup's own count; else the processes of its cgroup, or of
    the process they all descend from."""

    group: Path | None
    root: int
    counter: cgroups.Cpu | None = None

    @classmethod
    def of(cls, group: cgroups.PidsGroup | None, root: int) -> Source:
        if group is None:
            return cls(None, root)
        return cls(group.path, root, group.cpu)


def _stat_seconds(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields are those after its last ')'.
    fields = text[text.rfind(b")") + 2 :].split()
    if len(fields) < 15:
        return None
    # fields[1]: ppid; [11..14]: utime, stime, cutime, cstime (proc(5), counted from 1 after the name: 14-17)
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICKS


def _group_members(group: Path) -> list[str] | None:
    try:
        return (group / "cgroup.procs").read_text().split()
    except OSError:
        return None


def _descendants_seconds(root: int) -> float:
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat_seconds(entry)
            if found is not None:
                parents[int(entry)], seconds[int(entry)] = found
    total = 0.0
    for pid, used in seconds.items():
        walk, hops = pid, 0
        while walk > 1 and walk != root and hops < 64:  # a chain longer than 64 is not the sandbox's
            walk, hops = parents.get(walk, 0), hops + 1
        if walk == root:
            total += used
    return total


def _found_seconds(source: Source) -> float:
    """The CPU seconds of the processes of `source` found now, their reaped children's included."""
    if source.group is not None:
        members = _group_members(source.group)
        if members is not None:
            return sum(found[1] for found in map(_stat_seconds, members) if found is not None)
    return _descendants_seconds(source.root)


def seconds_of(source: Source) -> float:
    """The CPU seconds the processes of `source` have used: the group's count where it reads, else those
    of the processes found (their reaped children's included)."""
    counted = None if source.counter is None else source.counter.seconds()
    return counted if counted is not None else _found_seconds(source)


class CpuWatch:
    """The CPU a job has used since it started, as sampled; a sample over a limit counts only when the
    next one is over it too (where processes are added up, a child reaped between reading it and reading
    its parent counts twice in one sample, never in two).

    One way of counting for the whole job, chosen at its start: the group's count where it reads then
    (a count that stops reading, its group gone with its zygote, stays where it was), else the
    processes found."""

    def __init__(self, source: Source) -> None:
        self._source = source
        counted = None if source.counter is None else source.counter.seconds()
        # The group's count, where it reads now: the job's whole count comes from it.
        self.counter = source.counter if counted is not None else None
        self._start = counted if counted is not None else _found_seconds(source)
        self._total = self._start
        self.last = 0.0

    def sample(self) -> float:
        """The CPU seconds used since the job started."""
        if self.counter is not None:
            counted = self.counter.seconds()
            self._total = self._total if counted is None else counted
        else:
            self._total = _found_seconds(self._source)
        self.last = max(self._total - self._start, 0.0)
        return self.last
