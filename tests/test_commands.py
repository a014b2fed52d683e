"""Commands return an Outcome; cli.main alone turns it into the exit code a shell or CI sees."""

from __future__ import annotations

from grader import cli
from grader.commands.outcome import Outcome
from grader.errors import ExitCode


def test_every_outcome_has_its_exit_code() -> None:
    assert set(cli._EXIT) == set(Outcome)
    assert [int(cli._EXIT[o]) for o in Outcome] == [0, 1, 2, 130]
    assert cli._EXIT[Outcome.BROKEN] is ExitCode.USAGE_OR_SPEC


def test_a_broken_input_outranks_every_verdict() -> None:
    assert Outcome.of([True, True]) is Outcome.PASSED
    assert Outcome.of([True, False]) is Outcome.FAILED
    assert Outcome.of([]) is Outcome.PASSED  # nothing to grade failed
    assert Outcome.of([True], broken=True) is Outcome.BROKEN
    assert Outcome.of(iter([False]), broken=True) is Outcome.BROKEN
