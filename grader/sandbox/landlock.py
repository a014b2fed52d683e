"""Landlock: the kernel confines a process (and all it starts) to the files and actions it is allowed.

Unprivileged and available inside Docker on Linux 5.13 and later, so it walls a worker in where
bubblewrap cannot run: reads only beneath the interpreter, the grader package and the job's folders,
writes only in its scratch folder; from ABI 4 on no TCP connect or bind at all; from ABI 6 on no signal to
a process outside the worker's own domain and no abstract unix socket outside it. Whatever the ABI, a
Landlocked process can neither ptrace nor read the /proc files of processes outside its domain.

Worker side: stdlib only (ctypes), applied by the zygote's child before student code runs.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass

# x86_64 and aarch64 share these numbers (the syscalls came after the tables were unified).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK = (1 << k for k in range(4, 10))
_MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 10, 1 << 11, 1 << 12
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

READ = _EXECUTE | _READ_FILE | _READ_DIR
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # what a rule on a file may hold


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Confinement:
    """What `confine` enforced: the ABI, and which of its parts hold (for the isolation line)."""

    abi: int
    network: bool
    scoped: bool

    def details(self) -> str:
        """What of it holds, as the isolation line says it after the ABI."""
        parts = ["reads and writes confined"]
        if self.network:
            parts.append("no TCP")
        if self.scoped:
            parts.append("no signals or abstract sockets outside")
        return ", ".join(parts)


def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where it has none."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def handled_fs(version: int) -> int:
    handled = (1 << 13) - 1  # ABI 1: execute up to make_sym
    if version >= 2:
        handled |= _REFER
    if version >= 3:
        handled |= _TRUNCATE
    if version >= 5:
        handled |= _IOCTL_DEV
    return handled


def confine(read: Iterable[str], write: Iterable[str], listed: Iterable[str] = ()) -> Confinement | None:
    """Confine this process (and every process it starts) to reading beneath `read`, reading and
    writing beneath `write`, and listing the folders beneath `listed` (their files stay unreadable but
    where another rule allows them: walls.landlock_rules); no TCP and no signals out where the ABI has
    them. Sets no_new_privs. None where the kernel has no Landlock; OSError if it has one and confining
    fails."""
    version = abi()
    if version <= 0:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    fs = handled_fs(version)
    attr = _RulesetAttr(
        handled_access_fs=fs,
        handled_access_net=(_NET_BIND_TCP | _NET_CONNECT_TCP) if version >= 4 else 0,
        scoped=(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if version >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else (16 if version >= 4 else 8)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise _error("landlock_create_ruleset")
    try:
        for paths, access in ((listed, _READ_DIR), (read, READ & fs), (write, fs)):
            for path in paths:
                _allow(libc, ruleset, path, access)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _error("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise _error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return Confinement(version, network=version >= 4, scoped=version >= 6)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # /lib64 on an arm64 machine, say: nothing there to allow
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _error(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _error(call: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{call}: {os.strerror(number)}")
