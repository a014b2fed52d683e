"""Which isolation and process limit the grader picks, from what the machine offers (probes replaced)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GRAPH2, write_source

from grader.outcomes import IsolationLevel
from grader.sandbox import cgroups, isolation
from grader.sandbox.credentials import readable_by
from grader.sandbox.isolation import ProcessLimit
from grader.sandbox.worker import seccomp as seccomp_filter


def _pick(
    monkeypatch: pytest.MonkeyPatch, bwrap: bool, cgroup: bool, probe: str, seccomp: str | None = None
) -> isolation.Isolation:
    monkeypatch.delenv("GRADER_ISOLATION", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/bwrap" if bwrap else None)
    monkeypatch.setattr(cgroups, "available", lambda: cgroup)
    monkeypatch.setattr(cgroups, "cpu_available", lambda: cgroup)
    monkeypatch.setattr(isolation, "_probe", lambda prefix: probe)
    monkeypatch.setattr(seccomp_filter, "probe", lambda: seccomp)
    return isolation.current.__wrapped__()


@pytest.mark.parametrize(
    ("bwrap", "cgroup", "probe", "level", "limit", "reduced", "says"),
    [
        (True, True, "16 1", "bubblewrap", ProcessLimit.CGROUP, False, "processes bounded by a cgroup"),
        (True, False, "6 1", "bubblewrap", ProcessLimit.RLIMIT, False, "bounded by RLIMIT_NPROC"),
        (True, False, "16 1", "bubblewrap", ProcessLimit.NONE, True, "as root the kernel exempts it"),
        (True, False, "0 1", "bubblewrap", ProcessLimit.NONE, True, "counts processes outside the sandbox"),
        (True, True, "16 1", "bubblewrap", ProcessLimit.CGROUP, False, "imports walled"),
        # No user namespace inside bubblewrap: the course's package list is advice only
        (True, True, "16 0", "bubblewrap", ProcessLimit.CGROUP, True, "imports advisory"),
        (True, True, "bwrap: setting up uid map: denied", "base", ProcessLimit.CGROUP, True, "fails here"),
        (False, False, "", "base", ProcessLimit.NONE, True, "bubblewrap is not installed"),
    ],
)
def test_the_strongest_available_isolation_is_chosen_and_described(
    monkeypatch: pytest.MonkeyPatch,
    bwrap: bool,
    cgroup: bool,
    probe: str,
    level: str,
    limit: ProcessLimit,
    reduced: bool,
    says: str,
) -> None:
    chosen = _pick(monkeypatch, bwrap, cgroup, probe)
    assert (chosen.level, chosen.process_limit, chosen.reduced) == (level, limit, reduced)
    assert says in chosen.description
    assert chosen.description.startswith("reduced isolation") == reduced
    assert isolation.ONE_PROCESS in chosen.description
    counted = "CPU counted by a cgroup" if cgroup else "CPU counted per process"
    assert counted in chosen.description


def test_each_result_says_whether_its_hand_in_was_held_to_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    full = _pick(monkeypatch, bwrap=True, cgroup=True, probe="16 1")
    assert full.one_process and not full.reduced
    assert full.description.endswith(", no new processes (seccomp)")
    allowed = full.used(subprocesses=True).line
    assert allowed.endswith(", subprocesses allowed by the course") and not allowed.startswith("reduced")
    # A kernel without seccomp filters: a course that does not allow subprocesses gets less than it asked.
    without = _pick(
        monkeypatch, bwrap=True, cgroup=True, probe="16 1", seccomp="seccomp(SET_MODE_FILTER) failed"
    )
    assert not without.one_process and without.reduced
    assert without.description.startswith("reduced isolation: ")
    assert without.description.endswith(
        "new processes allowed; no seccomp filter: seccomp(SET_MODE_FILTER) failed"
    )
    assert without.used(subprocesses=True).level is IsolationLevel.FULL


def test_a_full_isolation_is_named_in_brief_and_a_reduced_one_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The score line of every check: a full isolation's walls without their details, which would wrap
    it; a reduced one's line whole, since what it lacks, and why, is the point."""
    full = _pick(monkeypatch, bwrap=True, cgroup=True, probe="16 1").used()
    assert full.level is IsolationLevel.FULL
    assert full.line.startswith("bubblewrap (own PID and network namespaces, ")
    assert full.brief.startswith("bubblewrap, processes bounded by a cgroup, memory bounded per hand-in by ")
    assert full.brief.endswith(", no new processes") and "(" not in full.brief
    reduced = _pick(monkeypatch, bwrap=True, cgroup=True, probe="16 0").used()
    assert reduced.level is IsolationLevel.REDUCED
    assert reduced.brief == reduced.line and reduced.line.startswith("reduced isolation: bubblewrap (")


# --- honest code reads the interpreter's files in every layer ---------------------------------------------

