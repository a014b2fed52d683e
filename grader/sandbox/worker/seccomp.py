"""One process per hand-in: a seccomp filter that refuses every way of making a new process or running
another program, installed by the worker before the hand-in is imported.

A hook in the worker's own Python (a wrapped os.fork) is advice: the hand-in calls what it wraps from
below, or forks from C. The kernel's filter is not: it holds for every thread of the process (TSYNC),
cannot be removed, and is inherited by anything it could still make. What it refuses:

- fork and vfork, and clone without CLONE_THREAD (a new process; posix_spawn, subprocess and
  multiprocessing all come to one of these): EPERM, which Python raises as PermissionError;
- execve and execveat (a fresh interpreter, `sys.executable`, that never got the worker's walls): EPERM;
- clone3, whose flags sit in memory a filter cannot read: ENOSYS, on which glibc's pthread_create falls
  back to clone, whose flags it can read. Threads (numpy's, torch's, threading's) stay allowed: a thread
  is the same process, its CPU counted with it;
- any system call of another ABI (32-bit int 0x80, x32), whose numbers differ: EPERM.

A course whose exercises need subprocesses says `subprocesses: true` in its course.yaml; then no filter is
installed, and its hand-ins' CPU is counted by their cgroup (cpu_watch.py).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import threading
import warnings
from dataclasses import dataclass

# linux/seccomp.h, linux/filter.h, linux/audit.h
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (little-endian: an
# argument's low 32 bits, where clone's flags are, at its own offset).
_NR, _ARCH, _ARG0 = 0, 4, 16
REFUSED_ERRNO = errno.EPERM
_PROBE_BYTES = 512  # the most of the probe's reason read back: a line of the isolation line


@dataclass(frozen=True)
class _Abi:
    arch: int  # AUDIT_ARCH_*
    seccomp: int  # the seccomp system call's number
    clone: int
    clone3: int
    refused: tuple[int, ...]  # fork, vfork, execve, execveat: whichever the ABI has
    x32: bool  # whether numbers with __X32_SYSCALL_BIT reach the same arch


_ABIS = {
    "x86_64": _Abi(0xC000003E, 317, clone=56, clone3=435, refused=(57, 58, 59, 322), x32=True),
    "aarch64": _Abi(0xC00000B7, 277, clone=220, clone3=435, refused=(221, 281), x32=False),
}


class _Program:
    """Classic BPF, assembled with labels: a jump's offsets are counted once every label is placed."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assembled(self) -> bytes:
        def offset(at: int, target: int | str) -> int:
            return target if isinstance(target, int) else self.labels[target] - at - 1

        return b"".join(
            struct.pack("HBBI", code, offset(i, jt), offset(i, jf), k)
            for i, (code, jt, jf, k) in enumerate(self.code)
        )


def _program(abi: _Abi) -> bytes:
    p = _Program()
    p.op(_LD_W_ABS, _ARCH)
    p.op(_JEQ_K, abi.arch, 0, "refuse")
    p.op(_LD_W_ABS, _NR)
    if abi.x32:
        p.op(_JGE_K, _X32_SYSCALL_BIT, "refuse", 0)
    p.op(_JEQ_K, abi.clone3, "no_such_call", 0)
    p.op(_JEQ_K, abi.clone, "clone", 0)
    for number in abi.refused:
        p.op(_JEQ_K, number, "refuse", 0)
    p.op(_RET_K, _RET_ALLOW)
    p.label("clone")
    p.op(_LD_W_ABS, _ARG0)
    p.op(_JSET_K, _CLONE_THREAD, "allow", "refuse")
    p.label("allow")
    p.op(_RET_K, _RET_ALLOW)
    p.label("refuse")
    p.op(_RET_K, _RET_ERRNO | REFUSED_ERRNO)
    p.label("no_such_call")
    p.op(_RET_K, _RET_ERRNO | errno.ENOSYS)
    return p.assembled()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _Filter:
    """The filter for this machine's ABI, assembled and with libc's functions looked up: installing it
    then only makes system calls (what a child forked from a process with threads may safely do)."""

    def __init__(self, abi: _Abi) -> None:
        self.abi = abi
        code = _program(abi)
        self._buffer = ctypes.create_string_buffer(code, len(code))
        self._program = _SockFprog(len(code) // 8, ctypes.addressof(self._buffer))
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        self.syscall = libc.syscall
        self.syscall.restype = ctypes.c_long

    def install(self) -> str | None:
        if self.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {_error()}"
        installed = self.syscall(
            ctypes.c_long(self.abi.seccomp),
            ctypes.c_ulong(_SECCOMP_SET_MODE_FILTER),
            ctypes.c_ulong(_SECCOMP_FILTER_FLAG_TSYNC),
            ctypes.byref(self._program),
        )
        if installed != 0:
            return f"seccomp(SET_MODE_FILTER) failed: {_error()}"
        return None

    def refuses(self) -> str | None:
        """Once installed: None where it refuses what it must and lets a thread start; else what it did
        not do. Harmless calls only: execve of no path (the kernel's answer EFAULT, the filter's EPERM)
        and clone3 of no arguments (EINVAL, the filter's ENOSYS)."""
        execve = self.abi.refused[-2]  # execve, before execveat, in every ABI here
        if self.syscall(ctypes.c_long(execve), None, None, None) != -1 or ctypes.get_errno() != errno.EPERM:
            return f"the filter did not refuse execve ({_error()})"
        if self.syscall(ctypes.c_long(self.abi.clone3), None, 0) != -1 or ctypes.get_errno() != errno.ENOSYS:
            return f"the filter did not answer clone3 with ENOSYS ({_error()})"
        started: list[bool] = []
        try:
            thread = threading.Thread(target=lambda: started.append(True))
            thread.start()
            thread.join()
        except RuntimeError as exc:  # "can't start new thread"
            return f"a thread could not start under the filter: {exc}"
        return None if started else "a thread could not start under the filter"


def _error() -> str:
    return errno.errorcode.get(ctypes.get_errno(), "?")


_installed: list[bool] = []  # once this process holds the filter (what a refusal's message tells)


def installed() -> bool:
    """Whether this process holds the filter: a PermissionError from a fork is then its refusal."""
    return bool(_installed)


def forbid_new_processes() -> str | None:
    """Install the filter on every thread of this process, for its life. None where it holds; else why
    not (an architecture without its numbers here, a kernel without seccomp filters)."""
    abi = _ABIS.get(platform.machine())
    if abi is None:
        return f"no seccomp filter for the {platform.machine()} architecture"
    why = _Filter(abi).install()
    if why is None:
        _installed.append(True)
    return why


def probe() -> str | None:
    """Whether hand-ins can be held to one process here, asked once by the grader (isolation.py): the
    filter installed in a child forked for it, which then tries what it must refuse and starts a thread.
    None where all held; else why not, said in the isolation line."""
    abi = _ABIS.get(platform.machine())
    if abi is None:
        return f"no seccomp filter for the {platform.machine()} architecture"
    prepared = _Filter(abi)
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a fork of a process with threads
        pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            why = prepared.install() or prepared.refuses()
            os.write(write, b"held" if why is None else why.encode()[:_PROBE_BYTES])
        finally:
            os._exit(0)
    os.close(write)
    try:
        told = os.read(read, _PROBE_BYTES)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    if told == b"held":
        return None
    return told.decode(errors="replace") or "the probe of the seccomp filter ended without a word"
