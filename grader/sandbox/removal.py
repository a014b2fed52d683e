"""Removing what a hand-in may have written: iterative, bounded, never following a link, never fatal.

A hand-in may leave anything where it may write (its scratch folder, and under bubblewrap the sandbox's
/tmp, /dev/shm and /dev/mqueue): a chain of 3,000 folders (shutil.rmtree recursed into RecursionError,
the class run ended with exit 3, and its slot folder made every later grader on the machine crash at
start), 200,000 files, folders chmod 000, files made immutable, FIFOs, links to the grader's own folders,
names that are not UTF-8. Everything the grader removes that a hand-in could have written goes through
here: the zygote after each job (zygote.py) and the grader for its slot folders, their staged files and
the slots of graders that died (warm.py).

How: one directory descriptor at a time (os.open with O_NOFOLLOW | O_DIRECTORY, os.scandir on the
descriptor, unlink and rmdir relative to it), never a path a link could redirect; back up through ".."
only to the folder recorded on the way down (its device and inode), so no recursion and no descriptor per
level. A link, FIFO, socket or device is unlinked, never opened. A folder the hand-in made unreadable or
unwritable is its owner's (or root's) to open up again (chmod through an O_PATH descriptor); immutable and
append-only attributes are cleared where the remover may (root: FS_IOC_SETFLAGS; best effort). A mount
point (another device, or another mount's id) is never entered nor removed: the caller's own mounts are
kept silently, and any other is unmounted only where the caller says the mount namespace is the sandbox's
own (`unmount`), else left and reported. Bounded by entries, depth and time (`Bounds`): what is left when
a bound is reached stays, and `remove` can rename it out of the way (`aside`) and make it the remover's
alone. Nothing here raises: the outcome says what is left and why (`Removal`), and `note` keeps it for the
command to report once (cli.py). Worker side: stdlib only (the zygote imports it).
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# Unlinking 200,000 empty files took 3.8 s on ext4 (19 µs each) and 1.9 s on tmpfs on the 2-core test
# machine (2026-12); this walk removed 200,000 names (hard links, no inode freed) in 1.8 s on ext4 and
# 1.2 s on tmpfs (bench/removal_cost.py): 100,000 entries is at most about 2 s of disk. No folder a
# course makes comes near it.
MAX_ENTRIES = 100_000
# Deeper than any path the kernel resolves (PATH_MAX, 4096 bytes, holds at most 2,048 levels); a tree
# built deeper, one descriptor at a time, is cut here. A 3,000-level chain (within) took 0.33 s to remove
# on ext4, 0.12 s on tmpfs.
MAX_DEPTH = 4096
# The zygote must answer within warm.CLEAN_SECONDS (10 s), after ending the job's processes (up to 5 s).
MAX_SECONDS = 3.0
Identity = tuple[int, int]  # device, inode: what tells a folder from the one it was replaced by
# What could not be removed is renamed to this and the remover's pid (then a token): a later grader
# retries once that process is gone (warm.py).
LEFTOVER_PREFIX = "grader-leftover-"

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS = 0x80086601, 0x40086602  # <linux/fs.h>, the same on x86_64 and arm64
_FS_IMMUTABLE_FL, _FS_APPEND_FL = 0x10, 0x20
_MNT_DETACH = 2
_RMDIR_ATTEMPTS = 3  # a folder still not empty after this many passes is being written to: left
_NOTED_AT_MOST = 100  # leftovers kept for the report: a command's, not a growing list


class Stop(enum.Enum):
    """Why a removal left something."""

    ENTRIES = "more entries than the bound"
    DEPTH = "folders nested deeper than the bound"
    TIME = "longer to remove than the bound"
    MOUNT = "a mount point"
    REFUSED = "the kernel refused"
    CHANGED = "changed while it was being removed"


@dataclass(frozen=True)
class Bounds:
    entries: int = MAX_ENTRIES
    depth: int = MAX_DEPTH
    seconds: float = MAX_SECONDS


@dataclass(frozen=True)
class Removal:
    """What a removal did: entries removed, and when something is left, why and where it now lies."""

    path: str
    removed: int = 0
    stop: Stop | None = None
    detail: str = ""  # the first refusal, in words ("cannot remove x: Operation not permitted")
    moved_to: str | None = None  # where what is left was renamed to (`aside`)

    @property
    def complete(self) -> bool:
        return self.stop is None

    def describe(self) -> str:
        """In words, for the person who may have to remove it by hand."""
        if self.stop is None:
            return f"{self.path} removed"
        where = self.moved_to or self.path
        why = self.stop.value + (f" ({self.detail})" if self.detail else "")
        moved = f", moved to {self.moved_to}" if self.moved_to else ""
        return (
            f"what a hand-in left in {self.path} could not all be removed: {why}; {self.removed:,} entries "
            f"removed, the rest left{moved}. Nothing depends on it; remove it by hand (rm -rf {where})"
        )

    def as_message(self) -> dict[str, Any]:
        """As the zygote sends it to the grader."""
        stop = None if self.stop is None else self.stop.name
        return {"path": self.path, "removed": self.removed, "stop": stop, "detail": self.detail,
                "moved_to": self.moved_to}  # fmt: skip

    @classmethod
    def from_message(cls, message: Any) -> Removal | None:
        """A removal as the zygote sent it; None when it is not one."""
        try:
            stop = None if message["stop"] is None else Stop[message["stop"]]
            moved = message["moved_to"]
            return cls(str(message["path"]), int(message["removed"]), stop, str(message["detail"]),
                       None if moved is None else str(moved))  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


def remove(
    path: Path | str,
    bounds: Bounds = Bounds(),
    *,
    aside: str | None = None,
    keep: frozenset[Identity] = frozenset(),
    unmount: bool = False,
) -> Removal:
    """Remove `path` (a link itself, never what it points to) and everything below it.

    Where something is left and `aside` names a new name beside it, what is left is renamed to it and made
    the remover's alone (its owner, mode 0700), so that no later job can reach it. `keep`: mount points
    (device, inode) that stay, silently, with the folders that lead to them; `unmount`: other mount points
    are detached (the sandbox's own mount namespace only)."""
    path = Path(path)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return Removal(str(path))
    except OSError as exc:
        return Removal(str(path), stop=Stop.REFUSED, detail=f"cannot open {path.parent}: {exc.strerror}")
    try:
        walk = _Walk(str(path), bounds, keep, unmount)
        walk.top(parent, path.name)
        outcome = walk.outcome()
        if outcome.stop is not None and aside is not None:
            outcome = _set_aside(parent, path, aside, outcome)
        return outcome
    except Exception as exc:  # never fatal: the grader goes on, and the report says what is left
        return Removal(str(path), stop=Stop.REFUSED, detail=f"{type(exc).__name__}: {exc}")
    finally:
        os.close(parent)


def empty(
    folder: Path | str,
    bounds: Bounds = Bounds(),
    *,
    keep: frozenset[Identity] = frozenset(),
    unmount: bool = False,
) -> Removal:
    """Remove everything in `folder`, which stays (see `remove` for `keep` and `unmount`)."""
    walk = _Walk(str(folder), bounds, keep, unmount)
    try:
        fd = _open_up_path(folder)
    except FileNotFoundError:
        return Removal(str(folder))
    except OSError as exc:
        return Removal(str(folder), stop=Stop.REFUSED, detail=f"cannot open {folder}: {exc.strerror}")
    try:
        walk.root(fd)
        return walk.outcome()
    except Exception as exc:
        return Removal(str(folder), walk.removed, Stop.REFUSED, f"{type(exc).__name__}: {exc}")
    finally:
        os.close(fd)


def mount_identities() -> frozenset[Identity]:
    """The mount points this process sees now, as (device, inode) of what is mounted there."""
    found = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if len(fields) > 4:
                # mountinfo escapes space, tab, newline and backslash as octal (\040)
                point = fields[4].encode().decode("unicode_escape").encode("latin-1")
                with contextlib.suppress(OSError):
                    status = os.lstat(point)
                    found.add((status.st_dev, status.st_ino))
    return frozenset(found)


_noted: list[Removal] = []
_noted_lock = threading.Lock()


def note(outcome: Removal) -> None:
    """Keep an incomplete removal for the command to report, once (take_noted)."""
    if outcome.complete:
        return
    with _noted_lock:
        if len(_noted) < _NOTED_AT_MOST:
            _noted.append(outcome)


def take_noted() -> list[Removal]:
    """The incomplete removals noted since the last call."""
    with _noted_lock:
        taken = list(_noted)
        _noted.clear()
    return taken


class _Bounded(Exception):
    """A bound was reached: the walk stops where it is."""


@dataclass
class _Frame:
    """A folder on the way down: its name in its parent, what it is, what is left to do in it."""

    name: str
    identity: Identity
    folders: list[str] = field(default_factory=list)  # sub-folders still to enter
    left: set[str] = field(default_factory=set)  # entries that stay (kept, refused, bounded)
    passes: dict[str, int] = field(default_factory=dict)  # sub-folder -> times entered


class _Walk:
    """One removal's state: its bounds, what it removed, the first reason something stays."""

    def __init__(self, path: str, bounds: Bounds, keep: frozenset[Identity], unmount: bool) -> None:
        self.path = path
        self.bounds = bounds
        self.keep = keep
        self.unmount = unmount
        self.deadline = time.monotonic() + bounds.seconds
        self.seen = 0
        self.removed = 0
        self.stop: Stop | None = None
        self.detail = ""
        self.device = -1
        self.mount_id: int | None = None

    def outcome(self) -> Removal:
        return Removal(self.path, self.removed, self.stop, self.detail)

    def fail(self, stop: Stop, detail: str = "") -> None:
        if self.stop is None:
            self.stop, self.detail = stop, detail

    def top(self, parent: int, name: str) -> None:
        """Remove the entry `name` of the folder open at `parent`, and all below it."""
        try:
            status = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if (status.st_dev, status.st_ino) in self.keep:
            return
        if status.st_dev != os.fstat(parent).st_dev:
            self.fail(Stop.MOUNT, f"{self.path} is one")
            return
        if not stat.S_ISDIR(status.st_mode):
            self._unlink(parent, name, status, self.path)
            return
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=parent)  # an empty folder: nothing to walk
            self.removed += 1
            return
        fd = self._open_folder(parent, name, self.path)
        if fd is None:
            return
        try:
            if _mount_id(fd) != _mount_id(parent):
                self.fail(Stop.MOUNT, f"{self.path} is one")
                return
            self.root(fd)
        finally:
            os.close(fd)
        if self.stop is None:
            self._unlink(parent, name, status, self.path)

    def root(self, fd: int) -> None:
        """Remove everything below the folder open at `fd`; what stays is in the outcome."""
        status = os.fstat(fd)
        self.device, self.mount_id = status.st_dev, _mount_id(fd)
        _open_up(fd, status)
        try:
            self._walk(fd, status)
        except _Bounded:
            pass
        except OSError as exc:  # ".." that cannot be opened, say: what is left stays, and is reported
            self.fail(Stop.REFUSED, f"{exc.strerror or exc}")

    def _walk(self, top: int, status: os.stat_result) -> None:
        stack = [_Frame("", (status.st_dev, status.st_ino))]
        fd = os.dup(top)
        try:
            self._scan(fd, stack[-1])
            while True:
                frame = stack[-1]
                if frame.folders:
                    name = frame.folders.pop()
                    child = self._enter(fd, frame, name, len(stack))
                    if child is not None:
                        child_fd, child_frame = child
                        os.close(fd)
                        fd = child_fd
                        stack.append(child_frame)
                        self._scan(fd, child_frame)
                    continue
                if len(stack) == 1:
                    return
                stack.pop()
                parent = os.open("..", _DIRECTORY, dir_fd=fd)
                parent_status = os.fstat(parent)
                os.close(fd)
                fd = parent
                if (parent_status.st_dev, parent_status.st_ino) != stack[-1].identity:
                    self.fail(Stop.CHANGED, f"{frame.name}'s parent is not the folder it was")
                    return
                self._leave(fd, stack[-1], frame)
        finally:
            os.close(fd)

    def _scan(self, fd: int, frame: _Frame) -> None:
        """Unlink what is not a folder; note the folders to enter (an empty one is removed at once)."""
        with os.scandir(fd) as entries:
            for entry in entries:
                name = entry.name
                if name in frame.left:
                    continue
                self._tick()
                try:
                    status = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if status.st_dev != self.device or (status.st_dev, status.st_ino) in self.keep:
                    self._mount(fd, frame, name, status)
                elif not stat.S_ISDIR(status.st_mode):
                    if not self._unlink(fd, name, status, name):
                        frame.left.add(name)
                else:
                    try:
                        os.rmdir(name, dir_fd=fd)
                        self.removed += 1
                    except OSError:
                        frame.folders.append(name)

    def _enter(self, fd: int, frame: _Frame, name: str, depth: int) -> tuple[int, _Frame] | None:
        if depth >= self.bounds.depth:
            self.fail(Stop.DEPTH, f"{self.bounds.depth} levels")
            frame.left.add(name)
            return None
        child = self._open_folder(fd, name, name)
        if child is None:
            frame.left.add(name)
            return None
        status = os.fstat(child)
        if status.st_dev != self.device or _mount_id(child) != self.mount_id:
            os.close(child)
            self._mount(fd, frame, name, status)
            return None
        frame.passes[name] = frame.passes.get(name, 0) + 1
        _open_up(child, status)
        return child, _Frame(name, (status.st_dev, status.st_ino))

    def _leave(self, fd: int, parent: _Frame, done: _Frame) -> None:
        """Back in `parent` from the folder `done`: remove it, unless something in it stays."""
        if done.left:
            parent.left.add(done.name)
            return
        try:
            os.rmdir(done.name, dir_fd=fd)
            self.removed += 1
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno == errno.ENOTEMPTY and parent.passes.get(done.name, 0) < _RMDIR_ATTEMPTS:
                parent.folders.append(done.name)  # written to meanwhile: once more
                return
            self.fail(Stop.CHANGED if exc.errno == errno.ENOTEMPTY else Stop.REFUSED,
                      f"cannot remove {done.name!r}: {exc.strerror}")  # fmt: skip
            parent.left.add(done.name)

    def _mount(self, fd: int, frame: _Frame, name: str, status: os.stat_result) -> None:
        """A mount point: the caller's own stays; another is detached where allowed, else left."""
        frame.left.add(name)
        if (status.st_dev, status.st_ino) in self.keep:
            return
        if self.unmount and _detach(fd, name):
            frame.left.discard(name)
            below = os.stat(name, dir_fd=fd, follow_symlinks=False)  # what the mount covered
            if stat.S_ISDIR(below.st_mode):
                frame.folders.append(name)
            elif not self._unlink(fd, name, below, name):
                frame.left.add(name)
            return
        self.fail(Stop.MOUNT, f"{name!r}")

    def _unlink(self, fd: int, name: str, status: os.stat_result, shown: str) -> bool:
        """Remove one entry (an empty folder, or anything not a folder); whether it is gone."""
        folder = stat.S_ISDIR(status.st_mode)
        for attempt in range(2):
            try:
                if folder:
                    os.rmdir(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
                self.removed += 1
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno == errno.EBUSY:
                    self.fail(Stop.MOUNT, f"{shown!r}")
                    return False
                if attempt == 0 and exc.errno in (errno.EACCES, errno.EPERM):
                    _loosen(fd, name, status)
                    continue
                self.fail(Stop.REFUSED, f"cannot remove {shown!r}: {exc.strerror}")
        return False

    def _open_folder(self, fd: int, name: str, shown: str) -> int | None:
        try:
            return _open_up_path(name, fd)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP or ENOTDIR: a link or a file now where a folder was
            refused = exc.errno in (errno.EACCES, errno.EPERM)
            self.fail(Stop.REFUSED if refused else Stop.CHANGED, f"cannot open {shown!r}: {exc.strerror}")
            return None

    def _tick(self) -> None:
        self.seen += 1
        if self.seen > self.bounds.entries:
            self.fail(Stop.ENTRIES, f"{self.bounds.entries:,} entries")
            raise _Bounded
        if time.monotonic() > self.deadline:
            self.fail(Stop.TIME, f"{self.bounds.seconds:g} s")
            raise _Bounded


def _open_up_path(path: Path | str, parent: int | None = None) -> int:
    """The folder at `path` opened; one made unreadable (chmod 000) is still its owner's to open up,
    through a descriptor that cannot be a link's."""
    try:
        return os.open(path, _DIRECTORY, dir_fd=parent)
    except PermissionError:
        handle = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
    return os.open(path, _DIRECTORY, dir_fd=parent)


def _open_up(fd: int, status: os.stat_result) -> None:
    """A folder its owner may list, enter and write in again (a hand-in's chmod 500 or 000)."""
    if status.st_mode & 0o700 != 0o700:
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(status.st_mode) | 0o700)


