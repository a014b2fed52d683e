"""How a worker process is walled in: bubblewrap where it works, the base layer where it does not.

Workers are forked by a warm zygote (warm.py), started with the command built here. With
bubblewrap the zygote and its workers get their own user, PID, network, IPC and UTS namespaces, no
capabilities (bwrap run as root keeps them otherwise, and a submission could unmount what hides the
exercises), a cleared environment, and a root file system holding only the interpreter and its
libraries, the grader package, the current submission (read-only) and a size-capped scratch tmpfs:
exercises, references and other students' files do not exist in there; the zygote is its PID 1. The base
layer (rlimits, own session, clean environment, deadlines, a fresh temporary directory) applies in both
cases. The worker's processes are bounded by a cgroup where the grader may create one (root), else by
RLIMIT_NPROC where the kernel counts it per sandbox (bubblewrap as an ordinary user: root is exempt); the
same cgroup counts their CPU. In both layers a hand-in is one process, held to it by a seccomp filter
(worker/seccomp.py), unless its course allows subprocesses. Of the installed packages a hand-in sees only
its course's (course_view.py), walled by its own mount namespace or by Landlock (walls.py).
"""

from __future__ import annotations

import enum
import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import grader
from grader.outcomes import IsolationLevel, IsolationUsed
from grader.sandbox import cgroups, landlock
from grader.sandbox.worker import seccomp


@dataclass(frozen=True)
class Held:
    """A wall or bound of the isolation line, and its details: a full isolation's score line names the
    wall alone."""

    what: str
    details: str = ""

    def __str__(self) -> str:
        return f"{self.what} ({self.details})" if self.details else self.what


_BASE = Held("base", "subprocess, rlimits, own session, clean environment")
SHM_MB = 64  # the sandbox's /dev/shm, below the smallest memory limit an exercise may set (256 MB)
# The base layer, run as root: each warm slot's workers run as an unprivileged uid of their own, counted
# down from this one (GRADER_SANDBOX_UID, `nobody` by default); "off" keeps the grader's own uid.
_UID_VARIABLE = "GRADER_SANDBOX_UID"
_UID_SLOTS = 64  # uids a machine's graders lease at once: slots of all grader processes together
# One place for the whole machine, whatever TMPDIR each grader has: leases once kept under TMPDIR let two
# graders with different TMPDIRs run workers as the same uid, and each, ending its slot's processes (all
# of that uid's), killed the other's worker mid-trial (seen in CI: a correct hand-in SIGKILLed). Only root
# leases, and only root writes in /run; /tmp is for machines without it.
_LEASES = Path("/run" if Path("/run").is_dir() else "/tmp") / "grader-uids"
_DEVICES_READ = ("/dev/urandom", "/dev/random", "/proc/cpuinfo", "/proc/meminfo", "/sys/devices/system/cpu")
_DEVICES_WRITE = ("/dev/null", "/dev/zero")
_BUBBLEWRAP = Held(
    "bubblewrap", "own PID and network namespaces, no capabilities, only the submission visible"
)
# What makes the course's package list a wall (course_view.py, walls.py), said in the isolation line.
_WALLED = Held("imports walled: of the installed packages only the course's are visible")
_ADVISORY = "imports advisory: undeclared packages refused only inside the hand-in's process"
INSIDE_JOB = "/job"  # where the job folder appears inside the sandbox
_SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")
_PROBE_LIMIT = 8
# Imports grader as the worker does, then forks under RLIMIT_NPROC until refused. The count says whether
# the limit holds for this sandbox alone (a few forks), not at all (all of them: root is exempt), or
# counts processes outside it (none: the user's other processes already exceed it). Run with -S: the
# site packages are not what it tests, and leaving them out took the probe from 65 ms to 41 ms of every
# `grader check`'s critical path (the zygote starts after it). Then whether a process there may make a
# user and mount namespace of its own and bind in it, as a worker does to show only the course's packages
# (walls.mount_view): 1 or 0 after the count.
_PROBE = f"""
import ctypes, os, resource, sys
sys.path.insert(0, sys.argv[1])
import grader
resource.setrlimit(resource.RLIMIT_NPROC, ({_PROBE_LIMIT}, {_PROBE_LIMIT}))
hold, release = os.pipe()
forked = 0
try:
    while forked < {2 * _PROBE_LIMIT}:
        if os.fork() == 0:
            os.close(release)
            os.read(hold, 1)
            os._exit(0)
        forked += 1
except OSError:
    pass
libc = ctypes.CDLL(None, use_errno=True)
views = libc.unshare(0x10000000 | 0x20000) == 0 and libc.mount(b"/usr", b"/usr", None, 4096, None) == 0
print(forked, int(views))
"""


