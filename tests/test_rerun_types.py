"""Reruns that survive the type checks students write: a check that refuses the rerun's input says nothing
of the formula, so it must not turn an unstable formula into "a mistake", nor a mistake into instability.

softplus_tails is the exercise: its naive formula (log(1 + exp(x)), 1 - 1/(1 + exp(x))) cancels to 0 in
float64 and is told apart from a mistake only by its rerun in extended precision."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import EXERCISES, grade_source, grader_run, write_source

from grader.exercise.spec import Exercise, load_exercise
from grader.judging.compare import Comparison, RerunOutcome, compare
from grader.judging.reruns.outcomes import Refused
from grader.judging.reruns.resolve import resolve_with_rerun
from grader.judging.reruns.scaling import HAS_EXTENDED
from grader.outcomes import Verdict
from grader.results import SubmissionResult

TRIALS = 30
SOFTPLUS_TAILS = EXERCISES / "basics" / "softplus_tails"

# The forms students write to tell an array from a number (collected from public course code), as the
# head of a helper that gives the input back, or goes another way (float(x), a raise) for anything else.
# Each with whether it refuses numpy's extended-precision float (np.longdouble) whatever array class
# carries it: only a check of the dtype does.
CHECKS = {
    "type == ndarray": ("if type(x) == np.ndarray:\n    return x\nreturn float(x)", False),
    "type is ndarray": ("if type(x) is np.ndarray:\n    return x\nreturn float(x)", False),
    "type name": ("if type(x).__name__ == 'ndarray':\n    return x\nreturn math.exp(math.log(x))", False),
    # a number wrapped: the rerun's subclass becomes a float64 array of another shape
    "wrap numbers": ("if type(x) != np.ndarray:\n    x = np.array([x], dtype=float)\nreturn x", False),
    "assert type": ("assert type(x) == np.ndarray, 'x must be a numpy array'\nreturn x", False),
    "isinstance ndarray": ("if isinstance(x, np.ndarray):\n    return x\nreturn float(x)", False),
    "isinstance float64": (
        "if isinstance(x, (float, np.float64)):\n    return np.array([x])\nreturn x",
        False,
    ),
    "issubdtype floating": (
        "if not np.issubdtype(x.dtype, np.floating):\n    raise TypeError('x must hold floats')\nreturn x",
        False,
    ),
    "dtype == float64": (
        "if x.dtype == np.float64:\n    return x\nraise TypeError('x must be float64')",
        True,
    ),
    "dtype.type is float64": (
        "if x.dtype.type is np.float64:\n    return x\nraise TypeError('x must be float64')",
        True,
    ),
    "assert dtype": ("assert x.dtype == np.float64, 'x must be float64'\nreturn x", True),
}

BODIES = {
    # cancels: 1 + exp(x) is 1 in float64, so both are 0 where tiny values are due
    "naive": "loss = np.log(1.0 + np.exp(x)).sum()\ngrad = 1.0 - 1.0 / (1.0 + np.exp(x))",
    # stable, with the sign of the derivative lost: wrong at any precision
    "sign": "e = np.exp(x)\nloss = np.log1p(e).sum()\ngrad = -e / (1.0 + e)",
    "correct": "e = np.exp(x)\nloss = np.log1p(e).sum()\ngrad = e / (1.0 + e)",
}


def _source(check: str | None, body: str) -> str:
    head = ["import math", "import numpy as np", ""]
    if check is not None:
        head += ["", "def as_array(x):", textwrap.indent(check, "    "), "", ""]
    lines = [*head, "def softplus_tails(x):"]
    if check is not None:
        lines.append("    x = as_array(x)")
    lines += [textwrap.indent(BODIES[body], "    "), "    return loss, grad", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def exercise() -> Exercise:
    return load_exercise(SOFTPLUS_TAILS)


@pytest.fixture(scope="module")
def unchecked(exercise: Exercise, tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    """Each body without any check: the verdicts a check must not change."""
    folder = tmp_path_factory.mktemp("unchecked")
    return {
        body: grade_source(exercise, folder, f"{body}.py", _source(None, body), TRIALS) for body in BODIES
    }


def _verdicts(result: SubmissionResult) -> dict[str, Verdict]:
    return {r.name: r.verdict for r in result.returns}


def test_the_unchecked_bodies_are_what_the_exercise_says(unchecked: dict[str, SubmissionResult]) -> None:
    if HAS_EXTENDED:  # without a format above float64, numpy's cancellation cannot be told from a mistake
        assert set(_verdicts(unchecked["naive"]).values()) == {Verdict.INSTABILITY}
    assert _verdicts(unchecked["sign"]) == {"loss": Verdict.PASS, "grad": Verdict.LOGIC}
    assert set(_verdicts(unchecked["correct"]).values()) == {Verdict.PASS}


@pytest.mark.parametrize("form", [f for f, (_, refuses) in CHECKS.items() if not refuses])
@pytest.mark.parametrize("body", list(BODIES))
def test_a_check_the_rerun_can_pass_changes_no_verdict(
    form: str, body: str, exercise: Exercise, unchecked: dict[str, SubmissionResult], tmp_path: Path
) -> None:
    checked = grade_source(exercise, tmp_path, "checked.py", _source(CHECKS[form][0], body), TRIALS)
    assert _verdicts(checked) == _verdicts(unchecked[body])
    for result in checked.returns:
        assert "refused" not in result.message


@pytest.mark.skipif(not HAS_EXTENDED, reason="numpy's longdouble is float64 here: no extended rerun")
@pytest.mark.parametrize("form", [f for f, (_, refuses) in CHECKS.items() if refuses])
def test_a_dtype_check_that_refuses_extended_precision_is_said_not_called_a_mistake(
    form: str, exercise: Exercise, tmp_path: Path
) -> None:
    naive = grade_source(exercise, tmp_path, "naive.py", _source(CHECKS[form][0], "naive"), TRIALS)
    for result in naive.returns:
        # Not instability: nothing above float64 ran, and no mistake may pass for an unstable formula.
        assert result.verdict is Verdict.LOGIC
        flat = " ".join(result.message.split())
        assert "a mistake in the formula" not in flat
        assert "your code refused numpy's extended-precision arrays" in flat
        assert "no rerun above float64 showed whether from a mistake" in flat
        assert "of naive.py: `" in flat  # the line of the check that refused


@pytest.mark.parametrize("form", [f for f, (_, refuses) in CHECKS.items() if refuses])
def test_a_dtype_check_keeps_a_mistake_logic_and_a_correct_formula_passing(
    form: str, exercise: Exercise, tmp_path: Path
) -> None:
    sign = grade_source(exercise, tmp_path, "sign.py", _source(CHECKS[form][0], "sign"), TRIALS)
    assert _verdicts(sign) == {"loss": Verdict.PASS, "grad": Verdict.LOGIC}
    correct = grade_source(exercise, tmp_path, "correct.py", _source(CHECKS[form][0], "correct"), TRIALS)
    assert set(_verdicts(correct).values()) == {Verdict.PASS}


# The case from the course: a sigmoid that treats anything but an exact ndarray as a number.
TYPED_SIGMOID = """
import math
import numpy as np


