"""The CPU a worker's processes use, counted by the grader from outside.

The worker's own deadline (worker/deadline.py's SIGALRM, which reads `time.process_time()`) is the student's
to switch off: block or ignore the signal, stub the clock, or do the work in a child process or a thread the
alarm never interrupts. The grader therefore counts the CPU of the hand-in as a whole itself: the processes of
the worker's cgroup where it has one (with cgroup v2's `cpu.stat` where the group has it), else every
descendant of the zygote (under bubblewrap the sandbox's processes; in the base layer the job's, whatever
session or process group they moved to, since the zygote is their subreaper). Each process counts with the
children it has reaped (`cutime`/`cstime`), so work done in a child that has ended still counts.

The zygote is in the same set (it is the group's first member), idle while its job runs: what it used
before is taken off by counting from a sample taken when the job starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")  # /proc/<pid>/stat's unit: 100 a second on Linux


@dataclass(frozen=True)
class Source:
    """Where the job's processes are found: its cgroup, or the process they all descend from."""

    group: Path | None
    root: int


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


def _group_usage(group: Path) -> float | None:
    """cgroup v2's own count of the group's CPU (exact, and it keeps what exited processes used)."""
    try:
        text = (group / "cpu.stat").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "usage_usec":
            return int(value) / 1e6
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


def seconds_of(source: Source) -> float:
    """The CPU seconds the processes of `source` have used, their reaped children's included."""
    if source.group is not None:
        usage = _group_usage(source.group)
        if usage is not None:
            return usage
        members = _group_members(source.group)
        if members is not None:
            return sum(found[1] for found in map(_stat_seconds, members) if found is not None)
    return _descendants_seconds(source.root)


class CpuWatch:
    """The CPU a job has used since it started, as sampled; a sample over a limit counts only when the
    next one is over it too (a child reaped between reading it and reading its parent counts twice in
    one sample, never in two)."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._start = seconds_of(source)
        self.last = 0.0

    def sample(self) -> float:
        """The CPU seconds used since the job started."""
        self.last = max(seconds_of(self._source) - self._start, 0.0)
        return self.last
