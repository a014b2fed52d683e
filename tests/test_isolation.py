"""Which isolation and process limit the grader picks, from what the machine offers (probes replaced)."""

from __future__ import annotations

import shutil

import pytest

from grader.sandbox import cgroups, isolation
from grader.sandbox.isolation import ProcessLimit


def _pick(monkeypatch: pytest.MonkeyPatch, bwrap: bool, cgroup: bool, probe: str) -> isolation.Isolation:
    monkeypatch.delenv("GRADER_ISOLATION", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/bwrap" if bwrap else None)
    monkeypatch.setattr(cgroups, "available", lambda: cgroup)
    monkeypatch.setattr(isolation, "_probe", lambda prefix: probe)
    return isolation.current.__wrapped__()


@pytest.mark.parametrize(
    ("bwrap", "cgroup", "probe", "level", "limit", "reduced", "says"),
    [
        (True, True, "16", "bubblewrap", ProcessLimit.CGROUP, False, "processes bounded by a cgroup"),
        (True, False, "6", "bubblewrap", ProcessLimit.RLIMIT, False, "bounded by RLIMIT_NPROC"),
        (True, False, "16", "bubblewrap", ProcessLimit.NONE, True, "as root the kernel exempts it"),
        (True, False, "0", "bubblewrap", ProcessLimit.NONE, True, "counts processes outside the sandbox"),
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
