"""A worker's processes counted and ended together, with the kernel's cgroup `pids` controller.

Where the grader may create cgroups (as root, cgroup v1 or v2 with the `pids` controller), each worker
gets its own: `pids.max` bounds its processes and threads (a fork bomb meets EAGAIN instead of loading
the machine), and at the end every process in it is killed, daemons that left the session included.
The worker joins by writing to a `cgroup.procs` file the grader opened for it, before student code runs.
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
_counter = itertools.count()


@dataclass(frozen=True)
class PidsGroup:
    path: Path

    def open_join_fd(self) -> int:
        """A file descriptor the worker writes "0" to, joining the group (with all its threads)."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def allow(self, more: int) -> None:
        """Let the group hold `more` processes and threads beyond those in it now (the zygote's own)."""
        current = int((self.path / "pids.current").read_text())
        (self.path / "pids.max").write_text(str(current + more))

    def remove(self) -> None:
        """Kill everything still in the group, then remove it."""
        deadline = time.monotonic() + 5
        while self.path.exists() and time.monotonic() < deadline:
            pids = _members(self.path)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()  # fails while a killed process has not been reaped yet
                return
            time.sleep(0.01 if pids else 0.05)


def create(limit: int) -> PidsGroup | None:
    """A fresh group allowing `limit` processes, or None where this machine does not let the grader."""
    parent = _parent()
    if parent is None:
        return None
    path = parent / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return PidsGroup(path)


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
