"""Who a worker is: an unprivileged uid of its own where the grader runs as root, a keyring of its own.

Worker side (stdlib only). A worker that shares its uid with the zygote or the grader may change their
limits, priority, scheduling and affinity (prlimit, setpriority, sched_setaffinity ask only that the uids
match), so in the base layer, run as root, each warm slot's workers run as an unprivileged uid of that
slot, with no supplementary groups and no_new_privs. The interpreter may live where that uid cannot
read (pyenv under /root, mode 0700): the zygote, still root, enters a mount namespace of its own and
covers the folder the uid cannot pass (/root) with a read-only tmpfs that holds only the interpreter's
folders, bound there at their own paths. The rest of that folder is hidden, the machine is unchanged, and
every path the interpreter knows (modules' __file__, code objects' co_filename, sys.executable) stays
valid: inspect.getsource, linecache, tracebacks and a subprocess of the interpreter work as under
bubblewrap. Where no mount namespace can be made (a container without CAP_SYS_ADMIN), the folders are
opened before the drop and imported through /proc/self/fd instead, and linecache reads a source file it
cannot open at its path through the same descriptors: inspect.getsource and tracebacks of modules
imported before the drop still work (torch.func reads enum's source).

Kernel keys outlive processes: each worker joins a fresh session keyring and empties its uid's user
keyrings before student code runs, and the last job's are emptied when the zygote ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
_KEYCTL_JOIN_SESSION_KEYRING, _KEYCTL_CLEAR = 1, 7
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_END_SECONDS = 5.0


def readable_by(path: str, uid: int, gid: int) -> bool:
    """Whether `uid` (in group `gid` alone) may list and read beneath `path`: every folder on the way
    searchable, the last one readable too."""
    current = os.path.realpath(path)
    parts = [current]
    while current != os.path.dirname(current):
        current = os.path.dirname(current)
        parts.append(current)
    for k, folder in enumerate(parts):
        try:
            status = os.stat(folder)
        except OSError:
            return False
        need = 0o5 if k == 0 else 0o1  # the folder itself read and search; those above it search
        if status.st_uid == uid:
            granted = (status.st_mode >> 6) & 0o7
        elif status.st_gid == gid:
            granted = (status.st_mode >> 3) & 0o7
        else:
            granted = status.st_mode & 0o7
        if granted & need != need:
            return False
    return True


_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


def keep_imports_reachable(uid: int, gid: int) -> None:
    """Make the interpreter's folders (its prefixes, every import path) readable after dropping to `uid`,
    at their own paths where this process may make a mount namespace; else through /proc/self/fd."""
    wanted = [sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(sys.executable))]
    wanted += [entry for entry in sys.path if entry]
    folders: list[str] = []
    for folder in sorted({os.path.realpath(f) for f in wanted if os.path.isdir(f)}):
        if not readable_by(folder, uid, gid) and not any(folder.startswith(f + os.sep) for f in folders):
            folders.append(folder)
    if folders:
        _bind_where_reachable(folders, uid, gid)
        _import_through_descriptors(uid, gid)  # what is still out of reach, if anything


def _blocker(folder: str, uid: int, gid: int) -> str | None:
    """The highest folder above `folder` that `uid` cannot pass; None if only `folder` itself bars it."""
    parts = folder.strip(os.sep).split(os.sep)
    for depth in range(1, len(parts)):  # "/" itself: nothing would work without it
        above = os.sep + os.sep.join(parts[:depth])
        if not _searchable_by(above, uid, gid):
            return above
    return None


def _searchable_by(folder: str, uid: int, gid: int) -> bool:
    status = os.stat(folder)
    shift = 6 if status.st_uid == uid else 3 if status.st_gid == gid else 0
    return bool((status.st_mode >> shift) & 0o1)


def _bind_where_reachable(folders: list[str], uid: int, gid: int) -> None:
    """In a mount namespace of this process's own, cover each folder above `folders` that `uid` cannot
    pass with a read-only tmpfs holding only `folders`, bound at their paths."""
    blockers = {folder: _blocker(folder, uid, gid) for folder in folders}
    bindable = [f for f, blocker in blockers.items() if blocker is not None]
    if not bindable:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        return  # not root, or no mount namespaces here
    # Nothing mounted from here on may reach the machine's own namespace: every mount private first.
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return
    opened = {folder: os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for folder in bindable}
    try:
        covered: list[str] = []
        for folder in bindable:
            blocker = blockers[folder]
            assert blocker is not None
            if blocker not in covered:
                _mount(libc, b"tmpfs", blocker, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=755,size=64k")
                covered.append(blocker)
            os.makedirs(folder, mode=0o755, exist_ok=True)
            _mount(libc, f"/proc/self/fd/{opened[folder]}".encode(), folder, None, _MS_BIND | _MS_REC, None)
        for blocker in covered:  # nothing more to add there: read-only
            flags = _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
            _mount(libc, b"tmpfs", blocker, b"tmpfs", flags, b"mode=755,size=64k")
    finally:
        for fd in opened.values():
            os.close(fd)


def _mount(
    libc: ctypes.CDLL, source: bytes, target: str, kind: bytes | None, flags: int, data: bytes | None
) -> None:
    if libc.mount(source, target.encode(), kind, flags, data) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _import_through_descriptors(uid: int, gid: int) -> None:
    """The import paths `uid` cannot read opened now and named through /proc/self/fd from here on
    (sys.path and the packages' __path__), whatever their modes and their ancestors'."""
    opened: dict[str, str] = {}
    for entry in list(sys.path):
        if entry and os.path.isdir(entry) and not readable_by(entry, uid, gid):
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)  # kept for the process's life: it is its path
            opened[os.path.realpath(entry)] = f"/proc/self/fd/{fd}"

    def moved(path: str) -> str:
        real = os.path.realpath(path)
        for prefix, through in opened.items():
            if real == prefix or real.startswith(prefix + os.sep):
                return through + real[len(prefix) :]
        return path

    if not opened:
        return
    sys.path[:] = [moved(p) if p else p for p in sys.path]
    for module in list(sys.modules.values()):
        paths = getattr(module, "__path__", None)
        if isinstance(paths, list):
            with contextlib.suppress(Exception):
                paths[:] = [moved(p) for p in paths]
    sys.path_importer_cache.clear()
    _sources_through(moved)


def _sources_through(moved: Callable[[str], str]) -> None:
    """linecache, asked for a file it cannot read at its own path (the co_filename of a module imported
    before the drop), reads it through the descriptor and keeps it under the name it was asked for."""
    import linecache

    update = linecache.updatecache

    def updatecache(filename: str, module_globals: Any = None) -> list[str]:
        lines = update(filename, module_globals)
        through = moved(filename) if filename and not lines else filename
        if through != filename:
            found = update(through, None)
            if found:
                linecache.cache[filename] = linecache.cache[through]
                return found
        return lines

    linecache.updatecache = updatecache


def drop(uid: int, gid: int) -> None:
    """Become `uid`:`gid` for good (real, effective and saved ids), with no supplementary groups and
    no_new_privs; still dumpable, so the process may read its own /proc entries."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # a change of uid made it not dumpable
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def join_fresh_session_keyring() -> None:
    """A new anonymous session keyring: keys the code adds to it go when its last process ends."""
    if _SYS_KEYCTL is not None:
        ctypes.CDLL(None, use_errno=True).syscall(_SYS_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None)


def clear_user_keyrings() -> None:
    """Empty this uid's user and user-session keyrings (they outlive every process of the uid)."""
    if _SYS_KEYCTL is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for keyring in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
        libc.syscall(_SYS_KEYCTL, _KEYCTL_CLEAR, keyring)


def end_processes_of(uid: int, gid: int) -> bool:
    """Kill every process of `uid` and empty its keyrings, from helpers running as that uid (kill(-1)
    reaches exactly the processes of its uid); reap what comes back to this process (a subreaper).
    Whether none is left alive."""
    deadline = time.monotonic() + _END_SECONDS
    while True:
        helper = os.fork()
        if helper == 0:
            try:
                drop(uid, gid)
                clear_user_keyrings()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)  # every process of this uid but the helper itself
            finally:
                os._exit(0)
        os.waitpid(helper, 0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not alive(uid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def alive(uid: int) -> bool:
    """Whether a process of `uid` is running (zombies, already dead, do not count)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", "rb") as status:
                if status.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    return True
    return False


def owned_by(folder: str, uid: int) -> list[str]:
    """Entries of `folder` (not below) that belong to `uid`."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    found.append(entry.path)
    return found