class Walls(enum.Enum):
    """What keeps undeclared packages out of a hand-in's reach (walls.py)."""

    MOUNTS = "mounts"  # bubblewrap: each worker's own mount namespace shows only the course's packages
    LANDLOCK = "landlock"  # the base layer: Landlock lets a worker read only the course's packages
    NONE = "none"  # only the finder in the hand-in's own process (worker/imports.py): advice


class ProcessLimit(enum.Enum):
    """How the worker's count of processes and threads is bounded."""

    CGROUP = "cgroup"  # its own cgroup with pids.max, emptied at the end (needs root)
    RLIMIT = "rlimit"  # RLIMIT_NPROC, counted per user namespace: bubblewrap as an ordinary user
    NONE = "none"


_ONE_PROCESS = Held("no new processes", "seccomp")
ONE_PROCESS = str(_ONE_PROCESS)
_SUBPROCESSES = Held("subprocesses allowed by the course")


@dataclass(frozen=True)
class Isolation:
    level: str  # "bubblewrap" or "base"
    # What walls a hand-in in and bounds it, whatever its course: the layer, processes, memory, CPU.
    held: tuple[Held, ...]
    why: str | None = None  # what is missing, and why, where the layer's isolation is reduced
    process_limit: ProcessLimit = ProcessLimit.NONE
    own_uid: int | None = None  # base layer as root: the first uid workers run as (a slot's own)
    landlock: int = 0  # base layer: the Landlock ABI that confines workers (0: none)
    walls: Walls = Walls.NONE
    seccomp: str | None = None  # why hand-ins cannot be held to one process here; None where they are

    @property
    def reduced(self) -> bool:
        """Less than the full isolation, which the top of every run says."""
        return self.why is not None or self.seccomp is not None or self.walls is Walls.NONE

    @property
    def one_process(self) -> bool:
        """Whether the workers of a course that does not allow subprocesses install the filter."""
        return self.seccomp is None

    @property
    def description(self) -> str:
        """What held for a hand-in of a course that does not allow subprocesses (the default)."""
        return self.used(subprocesses=False).line

    def used(self, subprocesses: bool = False) -> IsolationUsed:
        """What every result states: what held for a hand-in whose course allows subprocesses or not."""
        missing = [] if self.why is None else [self.why]
        if subprocesses:
            processes = _SUBPROCESSES
        elif self.seccomp is None:
            processes = _ONE_PROCESS
        else:
            processes = Held("new processes allowed")
            missing.append(f"no seccomp filter: {self.seccomp}")
        held = (*self.held, processes)
        line = ", ".join(map(str, held))
        if missing:
            line = f"reduced isolation: {line}; {'; '.join(missing)}"
        elif self.walls is Walls.NONE:
            line = f"reduced isolation: {line}"
        else:
            return IsolationUsed(IsolationLevel.FULL, line, ", ".join(h.what for h in held))
        return IsolationUsed(IsolationLevel.REDUCED, line, line)


@dataclass(frozen=True)
class Launch:
    command: list[str]
    env: dict[str, str]
    cwd: Path


@cache
def current() -> Isolation:
    """The isolation this machine offers, probed once per process."""
    cgroup = cgroups.available()
    one_process = seccomp.probe()
    if os.environ.get("GRADER_ISOLATION") == "base":
        return _base(cgroup, one_process, "bubblewrap disabled by GRADER_ISOLATION=base")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return _base(cgroup, one_process, "bubblewrap is not installed (apt install bubblewrap)")
    outcome = _probe(_bwrap_prefix(bwrap, scratch_mb=1)).split()
    if not outcome or not all(part.isdigit() for part in outcome):
        return _base(cgroup, one_process, f"bubblewrap fails here: {' '.join(outcome)}")
    walls = Walls.MOUNTS if outcome[1:] == ["1"] else Walls.NONE
    imports = _WALLED if walls is Walls.MOUNTS else Held(_ADVISORY, "no user namespace inside bubblewrap")
    bounds = (_memory_bound(cgroup), _cpu_bound(cgroup), imports)
    if cgroup:
        held = (_BUBBLEWRAP, Held("processes bounded by a cgroup"), *bounds)
        return Isolation("bubblewrap", held, None, ProcessLimit.CGROUP, walls=walls, seccomp=one_process)
    forked = int(outcome[0])
    if 0 < forked < 2 * _PROBE_LIMIT:
        held = (_BUBBLEWRAP, Held("processes bounded by RLIMIT_NPROC"), *bounds)
        return Isolation("bubblewrap", held, None, ProcessLimit.RLIMIT, walls=walls, seccomp=one_process)
    why = "as root the kernel exempts it" if forked else "the kernel counts processes outside the sandbox"
    why = f"no process limit: {why}, and no cgroup"
    return Isolation("bubblewrap", (_BUBBLEWRAP, *bounds), why, walls=walls, seccomp=one_process)


