"""The warm worker: imported once (torch too, at its start or for the first job that needs it), then one
fresh forked worker per submission, inside the sandbox.

The grader (warm.py) starts it under the same isolation a worker gets, in its own cgroup where there is
one. It waits on its control socket for a job (the descriptors of the job's pipes), forks, and the child
runs the worker (worker/loop.py) on them. Then it reports the child's exit status and removes every trace of
the submission before it takes the next one: every process it left (under bubblewrap the zygote is PID 1 of
the sandbox, which its children can neither signal nor outlive), the files in the scratch folders, in
/dev and in /dev/shm, and its System V IPC objects. What it cannot restore, it reports, and exits: the
grader then starts a fresh one.

A job may instead be an exercise's references ("references": true): the child then runs the grader's own
code (zygote_references.py), stays undumpable, and is waited for and cleaned up after like any job.

Grader → zygote, one datagram each: {"type": "job", "id": n, "references": bool} with the job's
descriptors, and {"type": "kill", "id": n}.
Zygote → grader: "warm", then per job "started" (the child's pid), "exit" (its status), "clean".
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import json
import os
import resource
import secrets
import select
import signal
import socket
import stat
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sandbox import credentials, landlock, removal, sched_attr, zygote_references
from grader.sandbox import walls as view_walls
from grader.sandbox.protocol import CLOSED_CHANNEL_EXIT
from grader.sandbox.worker import loop as worker

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_SYS_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
_IPC_RMID = 0
_CLEAN_SECONDS = 5.0
_Identity = tuple[int, int, int]  # inode, mode, device: what tells a replaced /dev entry
# The sandbox's own mount points, read once at start: kept, with the folders that lead to them (the
# grader's virtual environment bound under /tmp, say), when a job's files are removed.
_mounts: frozenset[removal.Identity] = frozenset()
_SYSV_OBJECTS = {"shm": "shmctl", "msg": "msgctl", "sem": "semctl"}
# A job's message holds its view of the installed packages (course_view.py): 3.5 kB for CS231n's
# matplotlib and torch's 37 distributions; room for a course declaring 200 packages.
_MESSAGE_BYTES = 1 << 18
VIEWS = "view"  # warm.VIEWS: the slot's folder of skeletons


def main(config_text: str) -> None:
    config = json.loads(config_text)
    control = socket.socket(fileno=int(config["control_fd"]))
    if config["cgroup_fd"] is not None:
        # Joined once, by the zygote: the workers it forks are born in the group, which bounds their
        # processes and lets what they leave be found and ended.
        os.write(config["cgroup_fd"], b"0")
        os.close(config["cgroup_fd"])
    # kill(-1) ends every process of the sandbox only where the zygote is its PID 1; elsewhere it would
    # reach every process of the user.
    sandboxed = bool(config["pid1"]) and os.getpid() == 1
    # No process of a submission may read or change the zygote's memory (it would reach every later
    # submission): not dumpable, only a process with CAP_SYS_PTRACE may attach, and the sandbox has none.
    _set_dumpable(False)
    if not sandboxed:  # what a job leaves (a daemon) comes back to the zygote, to be reaped and counted
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as PID 1, only signals it handles reach it
    torch = bool(config["torch"])
    worker.prepare(torch)
    if config.get("references") is True:  # a references-only zygote: every fork computes with this code
        zygote_references.prepare()
    drop = config.get("drop")
    user = None if drop is None else (int(drop[0]), int(drop[1]))
    if user is not None:  # once for every job: what the workers import stays readable after the drop
        credentials.keep_imports_reachable(*user)
    # What the zygote holds (torch's many objects) is never garbage: out of the collector's sight, the
    # children's collections neither walk it nor copy the memory pages it lies in.
    gc.freeze()
    global _mounts
    if sandboxed:  # outside a sandbox nothing the zygote empties holds a mount of the grader's
        _mounts = removal.mount_identities()
    dev_before = _dev_entries() if sandboxed else {}
    # What a job must not change for the next ones: the zygote's limits, priority, scheduling, affinity,
    # OOM score, autogroup and folders' modes; a job that did (prlimit on its parent, say) gets the zygote
    # replaced.
    folders = [Path(p) for p in config["clear"]]
    before = _state(folders)
    _send(control, {"type": "warm"})
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(control, _MESSAGE_BYTES, 8)
        except OSError:
            return
        if not data:
            _end_job(None, sandboxed)
            if user is not None:  # and the keys the last job left in its uid's keyrings
                credentials.end_processes_of(*user)
            return  # the grader is gone
        message = json.loads(data)
        if message.get("type") != "job" or len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        job_dir, references = Path(config["job_dir"]), message.get("references") is True
        if message.get("torch") is True and not torch:
            # Before the fork, once: every later worker has it too (the grader knows: warm.Zygote).
            worker.prepare_torch()
            gc.freeze()
            torch = True
        walls = _Walls(config.get("walls", "none"), None if references else message.get("view"))
        confine = config.get("confine")
        rules = _landlock_rules(confine["read"], walls) if confine is not None and walls.landlock else None
        child = _start(control, fds, job_dir, sandboxed, user, confine, references, walls, rules)
        for fd in fds:
            os.close(fd)
        _send(control, {"type": "started", "pid": child})
        returncode = _watch(control, child, message.get("id"), sandboxed)
        if returncode is None:
            return
        _send(control, {"type": "exit", "returncode": returncode})
        left: list[removal.Removal] = []  # what could not be removed and stays on the machine
        problem = _clean(child, sandboxed, folders, dev_before, config["cgroup"], user, before, left)
        problem = problem or _changed(before, _state(folders))
        leftovers = [r.as_message() for r in left]
        _send(control, {"type": "clean", "ok": not problem, "problem": problem, "leftovers": leftovers})
        if problem:
            return


def _start(
    control: socket.socket,
    fds: list[int],
    job_dir: Path,
    sandboxed: bool,
    user: tuple[int, int] | None,
    confine: dict[str, list[str]] | None,
    references: bool,
    walls: _Walls,
    rules: tuple[list[str], list[str]] | None,
) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the child never returns into the zygote's loop
        control.close()
        jobs, results, progress, stdout, stderr = fds
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
        # A session of its own, in both layers: outside a PID namespace its process group is what the
        # grader kills; and the kernel's autogroup (the CPU share of a session's processes, whose nice
        # value any of them may raise by writing /proc/self/autogroup) is the job's alone, not the
        # zygote's, which every later job would inherit.
        os.setsid()
        if walls.mounts:  # the course's packages alone, in a mount namespace of the job's own
            view_walls.mount_view(walls.roots, str(job_dir / VIEWS / walls.digest))
        if confine is not None:  # the rules' paths opened as the zygote's user, before the drop
            own = f"/proc/{os.getpid()}"
            if rules is not None:  # of the installed packages, the course's alone readable
                whole, listed = rules
                landlock.confine([*whole, own], confine["write"], listed)
            else:
                landlock.confine([*confine["read"], own], confine["write"])
        if user is not None:
            credentials.drop(*user)
        # Keys of its own only: a fresh session keyring, and the uid's keyrings emptied of what an earlier
        # job of this slot may have left.
        credentials.join_fresh_session_keyring()
        credentials.clear_user_keyrings()
        if references:  # the grader's own code: an exercise's references (zygote_references.py)
            os.close(progress)
            zygote_references.main(jobs, results)
        else:
            _set_dumpable(True)
            worker.main(job_dir, jobs, results, progress)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except OSError as exc:
        code = CLOSED_CHANNEL_EXIT if exc.errno == errno.EBADF else 1
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                code = code or CLOSED_CHANNEL_EXIT
        os._exit(code)


_RULES: dict[tuple[str, tuple[str, ...]], tuple[list[str], list[str]]] = {}


def _landlock_rules(read: list[str], walls: _Walls) -> tuple[list[str], list[str]]:
    """The Landlock rules of a view (walls.landlock_rules: a walk of the installed packages' folders),
    found once per view by the zygote and inherited by every job's fork, not walked again by each
    base-layer worker. A job adds its own /proc entry."""
    key = (walls.digest, tuple(read))
    if key not in _RULES:
        _RULES[key] = view_walls.landlock_rules(read, walls.roots)
    return _RULES[key]


@dataclass(frozen=True)
class _Walls:
    """How a job's view of the installed packages is walled (isolation.Walls), and the view: a hand-in's
    job always has one where its isolation walls imports; the grader's own references job has none."""

    kind: str  # "mounts", "landlock" or "none"
    view: dict[str, Any] | None

    @property
    def mounts(self) -> bool:
        return self.kind == "mounts" and self.view is not None

    @property
    def landlock(self) -> bool:
        return self.kind == "landlock" and self.view is not None

    @property
    def roots(self) -> list[dict[str, Any]]:
        return list(self.view["roots"]) if self.view is not None else []

    @property
    def digest(self) -> str:
        return str(self.view["digest"]) if self.view is not None else ""


def _watch(control: socket.socket, child: int, job: Any, sandboxed: bool) -> int | None:
    """The child's exit status (negative: the signal that ended it); None when the grader is gone."""
    pidfd = os.pidfd_open(child)
    try:
        while True:
            readable, _, _ = select.select([control.fileno(), pidfd], [], [])
            if pidfd in readable:
                _, status = os.waitpid(child, 0)
                return os.waitstatus_to_exitcode(status)
            data = control.recv(1 << 12)
            if not data:
                _end_job(child, sandboxed)
                return None
            request = json.loads(data)
            if request.get("type") == "kill" and request.get("id") == job:  # not a late one for another job
                _end_job(child, sandboxed)
    finally:
        os.close(pidfd)


def _end_job(child: int | None, sandboxed: bool) -> None:
    with contextlib.suppress(ProcessLookupError):
        if sandboxed:
            os.kill(-1, signal.SIGKILL)  # every process in the sandbox but this one
        elif child is not None:
            os.killpg(child, signal.SIGKILL)


def _clean(
    child: int,
    sandboxed: bool,
    folders: list[Path],
    dev_before: dict[str, _Identity],
    cgroup: str | None,
    user: tuple[int, int] | None,
    before: dict[str, object],
    left: list[removal.Removal],
) -> str:
    """Remove what the submission left; the problem in words when something could not be. What stays on
    the machine's own file systems (the base layer's /dev/shm) is added to `left`; under bubblewrap what
    stays goes with the sandbox, once the zygote that reports it is replaced."""
    problem = _end_processes(child, sandboxed, None if cgroup is None else Path(cgroup) / "cgroup.procs")
    # A process of the job's uid that escaped its group and cgroup, however it did: one search of /proc,
    # and only if something is found, helpers that kill as that uid.
    if user is not None and credentials.alive(user[0]) and not credentials.end_processes_of(*user):
        problem = problem or f"a process of uid {user[0]} could not be ended"
    if user is None:
        credentials.clear_user_keyrings()  # the zygote's own uid's, which the job shared
    # One time bound for all the job's files, within the grader's wait for this answer.
    deadline = time.monotonic() + removal.MAX_SECONDS
    for folder in folders:
        recorded = before.get(f"mode of {folder}")
        if isinstance(recorded, tuple):  # a job that made its scratch folder read-only, say
            with contextlib.suppress(OSError):
                folder.chmod(recorded[0])
        emptied = removal.empty(folder, _bounds(deadline), keep=_mounts, unmount=sandboxed)
        problem = problem or ("" if emptied.complete else emptied.describe())
    if sandboxed:
        problem = problem or _restore_dev(dev_before, deadline) or _remove_ipc_objects()
    elif user is not None:  # the machine's own /dev/shm and IPC objects: only what the job's uid owns
        for shared in ("/dev/shm", "/dev/mqueue"):
            for path in credentials.owned_by(shared, user[0]):
                # Where it cannot all go, what stays is renamed and made root's: no later job of the
                # uid reaches it; the grader reports it.
                aside = f"{removal.LEFTOVER_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
                outcome = removal.remove(path, _bounds(deadline), aside=aside)
                if not outcome.complete:
                    left.append(outcome)
                    problem = problem or outcome.describe()
        problem = problem or _remove_ipc_objects(owner=user[0])
    return problem


def _bounds(deadline: float) -> removal.Bounds:
    return removal.Bounds(seconds=max(deadline - time.monotonic(), 0.0))


_LIMITS = sorted((name, getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_"))


def _state(folders: list[Path]) -> dict[str, object]:
    """What of the zygote a job's processes could change, and every later job would inherit."""
    state: dict[str, object] = {name: resource.getrlimit(number) for name, number in _LIMITS}
    state["priority"] = os.getpriority(os.PRIO_PROCESS, 0)
    state["scheduling"] = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    # All of sched_setattr's: the fair class's slice (sched_runtime), flags, clamps, deadline parameters.
    state["scheduling attributes"] = sched_attr.read()
    state["affinity"] = sorted(os.sched_getaffinity(0))
    if _SYS_IOPRIO_GET is not None:
        state["I/O priority"] = ctypes.CDLL(None).syscall(_SYS_IOPRIO_GET, 1, 0)  # IOPRIO_WHO_PROCESS, self
    with contextlib.suppress(OSError):
        state["OOM score adjustment"] = Path("/proc/self/oom_score_adj").read_text().strip()
    with contextlib.suppress(OSError):  # "/autogroup-N nice K", where the kernel has autogroups
        state["autogroup"] = Path("/proc/self/autogroup").read_text().strip()
    for folder in folders:
        with contextlib.suppress(OSError):
            status = folder.stat()
            state[f"mode of {folder}"] = (stat.S_IMODE(status.st_mode), status.st_uid)
    return state


def _changed(before: dict[str, object], after: dict[str, object]) -> str:
    """The first difference in words; '' when the job changed nothing."""
    for key, value in before.items():
        if after.get(key) != value:
            return f"the zygote's {key} was changed by the job ({value} -> {after.get(key)})"
    return ""


def _end_processes(child: int, sandboxed: bool, members: Path | None) -> str:
    """Under bubblewrap every process but this one; elsewhere the child's process group and, with a
    cgroup, the group's other members (a daemon that left the session)."""
    deadline = time.monotonic() + _CLEAN_SECONDS
    while True:
        _end_job(child, sandboxed)
        left = _end_members(members) if members is not None and not sandboxed else False
        if not _reap() and not left and not (sandboxed and _others_alive()):
            return ""
        if time.monotonic() > deadline:
            return "a process of the submission could not be ended"
        time.sleep(0.002)


def _end_members(members: Path) -> bool:
    """Kill the cgroup's members but this process; whether there were any."""
    try:
        pids = [int(p) for p in members.read_text().split() if int(p) != os.getpid()]
    except OSError:
        return False
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return bool(pids)


def _others_alive() -> bool:
    try:
        os.kill(-1, 0)
    except ProcessLookupError:
        return False
    return True


def _reap() -> bool:
    """Reap every finished child; whether any child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _dev_entries() -> dict[str, _Identity]:
    return {e.name: _identity(Path(e.path)) for e in os.scandir("/dev")}


def _identity(path: Path) -> _Identity:
    status = path.lstat()
    return status.st_ino, status.st_mode, status.st_rdev


def _restore_dev(before: dict[str, _Identity], deadline: float) -> str:
    """/dev is a writable tmpfs in the sandbox: what a submission added goes; what it replaced cannot."""
    for entry in os.scandir("/dev"):
        path = Path(entry.path)
        if entry.name not in before:
            removed = removal.remove(path, _bounds(deadline), keep=_mounts, unmount=True)
            if not removed.complete:
                return removed.describe()
        elif _identity(path) != before[entry.name]:
            return f"{path} was replaced"
    missing = sorted(set(before) - {e.name for e in os.scandir("/dev")})
    return f"/dev/{missing[0]} was removed" if missing else ""


def _remove_ipc_objects(owner: int | None = None) -> str:
    """System V IPC objects outlive the submission: in the sandbox's IPC namespace all of them go; in the
    machine's, those of the job's uid (`owner`)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, control_call in _SYSV_OBJECTS.items():
        call = getattr(libc, control_call)
        for ident in _ipc_ids(kind, owner):
            arguments = (ident, 0, _IPC_RMID, None) if kind == "sem" else (ident, _IPC_RMID, None)
            if call(*arguments) != 0 and ctypes.get_errno() not in (22, 43):  # EINVAL/EIDRM: gone already
                return f"cannot remove System V {kind} object {ident}: {os.strerror(ctypes.get_errno())}"
    return ""


def _ipc_ids(kind: str, owner: int | None) -> list[int]:
    try:
        header, *lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
    except (OSError, ValueError):
        return []
    uid = header.split().index("uid")
    rows = [line.split() for line in lines if line.split()]
    return [int(row[1]) for row in rows if owner is None or int(row[uid]) == owner]


def _set_dumpable(dumpable: bool) -> None:
    _prctl(_PR_SET_DUMPABLE, int(dumpable))


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _send(control: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the grader is gone: the next receive ends the loop
        control.send(json.dumps(message).encode())