# torch.func (which reads the source of functions it transforms through inspect), inspect.getsource of a
# torch and of a stdlib function, a line of torch's source through linecache, and a subprocess of the
# interpreter: honest code that reads the interpreter's own files. With a secret beside the interpreter,
# in the folder the slot's uid cannot pass (pyenv under /root, mode 0700), that it must not see.
HONEST_READER = """
import inspect, linecache, os, subprocess, sys
import numpy as np
import torch
from torch.func import grad, hessian, jacfwd, jacrev, vmap

SECRET = {secret!r}


def graph2(W_np, x_np, b_np):
    assert "def softsign" in inspect.getsource(torch.nn.functional.softsign)
    assert "def dedent" in inspect.getsource(__import__("textwrap").dedent)
    assert linecache.getline(torch.nn.functional.__file__, 1)
    if SECRET:
        for attempt in (lambda: open(SECRET).read(), lambda: os.listdir(os.path.dirname(SECRET))):
            try:
                seen = attempt()
            except OSError:
                continue
            assert os.path.basename(SECRET) not in seen and "LEAK" not in seen, seen
    assert os.access(sys.executable, os.X_OK)
    x, b = torch.tensor(x_np), torch.tensor(b_np)

    def f_of(W):
        return torch.sigmoid(W @ x + b).sum()

    W = torch.tensor(W_np)
    g = grad(f_of)(W)
    # shapes, not values: on the trials of the autograd check every gradient gets factors of its own
    assert jacfwd(f_of)(W).shape == jacrev(f_of)(W).shape == g.shape
    assert hessian(f_of)(W).shape == (*W.shape, *W.shape)
    assert torch.allclose(vmap(lambda row: row.sum())(W), W.sum(dim=1))
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f_of(W), g, (s * (1 - s)) @ x_np.T
"""


def _barred_folder() -> Path | None:
    """The highest folder above the interpreter that others cannot pass, if there is one."""
    for folder in reversed(Path(sys.base_prefix).resolve().parents):
        if folder != Path("/") and not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


@pytest.mark.parametrize(
    "layer", ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]
)
def test_honest_code_reading_the_interpreters_files_gets_full_marks(layer: str, tmp_path: Path) -> None:
    barred = _barred_folder()
    secret = None if barred is None else barred / f"grader-test-secret-{os.getpid()}"
    if secret is not None:
        secret.write_text("LEAK\n")
    try:
        path = write_source(tmp_path / "honest.py", HONEST_READER.format(secret=str(secret or "")))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
        if layer == "base":
            env["GRADER_ISOLATION"] = "base"
        done = subprocess.run(
            [sys.executable, "-m", "grader", "check", str(GRAPH2), str(path), "--trials", "3", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
    finally:
        if secret is not None:
            secret.unlink()
    result = json.loads(done.stdout)
    assert result["error"] is None and result["score"] == result["max_score"], result


_NO_MOUNT_NAMESPACE = """
import enum, inspect, linecache, os, sys, traceback
from grader.sandbox import credentials

credentials._bind_where_reachable = lambda folders, uid, gid: None  # as in a container without CAP_SYS_ADMIN
credentials.keep_imports_reachable(65534, 65534)
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
assert not os.access(enum.__file__, os.R_OK), "the interpreter is readable anyway: nothing is tested"
source = inspect.getsource(enum.Enum._generate_next_value_)
import json as fresh  # imported after the drop, through the descriptors
print(len(source.splitlines()), len(inspect.getsource(fresh.dumps).splitlines()))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to another uid: needs root")
def test_without_a_mount_namespace_sources_imported_before_the_drop_still_read(tmp_path: Path) -> None:
    """The base layer's fallback where no mount namespace can be made: torch.func and inspect.getsource
    read the source of modules imported before the uid drop, through the descriptors opened before it."""
    if all(readable_by(p, 65534, 65534) for p in {sys.base_prefix, sys.prefix}):
        pytest.skip("this interpreter is readable by any uid: there is nothing to reach")
    done = subprocess.run(
        [sys.executable, "-c", _NO_MOUNT_NAMESPACE], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines, fresh = map(int, done.stdout.split())
    assert lines > 1 and fresh > 1


_LEASER = """
import sys
from grader.sandbox import isolation
lease = isolation.lease_user()
print(lease.uid, flush=True)
sys.stdin.read()  # held until the test closes it
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="uids are leased only by a grader run as root")
def test_graders_with_different_temporary_folders_never_share_a_sandbox_uid(tmp_path: Path) -> None:
    """Two graders on one machine, each with a TMPDIR of its own: each slot's uid is its own, or ending one
    slot's processes (all of its uid's) kills the other grader's worker mid-trial."""
    held = []
    try:
        for name in ("first", "second"):
            (tmp_path / name).mkdir()
            env = {**os.environ, "TMPDIR": str(tmp_path / name), "GRADER_ISOLATION": "base"}
            env.pop("GRADER_SANDBOX_UID", None)
            held.append(
                subprocess.Popen(
                    [sys.executable, "-c", _LEASER],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        uids = [int(process.stdout.readline()) for process in held if process.stdout]
    finally:
        for process in held:
            process.communicate("")
    assert len(uids) == 2 and uids[0] != uids[1], uids
