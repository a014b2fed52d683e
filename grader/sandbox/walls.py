"""The view of the installed packages a hand-in gets (course_view.py), made a wall by the zygote's child
before the worker runs: what is not in the view cannot be opened, whichever way the hand-in asks for it
(an import, a path, a `.pyc`, an extension module, pkgutil).

Under bubblewrap, the child enters a user and mount namespace of its own (the sandbox's capabilities
are gone, a new user namespace gives them back over its own mounts only), binds over each folder of
installed packages an empty copy of its layout staged by the grader (the skeleton), binds the view's
entries into it from the real folder, and then drops every capability: it cannot undo the mounts, and a
namespace it makes later inherits them locked (the kernel refuses to unmount, or bind apart, what a more
privileged namespace mounted). In the base layer, Landlock lets the child read only the view's entries
in those folders (their listings stay readable: names, not code).

Worker side: stdlib only (ctypes).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 24, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_LAST = 63  # above the kernel's last capability: dropping one it does not know fails harmlessly
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


Roots = Sequence[Mapping[str, Any]]  # the view's roots as sent: {"path": ..., "entries": [[path, folder]]}


def mount_view(roots: Roots, skeleton: str) -> None:
    """Show this process only the view's entries of each root (bubblewrap). OSError where the kernel
    refuses a namespace or a mount: the job must not run without its wall."""
    libc = ctypes.CDLL(None, use_errno=True)
    present = [(i, r) for i, r in enumerate(roots) if os.path.isdir(r["path"])]
    uid, gid = os.geteuid(), os.getegid()
    _call(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
    _map_ids(uid, gid)
    _mount(libc, "none", "/", _MS_REC | _MS_PRIVATE)
    # The real folders, opened in the new namespace (a bind's source must be a mount of the caller's)
    # before anything covers them: the entries are bound from there.
    opened = {i: os.open(r["path"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for i, r in present}
    try:
        for index, root in present:
            _mount(libc, os.path.join(skeleton, str(index)), root["path"], _MS_BIND)
            for relative, _folder in root["entries"]:
                source = f"/proc/self/fd/{opened[index]}/{relative}"
                _mount(libc, source, os.path.join(root["path"], relative), _MS_BIND | _MS_REC)
    finally:
        for fd in opened.values():
            os.close(fd)
    _drop_capabilities(libc)


def _map_ids(uid: int, gid: int) -> None:
    """Keep the process's own ids inside the new user namespace where the kernel lets it: it refuses
    mapping root (uid 0) without CAP_SETFCAP, which the sandbox dropped; root's processes then show
    uid 65534 there (files keep their owners on disk, and the scratch folder stays writable)."""
    if uid == 0:
        return
    with open("/proc/self/setgroups", "w") as setgroups:
        setgroups.write("deny")
    with open("/proc/self/uid_map", "w") as uid_map:
        uid_map.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as gid_map:
        gid_map.write(f"{gid} {gid} 1")


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability left, none to gain: the mounts above stay as they are."""
    for capability in range(_CAP_LAST + 1):
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _call(libc.capset(ctypes.byref(header), data), "capset")
    _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def landlock_rules(trees: Iterable[str], roots: Roots) -> tuple[list[str], list[str]]:
    """Landlock's read rules for the view (base layer): the paths readable whole, and the folders only
    listable. `trees` are what the worker reads besides (the interpreter's prefixes, system folders,
    the job's); a tree holding a root is readable whole but for that root, whose view's entries alone
    are."""
    places = {os.path.realpath(r["path"]) for r in roots}
    whole: list[str] = []
    listed: list[str] = []

    def visit(path: str) -> None:
        if path in places:
            return
        inside = [p for p in places if p.startswith(path.rstrip(os.sep) + os.sep)]
        if not inside:
            whole.append(path)
            return
        listed.append(path)
        with os.scandir(path) as children:
            for child in children:
                if not child.is_symlink():  # reached through its target's rules
                    visit(child.path)

    for tree in dict.fromkeys(os.path.realpath(t) for t in trees):
        if os.path.lexists(tree):
            visit(tree)
    for root in roots:
        path = os.path.realpath(root["path"])
        listed.append(path)
        whole += [os.path.join(path, relative) for relative, _folder in root["entries"]]
    return list(dict.fromkeys(whole)), list(dict.fromkeys(listed))  # /lib is /usr/lib: once


def _mount(libc: ctypes.CDLL, source: str, target: str, flags: int) -> None:
    if libc.mount(source.encode(), target.encode(), None, flags, None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _call(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
