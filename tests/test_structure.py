"""The pipeline's shape, as far as a user of the package notices it: what the trust boundary imports, that
the zygote the grader starts by name exists, the order of verdicts, and that outcomes are words that
round-trip through the wire, the JSON and the gradebook."""

from __future__ import annotations

import importlib
import subprocess
import sys
import typing

import pytest
from conftest import ROOT

from grader.judging.compare import RerunOutcome
from grader.outcomes import FailureKind, Verdict
from grader.sandbox import payload, warm


def _imported_after(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after `statement` (run outside this process)."""
    probe = f"import sys; {statement}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    found = subprocess.run(
        [sys.executable, "-I", "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(found.stdout.split())


def test_the_sandbox_package_imports_nothing_heavy() -> None:
    loaded = _imported_after("sys.path.insert(0, '.'); import grader.sandbox")
    assert not loaded & {"torch", "pydantic", "yaml", "numpy", "rich"}, loaded


def test_the_worker_side_of_the_sandbox_needs_neither_pydantic_nor_torch() -> None:
    """What the zygote imports runs beside student code: the grader's own dependencies stay out of it."""
    loaded = _imported_after("sys.path.insert(0, '.'); import grader.sandbox.zygote")
    assert "numpy" in loaded
    assert not loaded & {"torch", "pydantic", "yaml", "rich"}, loaded


def test_the_zygote_the_grader_starts_by_name_exists() -> None:
    """The boot line names the zygote's module in a string mypy cannot follow: moving it must fail here."""
    assert f"from {warm.ZYGOTE_MODULE} import main" in warm._BOOT
    module = importlib.import_module(warm.ZYGOTE_MODULE)
    assert callable(module.main)


def test_verdicts_are_ordered_by_severity() -> None:
    ordered = [
        Verdict.PASS,
        Verdict.PRECISION,
        Verdict.INSTABILITY,
        Verdict.LOGIC,
        Verdict.AUTOGRAD,
        Verdict.NUMERICAL,
        Verdict.ERROR,
    ]
    assert sorted(reversed(ordered)) == ordered
    assert max([Verdict.PRECISION, Verdict.LOGIC, Verdict.PASS]) is Verdict.LOGIC
    assert Verdict.ERROR > Verdict.LOGIC >= Verdict.LOGIC and Verdict.PASS < Verdict.PRECISION
    assert [v.severity for v in ordered] == [0, 1, 2, 3, 4, 5, 6]
    with pytest.raises(TypeError):
        _ = Verdict.PASS < "logic"  # not compared as strings


def test_outcomes_read_as_their_words() -> None:
    """Reports put them in f-strings: the word, on every Python version."""
    assert f"{Verdict.LOGIC} / {FailureKind.TIMEOUT}" == "logic / timeout"
    assert str(FailureKind.NOT_SUBMITTED) == "not-submitted" and FailureKind("crash") is FailureKind.CRASH


def test_every_failure_kind_the_worker_may_send_is_a_failure_kind() -> None:
    for model in (payload.Fatal, payload.TrialFailed):
        kinds = typing.get_args(model.model_fields["kind"].annotation)
        assert kinds and all(FailureKind(kind) for kind in kinds)


def test_only_the_unstable_rerun_outcomes_make_instability() -> None:
    unstable = {o for o in RerunOutcome if o.unstable}
    assert unstable == {
        RerunOutcome.OVERFLOWS,
        RerunOutcome.RIGHT_HIGHER,
        RerunOutcome.SHRINKS,
        RerunOutcome.CANCELLED,
        # torch float64 right on inputs moved by the exercise's shift invariance (judging/invariance.py)
        RerunOutcome.RIGHT_SHIFTED,
        RerunOutcome.RANGE_SHIFTED,
    }


def test_the_docs_exercise_table_lists_every_bundled_exercise_as_its_spec_says() -> None:
    """The table is made from the specs (scripts/library_table.py); an exercise added or changed without
    remaking it fails here."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "library_table.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
