"""Warm workers: sandboxed zygotes, each forking one worker per submission.

`import torch` costs well over a second; a submission's trials a fraction of that. A zygote (zygote.py)
pays the import once, then serves submissions one at a time: each gets a freshly forked process in the
same sandbox, and nothing of it (no process, no file) is left when the next one starts. A zygote that
cannot say so, misbehaves or dies is discarded and the next submission gets a fresh one.

A zygote imports torch only when a job needs it (`torch=True`: a hand-in that names torch, an exercise's
references), or at its start where the command already knows one will (`grader check` of such a file).
Until then its workers are numpy's alone: torch is out of their view of the installed packages, so a
hand-in graded there cannot reach autograd by any route (sandbox/torch_use.py says which need it).

A pool keeps idle zygotes for reuse; it grows to as many as are in use at once (one per `-j` slot).
With `fresh=True` every zygote serves one submission only: a fresh interpreter per submission, as
before warm workers, kept for comparison (bench/) and for debugging.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from grader.sandbox import cgroups, course_view, credentials, isolation, removal
from grader.sandbox.isolation import ProcessLimit

SCRATCH_MB = 64  # the scratch tmpfs under bubblewrap
VIEWS = "view"  # the slot's folder of the views' skeletons (course_view.stage_skeleton), kept for its life
CLEAN_SECONDS = 10.0  # how long a zygote may take to end a submission's processes and remove its files
_ZYGOTE_TASKS = 64  # the group's limit until the first job sets it: the zygote alone, and its start-up
# The zygote is started by name in a fresh interpreter, where mypy cannot follow it:
# tests/test_structure.py checks that this module exists and defines main().
ZYGOTE_MODULE = "grader.sandbox.zygote"
_BOOT = f"import sys; sys.path.insert(0, sys.argv[2]); from {ZYGOTE_MODULE} import main; main(sys.argv[1])"
_PASSED_ENVIRONMENT = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG", "LC_ALL")
_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "{job}/scratch",
    "TMPDIR": "{job}/scratch",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


# A slot folder is named after the grader process that owns it: one whose owner is dead (killed before it
# could remove its slots, by SIGKILL or the OOM killer) is removed by the next grader that starts one.
# What a removal could not finish within its bounds is renamed to a leftover of the same owner, reported
# once, and retried by the graders that start after that owner is gone.
_SLOT_PREFIX = "grader-slot-"
_LEFTOVER_PREFIX = removal.LEFTOVER_PREFIX
# What a grader's start spends at most on what dead graders left (removal.MAX_ENTRIES is about 2 s of
# disk): never more than that on the critical path of a `grader check`, however much was left.
_START_SECONDS = 2.0
start_up_failures = 0  # errors met while removing dead graders' folders: swallowed, counted, reported
_start_lock = threading.Lock()


@cache
def _remove_dead_slots() -> None:
    """Remove the slot folders, with the hand-ins staged in them, of this user's graders that have died,
    and the leftovers set aside before: bounded, and never fatal (nothing a hand-in left may stop a later
    grader); what stays is renamed out of the way and reported."""
    with _start_lock:  # two slots started at once by two threads: one removal at a time
        _remove_dead_folders()


def _remove_dead_folders() -> None:
    global start_up_failures
    deadline = time.monotonic() + _START_SECONDS
    try:
        folders = [*Path(tempfile.gettempdir()).glob(f"{_SLOT_PREFIX}*-*")]
        folders += Path(tempfile.gettempdir()).glob(f"{_LEFTOVER_PREFIX}*-*")
    except OSError as exc:
        start_up_failures += 1
        removal.note(removal.Removal(tempfile.gettempdir(), stop=removal.Stop.REFUSED, detail=str(exc)))
        return
    for folder in folders:
        try:
            _remove_dead(folder, deadline)
        except Exception as exc:  # never fatal: the grader starts all the same
            start_up_failures += 1
            removal.note(removal.Removal(str(folder), stop=removal.Stop.REFUSED, detail=repr(exc)))


def _remove_dead(folder: Path, deadline: float) -> None:
    slot = folder.name.startswith(_SLOT_PREFIX)
    owned = folder.name[len(_SLOT_PREFIX if slot else _LEFTOVER_PREFIX) :]
    owner = owned.split("-", 1)[0]
    if not owner.isdigit() or Path(f"/proc/{owner}").exists() or folder.lstat().st_uid != os.geteuid():
        return
    bounds = removal.Bounds(seconds=deadline - time.monotonic())
    if bounds.seconds <= 0:
        return  # the next grader's turn
    if slot:
        removal.note(removal.remove(folder, bounds, aside=_LEFTOVER_PREFIX + owned))
    else:
        removal.remove(folder, bounds)  # reported when it was set aside: retried quietly


def _discard_slot(slot: Path) -> None:
    """Remove a slot folder; what cannot go is set aside as a leftover of this grader and reported."""
    removal.note(removal.remove(slot, aside=_LEFTOVER_PREFIX + slot.name[len(_SLOT_PREFIX) :]))


class Zygote:
    """One started zygote and its slot folder (where the grader stages each job's files)."""

    def __init__(self, torch: bool = False, references: bool = False) -> None:
        """`torch`: import it at once, before the first job, which then need not wait for it.
        `references`: it serves references jobs only (a cold check's, whose deferred spreads come one
        exercise at a time): torch and the references' code imported at its start, not by each fork
        (0.18 s of CPU each)."""
        _remove_dead_slots()
        self.references = references
        torch = torch or references
        self.torch_loaded = torch  # whether its forks have torch: imported at its start or for a job
        self.slot = Path(tempfile.mkdtemp(prefix=f"{_SLOT_PREFIX}{os.getpid()}-"))
        self.jobs_served = 0
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile(prefix="grader-zygote-")  # noqa: SIM115 - lives as long as the zygote
        cgroup = isolation.current().process_limit is ProcessLimit.CGROUP
        self.group = cgroups.create(_ZYGOTE_TASKS) if cgroup else None
        join_fd = self.group.open_join_fd() if self.group is not None else None
        self.sandboxed = isolation.current().level == "bubblewrap"
        self.user: isolation.UserLease | None = None
        try:
            for folder in ("scratch", "submission", "support"):
                (self.slot / folder).mkdir()
            if not self.sandboxed:
                self.user = isolation.lease_user()
            if self.user is not None and not credentials.readable_by(
                str(self.slot.parent), self.user.uid, self.user.gid
            ):
                # A temporary folder others cannot pass through (TMPDIR under /root): the uid could not
                # reach its slot, so the workers keep the grader's, Landlock still confining them.
                self.user.release()
                self.user = None
            if self.user is not None:
                # The slot's uid may pass through the slot and read the job's files, and write only in
                # its scratch folder; nothing else of the grader's is readable to it.
                self.slot.chmod(0o711)
                for folder in ("submission", "support"):  # its group alone: not another slot's uid
                    os.chown(self.slot / folder, 0, self.user.gid)
                    (self.slot / folder).chmod(0o750)
                os.chown(self.slot / "scratch", self.user.uid, self.user.gid)
                (self.slot / "scratch").chmod(0o700)
            env = dict(_ENVIRONMENT)
            env.update({k: os.environ[k] for k in _PASSED_ENVIRONMENT if k in os.environ})
            config = {
                "control_fd": theirs.fileno(),
                "cgroup_fd": join_fd,
                # Outside a PID namespace, its member list is how a daemon that left the session is found.
                "cgroup": str(self.group.path) if self.group is not None and not self.sandboxed else None,
                "job_dir": "{job}",
                "pid1": self.sandboxed,
                # Inside the sandbox /tmp, /dev/shm and /dev/mqueue are its own; outside the machine's.
                "clear": ["{job}/scratch", "/tmp", "/dev/shm", "/dev/mqueue"]
                if self.sandboxed
                else ["{job}/scratch"],
                "drop": None if self.user is None else [self.user.uid, self.user.gid],
                "confine": None if self.sandboxed else isolation.confinement(self.slot),
                # How each hand-in job's view of the installed packages is made a wall (walls.py)
                "walls": isolation.current().walls.value,
                "torch": torch,
                "references": references,
            }
            args = ["-I", "-B", "-c", _BOOT, json.dumps(config), isolation.package_parent()]
            start = isolation.launch(self.slot, args, env, SCRATCH_MB)
            self.process = subprocess.Popen(
                self.group.joining(start.command) if self.group is not None else start.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                cwd=start.cwd,
                env=start.env,
                pass_fds=[theirs.fileno()] + ([join_fd] if join_fd is not None else []),
                start_new_session=True,
            )
        except BaseException:
            self._control.close()
            self._log.close()
            if self.group is not None:
                self.group.remove()
            if self.user is not None:
                self.user.release()
            _discard_slot(self.slot)
            raise
        finally:
            theirs.close()
            if join_fd is not None:
                os.close(join_fd)

    def start(
        self,
        fds: list[int],
        processes: int,
        references: bool = False,
        memory_mb: int | None = None,
        view: course_view.View | None = None,
        torch: bool = True,
    ) -> ForkedJob:
        """Hand the zygote a job: it forks the worker as soon as it is warm (the import may still run),
        having imported torch first where the job needs it (`torch`; always for references) and it has
        not yet. A job without torch must have a `view` without it, where the isolation walls imports.

        The worker may have `processes` processes and threads at once, itself included, where a cgroup
        can bound them, and `memory_mb` MiB of memory, all its processes together, where the cgroup has
        the memory controller. `references`: the fork computes an exercise's references, not a
        submission's trials (zygote_references.py). A hand-in's worker sees of the installed packages
        only `view` (its course's; by default a course declaring none), where the isolation walls them.
        """
        walled = not references and isolation.current().walls is not isolation.Walls.NONE
        torch = references or self.torch_for(torch) or (view is not None and view.torch)
        if walled and view is None:
            view = course_view.view_for((), torch=torch)
        self.torch_loaded = self.torch_loaded or torch
        budget = None
        if self.group is not None:
            with contextlib.suppress(OSError):  # a zygote that is gone: the job reads as ended
                self.group.allow(processes)
            if memory_mb is not None:
                with contextlib.suppress(OSError, ValueError):
                    budget = self.group.budget(memory_mb)
        self.jobs_served += 1
        job = ForkedJob(self, self.jobs_served, budget)
        with contextlib.suppress(OSError):  # a zygote gone: the job reads as ended, the zygote is not reused
            message: dict[str, Any] = {"type": "job", "id": job.id, "references": references, "torch": torch}
            if walled and view is not None:
                message["view"] = {"digest": view.digest, **view.message()}
                if self.sandboxed:  # the layout the worker binds the view's entries into
                    course_view.stage_skeleton(view, self.slot / VIEWS)
            socket.send_fds(self._control, [json.dumps(message).encode()], fds)
        return job

    def torch_for(self, wanted: bool) -> bool:
        """Whether a job that `wanted` torch or not gets it: also where the zygote has it already (its
        forks hold it in memory, whatever their view), and where no wall could keep it from them."""
        return wanted or self.torch_loaded or isolation.current().walls is isolation.Walls.NONE

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The zygote's next message; {"type": "gone"} once it has ended, None at the timeout."""
        readable, _, _ = select.select([self._control], [], [], max(timeout, 0.0))
        if not readable:
            return None
        try:
            data = self._control.recv(1 << 12)
        except OSError:
            data = b""
        if not data:
            return {"type": "gone"}
        message: dict[str, Any] = json.loads(data)
        return message

    def tell(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            self._control.send(json.dumps(message).encode())

    def failure_log(self) -> str:
        """What the zygote itself printed (only a failure of the grader's own code prints anything)."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        """End the zygote and everything in its sandbox."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._control.close()
        self._log.close()
        if self.group is not None:
            self.group.remove()
        if self.user is not None:  # its processes died with the zygote, which killed them at each job
            self.user.release()
        _discard_slot(self.slot)


class ForkedJob:
    """The forked worker of one submission, as the collection sees a process: wait for it, kill it."""

    def __init__(self, zygote: Zygote, number: int, budget: cgroups.Budget | None = None) -> None:
        self._zygote = zygote
        self.id = number
        self.budget = budget  # the memory the job's processes may hold together, where a cgroup bounds it
        self.zygote_gone = False
        self.pid: int | None = None  # as the zygote sees it (inside the sandbox's PID namespace)
        self.returncode: int | None = None
        self.clean = False
        self._ended = False  # the exit status is known, or cannot be any more

    def wait(self, timeout: float) -> int | None:
        """The worker's exit status (negative: the signal that ended it), or None if still running."""
        deadline = time.monotonic() + timeout
        while not self._ended:
            message = self._zygote.receive(deadline - time.monotonic())
            if message is None:
                return None
            self._take(message)
        return self.returncode

    def out_of_memory(self) -> bool:
        """Whether the kernel ended a process of the job for passing its memory budget."""
        group = self._zygote.group
        return self.budget is not None and group is not None and group.exceeded(self.budget)

    def memory_held(self) -> int | None:
        """The most the job's processes held together, in bytes, where the cgroup can tell."""
        group = self._zygote.group
        return None if self.budget is None or group is None else group.held(self.budget)

    def kill(self) -> None:
        """End the worker and every process it started."""
        if self._ended:
            return
        self._zygote.tell({"type": "kill", "id": self.id})
        if not self._zygote.sandboxed and self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)  # even if the zygote does not answer any more

    def finish(self) -> bool:
        """Wait for the zygote to have removed every trace of the job; whether it may serve another."""
        deadline = time.monotonic() + CLEAN_SECONDS
        while not self.clean:
            message = self._zygote.receive(deadline - time.monotonic())
            if message is None or message["type"] == "gone":
                return False
            self._take(message)
            if message["type"] == "clean" and not message["ok"]:
                return False
        return True

    def _take(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "started":
            self.pid = int(message["pid"])
        elif kind == "exit":
            self.returncode, self._ended = int(message["returncode"]), True
        elif kind == "clean":
            self.clean = bool(message["ok"])
            for left in message.get("leftovers") or []:  # on the machine's own /dev/shm (base layer)
                outcome = removal.Removal.from_message(left)
                if outcome is not None:
                    removal.note(outcome)
        elif kind == "gone":
            # The sandbox ended with the zygote; its worker was killed with it.
            self.returncode, self._ended, self.zygote_gone = -signal.SIGKILL, True, True


class WorkerPool:
    """Idle zygotes, reused one submission at a time; thread-safe.

    With `limit`, at most that many are in use at once: `acquire` waits for one to be released. Without
    `fresh`, GRADER_FRESH_WORKERS=1 asks for a fresh interpreter per submission.
    """

    def __init__(self, limit: int | None = None, fresh: bool | None = None) -> None:
        self.fresh = os.environ.get("GRADER_FRESH_WORKERS") == "1" if fresh is None else fresh
        self._idle: list[Zygote] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(limit) if limit is not None else None
        self._closed = False
        self._holders: list[Callable[[], None]] = []  # close what holds a zygote of the pool's for long

    @property
    def idle(self) -> tuple[Zygote, ...]:
        with self._lock:
            return tuple(self._idle)

    def prestart(self, count: int, torch: bool = False) -> None:
        """Start zygotes now, up to `count` idle ones, so that their imports overlap the caller's work
        (torch's too, with `torch`)."""
        with self._lock:
            missing = 0 if self._closed else count - len(self._idle)
        for _ in range(missing):
            zygote = Zygote(torch)
            with self._lock:
                self._idle.append(zygote)

    def adopt(self, other: WorkerPool) -> None:
        """Take over the other pool's idle zygotes (those the command's first step started)."""
        with other._lock:
            taken, other._idle = other._idle, []
        with self._lock:
            self._idle.extend(taken)

    def stage_ahead(self, view: course_view.View) -> None:
        """Lay out `view`'s skeleton in each idle sandboxed zygote's slot now, before a job asks for it:
        the first worker of a check paid 0.06-0.1 s for it (and 0.07 s for the view) after the grader's
        imports, beside the zygote's own start."""
        for zygote in self.idle:
            if zygote.sandboxed:
                with contextlib.suppress(OSError):  # the job stages it again, and says what fails
                    course_view.stage_skeleton(view, zygote.slot / VIEWS)

    def acquire(self, torch: bool | None = None, references: bool = False) -> Zygote:
        """An idle zygote, else a new one. `torch`: one whose forks have torch already, or one without
        (False: a torch-free hand-in's worker; any idle one where none is). `references`: one that
        serves references jobs only (a cold check's, beside a torch-free worker's zygote), which no
        other job is given."""
        if self._slots is not None:
            self._slots.acquire()
        try:
            with self._lock:
                kind = [z for z in self._idle if z.references == references]
                matching = [z for z in kind if torch is None or z.torch_loaded == torch]
                chosen = matching[-1] if matching else kind[-1] if kind and not references else None
                if chosen is not None:
                    self._idle.remove(chosen)
                    return chosen
            return Zygote(references=references)
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            raise

    def release(self, zygote: Zygote, job: ForkedJob | None) -> None:
        """Take the zygote back once its job is over and its traces removed; discard it otherwise."""
        try:
            reusable = job is not None and not self.fresh and job.finish() and zygote.process.poll() is None
            for folder in ("submission", "support"):  # staged by the grader, read-only to the job
                reusable = removal.empty(zygote.slot / folder).complete and reusable
            with self._lock:
                if reusable and not self._closed:
                    self._idle.append(zygote)
                    return
            zygote.stop()
        finally:
            if self._slots is not None:
                self._slots.release()

    def hold(self, close: Callable[[], None]) -> None:
        """`close` gives back a zygote held for as long as this process needs it (a references server):
        called when the pool closes, before its idle zygotes stop."""
        with self._lock:
            self._holders.append(close)

    def close(self) -> None:
        with self._lock:
            holders, self._holders = self._holders, []
        for close in holders:
            with contextlib.suppress(Exception):  # the zygote is stopped below all the same
                close()
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for zygote in idle:
            zygote.stop()


@cache
def shared_pool() -> WorkerPool:
    """The pool of this process, closed at its exit."""
    pool = WorkerPool()
    atexit.register(pool.close)
    return pool


def started_shared_pool() -> WorkerPool | None:
    """The shared pool where this process made one (the `grader` command's first step), else None."""
    return shared_pool() if shared_pool.cache_info().currsize else None


def close_shared_pool() -> None:
    """Stop the shared pool's zygotes now, if it was ever made (for a process about to leave at once)."""
    pool = started_shared_pool()
    if pool is not None:
        pool.close()