def _base(cgroup: bool, one_process: str | None, why: str) -> Isolation:
    uid = _own_uid()
    version = landlock.abi()
    held = [
        _BASE,
        Held(f"unprivileged uid {uid} per slot, no_new_privs" if uid is not None else "the grader's own uid"),
    ]
    if version:
        confinement = landlock.Confinement(version, version >= 4, version >= 6)
        held += [Held(f"Landlock v{version}", confinement.details()), _WALLED]
    else:
        # Never a full isolation's (its imports are not walled): kept whole in every line.
        held.append(Held("no Landlock (the kernel has none): files the grader's uid may read are readable"))
        held.append(Held(_ADVISORY))
    # RLIMIT_NPROC outside a user namespace counts all of the user's processes: useless as a bound.
    limit = ProcessLimit.CGROUP if cgroup else ProcessLimit.NONE
    held.append(Held("processes bounded by a cgroup" if cgroup else "no process limit"))
    held += [_memory_bound(cgroup), _cpu_bound(cgroup)]
    walls = Walls.LANDLOCK if version else Walls.NONE
    return Isolation(
        "base",
        tuple(held),
        why,
        limit,
        own_uid=uid,
        landlock=version,
        walls=walls,
        seccomp=one_process,
    )


def _memory_bound(cgroup: bool) -> Held:
    """What bounds a hand-in's memory, said in the isolation line beside its processes' bound.

    Without a memory cgroup each process is bounded alone, by RLIMIT_AS: a hand-in's children could each
    take the exercise's memory_mb. It is not divided among them: address space is not memory (torch maps
    620 MB of it at import, in every process, holding 220 MB), and a share small enough to bound the sum
    of `processes` children would refuse honest hand-ins. The line says which bound held."""
    if cgroup and cgroups.memory_available():
        return Held("memory bounded per hand-in by a cgroup", "all its processes together")
    return Held("memory bounded per process only", "RLIMIT_AS; no memory cgroup")


def _cpu_bound(cgroup: bool) -> Held:
    """How a hand-in's CPU is counted against its deadlines, said in the isolation line.

    Without a cgroup that counts it, the grader adds up the processes it finds: exact for one process,
    threads included, which is all a hand-in may have unless its course allows subprocesses; children
    the kernel reaped itself are missed then (cpu_watch.py)."""
    if cgroup and cgroups.cpu_available():
        return Held("CPU counted by a cgroup", "all its processes, ended ones included")
    return Held("CPU counted per process", "no CPU cgroup")


def _own_uid() -> int | None:
    """The first uid the base layer's workers run as; None where the grader is not root (or was told)."""
    setting = os.environ.get(_UID_VARIABLE, "")
    if os.geteuid() != 0 or setting == "off":
        return None
    if setting.isdigit():
        return int(setting)
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


