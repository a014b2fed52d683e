"""The one-process filter itself (worker/seccomp.py): its program read by a small classic-BPF interpreter
for every ABI it knows (no machine of each is needed), and the real filter installed in a fresh
interpreter, where each way of making a process or running a program is tried and threads are started."""

from __future__ import annotations

import errno
import json
import platform
import struct
import subprocess
import sys
import textwrap

import pytest

from grader.sandbox.worker import seccomp

_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_OTHER_ARCH = 0x40000003  # AUDIT_ARCH_I386: int 0x80 on x86_64
_CLONE_THREAD_FLAGS = 0x003D0F00  # glibc's pthread_create: CLONE_VM | CLONE_FS | ... | CLONE_THREAD | ...
_SIGCHLD = 17


def _run(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """What the filter answers to a system call: a classic-BPF interpreter over struct seccomp_data
    (only the instructions the filter may use: a word load, jumps on a constant, return)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack("HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, at = 0, 0
    while True:
        op, jt, jf, k = code[at]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif op == 0x06:  # BPF_RET | BPF_K
            return int(k)
        else:
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[op]
            at += jt if taken else jf
        at += 1


@pytest.mark.parametrize("machine", sorted(seccomp._ABIS))
def test_the_program_refuses_processes_and_programs_and_allows_threads(machine: str) -> None:
    abi = seccomp._ABIS[machine]
    program = seccomp._program(abi)
    refused, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    for number in abi.refused:  # fork, vfork, execve, execveat: whichever the ABI has
        assert _run(program, abi.arch, number) == refused
    assert _run(program, abi.arch, abi.clone, _SIGCHLD) == refused  # fork through clone
    assert _run(program, abi.arch, abi.clone, 0x4111) == refused  # CLONE_VM | CLONE_VFORK: posix_spawn
    assert _run(program, abi.arch, abi.clone, _CLONE_THREAD_FLAGS) == _ALLOW  # a thread
    assert _run(program, abi.arch, abi.clone3) == enosys  # flags in memory: glibc falls back to clone
    for harmless in (0, 1, 3, 39, 202, 230):  # read, write, close, getpid, futex, clock_nanosleep (x86)
        if harmless not in (*abi.refused, abi.clone, abi.clone3):
            assert _run(program, abi.arch, harmless) == _ALLOW
    assert _run(program, _OTHER_ARCH, 1) == refused  # another ABI's numbers mean other calls
    if abi.x32:
        assert _run(program, abi.arch, 0x40000000 | 57) == refused


def test_the_probe_says_why_where_the_architecture_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert seccomp.probe() == "no seccomp filter for the riscv64 architecture"


_here = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() not in seccomp._ABIS, reason="no filter for this machine"
)


@_here
def test_the_probe_holds_here_and_finds_a_filter_allowing_all(monkeypatch: pytest.MonkeyPatch) -> None:
    assert seccomp.probe() is None
    allow_all = struct.pack("HBBI", 0x06, 0, 0, _ALLOW)
    monkeypatch.setattr(seccomp, "_program", lambda abi: allow_all)
    told = seccomp.probe()
    assert told is not None and "did not refuse execve" in told


# Installs the filter, then tries every way of making a process or running a program that Python and
# ctypes offer, and starts threads of each kind; prints what each did.
_TRIED = textwrap.dedent(
    """
    import ctypes, json, multiprocessing, os, subprocess, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np, torch
    from grader.sandbox.worker import seccomp

    assert seccomp.forbid_new_processes() is None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    told = {}

    def attempt(name, call):
        try:
            result = call()
        except OSError as exc:
            told[name] = exc.errno
            return
        if result == 0:  # a child was made after all: it must not carry on as this process
            os._exit(0)
        told[name] = "made" if isinstance(result, int) and result > 0 else ctypes.get_errno()

    attempt("fork", os.fork)
    attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
    attempt("subprocess", lambda: subprocess.run(["/bin/true"]).returncode + 1)
    attempt("python", lambda: subprocess.run([sys.executable, "-c", "pass"]).returncode + 1)
    told["system"] = os.system("true")  # 0 where `true` ran; glibc's 127 exit status where none started
    attempt("execv", lambda: os.execv("/bin/true", ["true"]))

    def process():
        child = multiprocessing.get_context("fork").Process(target=print)
        child.start()
        return child.pid

    attempt("multiprocessing", process)
    clone3 = seccomp._ABIS[os.uname().machine].clone3
    attempt("raw_clone3", lambda: libc.syscall(ctypes.c_long(clone3), None, 0))
    started = []
    thread = threading.Thread(target=lambda: started.append(1))
    thread.start()
    thread.join()
    with ThreadPoolExecutor(2) as pool:
        started += pool.map(abs, [-1, -1])
    torch.set_num_threads(2)
    big = torch.rand(600, 600, dtype=torch.float64)
    (big @ big).sum()
    told["threads"] = len(started)
    told["tasks"] = len(os.listdir("/proc/self/task"))
    print(json.dumps(told))
    """
)


@_here
def test_under_the_filter_nothing_makes_a_process_and_threads_start() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _TRIED], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    told = json.loads(done.stdout.splitlines()[-1])
    for name in ("fork", "posix_spawn", "subprocess", "python", "execv", "multiprocessing"):
        assert told[name] == errno.EPERM, (name, told)
    assert told["system"] != 0, told
    assert told["raw_clone3"] == errno.ENOSYS, told
    assert told["threads"] == 3 and told["tasks"] >= 2, told  # torch's pool of 2 is alive
