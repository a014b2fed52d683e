"""How a worker process is walled in: bubblewrap where it works, the base layer where it does not.

With bubblewrap the worker gets its own user, PID, network, IPC and UTS namespaces, no capabilities (bwrap
run as root keeps them otherwise, and a submission could unmount what hides the exercises), a cleared
environment, and a root file system holding only the interpreter and its libraries, the grader package,
the submission (read-only) and a size-capped scratch tmpfs: exercises, references and other students'
files do not exist in there. The base layer (rlimits, own session, clean environment, deadlines, a fresh
temporary directory) applies in both cases.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import grader

BASE = "base (subprocess, rlimits, own session, clean environment)"
BUBBLEWRAP = "bubblewrap (own PID and network namespaces, no capabilities, only the submission visible)"
INSIDE_JOB = "/job"  # where the job folder appears inside the sandbox
_SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")


@dataclass(frozen=True)
class Isolation:
    level: str  # "bubblewrap" or "base"
    description: str  # shown in every result; says what is missing when reduced

    @property
    def reduced(self) -> bool:
        return self.level != "bubblewrap"


@dataclass(frozen=True)
class Launch:
    command: list[str]
    env: dict[str, str]
    cwd: Path
    job_dir: str  # the job folder as the worker sees it


@cache
def current() -> Isolation:
    """The isolation this machine offers, probed once per process."""
    if os.environ.get("GRADER_ISOLATION") == "base":
        return Isolation("base", f"reduced isolation: {BASE}; bubblewrap disabled by GRADER_ISOLATION=base")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        missing = "bubblewrap is not installed (apt install bubblewrap)"
        return Isolation("base", f"reduced isolation: {BASE}; {missing}")
    probe = subprocess.run(
        [*_bwrap_prefix(bwrap, scratch_mb=1), "--", sys.executable, "-I", "-c", "import grader"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Isolation("base", f"reduced isolation: {BASE}; bubblewrap fails here: {reason}")
    return Isolation("bubblewrap", BUBBLEWRAP)


def launch(job_dir: Path, python_args: list[str], env: Mapping[str, str], scratch_mb: int) -> Launch:
    """The command that starts the worker, for the current isolation.

    `python_args` follow the interpreter; the token "{job}" in them stands for the job folder's path as
    the worker sees it.
    """
    isolation = current()
    if isolation.reduced:
        args = [a.replace("{job}", str(job_dir)) for a in python_args]
        return Launch([sys.executable, *args], dict(env), job_dir / "scratch", str(job_dir))
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    inner_env = {k: v.replace("{job}", INSIDE_JOB) for k, v in env.items()}
    command = _bwrap_prefix(bwrap, scratch_mb)
    command += ["--ro-bind", str(job_dir / "submission"), f"{INSIDE_JOB}/submission"]
    command += ["--remount-ro", "/"]  # the rest of the tree: nothing to fill, nothing to plant
    command += ["--chdir", f"{INSIDE_JOB}/scratch"]
    for key, value in inner_env.items():
        command += ["--setenv", key, value]
    args = [a.replace("{job}", INSIDE_JOB) for a in python_args]
    command += ["--", sys.executable, *args]
    return Launch(command, {"PATH": "/usr/bin:/bin"}, job_dir, INSIDE_JOB)


def _bwrap_prefix(bwrap: str, scratch_mb: int) -> list[str]:
    command = [
        bwrap,
        "--unshare-all",  # user, PID, network, IPC, UTS and cgroup namespaces: no network at all
        "--die-with-parent",  # killing bwrap ends everything inside, daemons included
        "--cap-drop", "ALL",
        "--clearenv",
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", str(scratch_mb << 20), "--tmpfs", "/tmp",
        "--size", str(scratch_mb << 20), "--tmpfs", f"{INSIDE_JOB}/scratch",
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