@dataclass
class UserLease:
    """A uid (with the gid of the same number) that one warm slot's workers run as, held by a lock file
    for the zygote's life: no two slots on the machine, of this grader process or another, share one
    (a worker could then signal, renice or prlimit a classmate's)."""

    uid: int
    gid: int
    _lock: int

    def release(self) -> None:
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def lease_user() -> UserLease | None:
    """A free uid for a slot, or None where workers keep the grader's uid (not root, or told so)."""
    first = current().own_uid
    if first is None:
        return None
    folder = _LEASES
    folder.mkdir(mode=0o700, exist_ok=True)
    status = os.lstat(folder)
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.geteuid() or status.st_mode & 0o077:
        raise OSError(f"{folder}: not a private folder of this user (a link, or another's): remove it")
    for uid in range(first, first - _UID_SLOTS, -1):
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        lock = os.open(folder / f"{uid}.lock", flags, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            continue
        return UserLease(uid, uid, lock)
    raise OSError(f"all {_UID_SLOTS} sandbox uids from {first} down are in use by other graders")


def confinement(slot: Path) -> dict[str, list[str]] | None:
    """What Landlock lets a base-layer worker of `slot` read and write; None where there is no Landlock."""
    if current().landlock == 0:
        return None
    package = str(Path(grader.__file__).resolve().parent)
    prefixes = {
        sys.base_prefix,
        sys.prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent.parent),
    }
    read = [*_SYSTEM_DIRS, *_SYSTEM_FILES, *sorted(prefixes), package, *_DEVICES_READ]
    read += [str(slot / "submission"), str(slot / "support")]
    return {"read": read, "write": [str(slot / "scratch"), *_DEVICES_WRITE]}


def _probe(bwrap_prefix: list[str]) -> str:
    """The probe's fork count, or why it failed."""
    command = [*bwrap_prefix, "--", sys.executable, "-I", "-S", "-c", _PROBE, package_parent()]
    try:
        probe = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False, cwd="/")
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    if probe.returncode != 0:
        return (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
    return probe.stdout.strip()


def package_parent() -> str:
    return str(Path(grader.__file__).resolve().parent.parent)


def launch(slot: Path, python_args: list[str], env: Mapping[str, str], scratch_mb: int) -> Launch:
    """The command that starts a zygote on the slot folder, for the current isolation.

    The slot holds the job's `submission` and `support` folders and its `scratch` folder; under bubblewrap
    the zygote sees it at /job, read-only but for a size-capped scratch tmpfs. `python_args` follow the
    interpreter; the token "{job}" in them and in `env` stands for the slot's path as the zygote sees it.
    """
    isolation = current()
    if isolation.level != "bubblewrap":
        args = [a.replace("{job}", str(slot)) for a in python_args]
        outer_env = {k: v.replace("{job}", str(slot)) for k, v in env.items()}
        return Launch([sys.executable, *args], outer_env, slot / "scratch")
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    command = _bwrap_prefix(bwrap, scratch_mb)
    command += ["--ro-bind", str(slot), INSIDE_JOB]
    command += ["--size", str(scratch_mb << 20), "--tmpfs", f"{INSIDE_JOB}/scratch"]
    command += ["--remount-ro", "/"]  # the rest of the tree: nothing to fill, nothing to plant
    # PID 1 of the sandbox: the processes it forks can neither signal it nor outlive it.
    command += ["--as-pid-1", "--chdir", f"{INSIDE_JOB}/scratch"]
    for key, value in env.items():
        command += ["--setenv", key, value.replace("{job}", INSIDE_JOB)]
    args = [a.replace("{job}", INSIDE_JOB) for a in python_args]
    command += ["--", sys.executable, *args]
    return Launch(command, {"PATH": "/usr/bin:/bin"}, slot)


def _bwrap_prefix(bwrap: str, scratch_mb: int) -> list[str]:
    command = [
        bwrap,
        "--unshare-all",  # user, PID, network, IPC, UTS and cgroup namespaces: no network at all
        "--cap-drop", "ALL",
        "--clearenv",
        "--proc", "/proc",
        "--dev", "/dev",
        # Its own, sized /dev/shm (else a part of /dev that the memory limit does not bound), and its
        # own POSIX message queues, listed there so that each job's can be removed.
        "--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm",
        "--mqueue", "/dev/mqueue",
        "--size", str(scratch_mb << 20), "--tmpfs", "/tmp",
    ]  # fmt: skip
    for directory in _SYSTEM_DIRS:
        command += _mirror(directory)
    for file in _SYSTEM_FILES:
        if os.path.exists(file):
            command += ["--ro-bind", file, file]
    for prefix in sorted({sys.base_prefix, sys.prefix, str(Path(sys.executable).parent.parent)}):
        if not prefix.startswith(_SYSTEM_DIRS):
            command += ["--ro-bind", prefix, prefix]
    package = str(Path(grader.__file__).resolve().parent)
    command += ["--ro-bind", package, package]  # the package alone: not the repository around it
    return command


def _mirror(path: str) -> list[str]:
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.isdir(path):
        return ["--ro-bind", path, path]
    return []