def _loosen(fd: int, name: str, status: os.stat_result) -> None:
    """After a refusal: the folder writable again, and the immutable and append-only attributes of the
    folder and of the entry cleared where the remover may (root); each step best effort."""
    _open_up(fd, os.fstat(fd))
    _clear_attributes(fd)
    if stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode):  # never open a FIFO or a device
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        with contextlib.suppress(OSError):
            entry = os.open(name, flags, dir_fd=fd)
            try:
                _clear_attributes(entry)
            finally:
                os.close(entry)


def _clear_attributes(fd: int) -> None:
    with contextlib.suppress(OSError):
        buffer = bytearray(4)  # the kernel reads and writes an int, whatever the ioctl's number says
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buffer)
        flags = int.from_bytes(buffer, sys.byteorder)
        if flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
            cleared = flags & ~(_FS_IMMUTABLE_FL | _FS_APPEND_FL)
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, bytearray(cleared.to_bytes(4, sys.byteorder)))


def _mount_id(fd: int) -> int | None:
    """The id of the mount `fd` lies in (a bind mount of the same file system has its own)."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as info:
            for line in info:
                if line.startswith(b"mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _detach(fd: int, name: str) -> bool:
    import ctypes  # only here: the sandbox's own mount namespace, which no job can have mounted in

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.umount2(os.fsencode(f"/proc/self/fd/{fd}/{name}"), _MNT_DETACH) == 0)


def _set_aside(parent: int, path: Path, aside: str, outcome: Removal) -> Removal:
    """Rename what is left to `aside` beside it, and make it the remover's alone."""
    try:
        os.rename(path.name, aside, src_dir_fd=parent, dst_dir_fd=parent)
    except FileNotFoundError:
        return outcome
    except OSError as exc:
        return replace(outcome, detail=f"{outcome.detail}; not moved aside: {exc.strerror}".lstrip("; "))
    with contextlib.suppress(OSError):
        if os.geteuid() == 0:
            os.chown(aside, 0, 0, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISDIR(os.stat(aside, dir_fd=parent, follow_symlinks=False).st_mode):
            os.chmod(aside, 0o700, dir_fd=parent)
    return replace(outcome, moved_to=str(path.parent / aside))