def sigmoid(x):
    if type(x) == np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))
    return 1.0 / (1.0 + math.exp(-x))


def softplus_tails(x):
    loss = np.log(1.0 + np.exp(x)).sum()
    grad = 1.0 - sigmoid(-x)
    return loss, grad
"""


@pytest.mark.skipif(not HAS_EXTENDED, reason="numpy's longdouble is float64 here: no extended rerun")
def test_grader_check_calls_the_type_checked_cancelling_sigmoid_unstable(tmp_path: Path) -> None:
    path = write_source(tmp_path / "typed_sigmoid.py", TYPED_SIGMOID)
    done = grader_run("check", SOFTPLUS_TAILS, path, "--trials", TRIALS)
    flat = " ".join(done.stdout.split())
    assert "grad instability" in flat and "loss instability" in flat, done.stdout + done.stderr
    assert "a mistake in the formula" not in flat and "refused" not in flat


def test_a_rerun_refused_keeps_the_first_runs_verdict_and_says_why() -> None:
    """No rerun to go by: NaN where finite values were due is the format's range, as for any float64
    trial that cannot be rerun above float64; a finite error beyond rounding keeps its points lost."""
    spec = load_exercise(SOFTPLUS_TAILS).spec.returns[1]
    expected = np.array([[1.5e-20, 2.5e-18], [3.5e-17, 4.5e-16]])
    refused = Refused("AssertionError at line 5 of f.py: `assert x.dtype == np.float64`")

    def resolved(got: np.ndarray) -> Comparison:
        first = compare(0, spec, expected, got, "float64", np.zeros_like(expected))
        assert first.verdict is Verdict.LOGIC
        return resolve_with_rerun(first, spec, expected, np.zeros_like(expected), got, refused, refused)

    finite = resolved(np.zeros_like(expected))
    assert finite.verdict is Verdict.LOGIC and finite.rerun is RerunOutcome.REFUSED
    assert "refused its rerun at float64 (AssertionError at line 5" in finite.note
    overflowed = resolved(np.full_like(expected, np.nan))
    assert overflowed.verdict is Verdict.INSTABILITY and overflowed.rerun is RerunOutcome.OVERFLOWS


TORCH_NAIVE = """
import torch


def softplus_tails(x):
    t = torch.tensor(x)
    loss = torch.log(1.0 + torch.exp(t)).sum()
    grad = 1.0 - 1.0 / (1.0 + torch.exp(t))
    return loss, grad
"""


@pytest.mark.skipif(not HAS_EXTENDED, reason="numpy's longdouble is float64 here: no extended rerun")
def test_torch_refusing_extended_precision_is_torchs_not_a_check(exercise: Exercise, tmp_path: Path) -> None:
    """torch.tensor() of the rerun's np.longdouble raises: torch stops at float64, which no change to the
    student's checks lifts, and the student is told so in those words."""
    result = grade_source(exercise, tmp_path, "torch_naive.py", TORCH_NAIVE, TRIALS)
    for ret in result.returns:
        flat = " ".join(ret.message.split())
        assert "could not be rerun above float64 (torch code cannot be)" in flat
        assert "refused" not in flat
