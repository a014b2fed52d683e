"""Saturation is never evidence of a mistake: where a gradient saturates (tanh exactly ±1, a clamp's flat
parts, a clipped loss, ReLU at exact zeros) or the rounding envelope could not be measured (a randomly
rounded copy of the reference overflows where the exact one does not, so its spread is NaN), an exact or
rounding-close answer passes, and a real mistake is still logic and still named."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import write_exercise
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import validation
from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, ReturnSpec, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.compare import compare
from grader.outcomes import Verdict

TRIALS = 60
DEFAULT = ReturnSpec(name="g", value="g")


@given(
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=12),
    undefined=st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), min_size=1, max_size=12),
)
@settings(max_examples=60, deadline=None)
def test_an_undefined_envelope_passes_exact_and_close_answers_and_fails_mistakes(
    values: list[float], undefined: list[float]
) -> None:
    expected = np.array(values) * (1 + 1 / 3) + np.pi  # float64 work, not numbers a narrower format holds
    spread = np.abs(expected) * 1e-3
    spread[: len(undefined)] = undefined[: expected.size]
    assert compare(0, DEFAULT, expected, expected.copy(), "float64", spread).verdict is Verdict.PASS
    close = expected + np.spacing(expected) * 2  # two ulps off: any formula's rounding
    assert compare(0, DEFAULT, expected, close, "float64", spread).verdict is Verdict.PASS
    wrong = expected * 1.1 + np.sqrt(2.0)  # a real mistake, and an infinite spread must not hide it
    comparison = compare(0, DEFAULT, expected, wrong, "float64", spread)
    assert comparison.verdict is Verdict.LOGIC
    assert np.isfinite(comparison.max_ratio)


def test_an_exact_answer_is_never_beyond_its_envelope() -> None:
    expected = np.array([[-340.044]])
    comparison = compare(0, DEFAULT, expected, expected.copy(), "float64", np.array([[np.nan]]))
    assert comparison.verdict is Verdict.PASS
    assert comparison.max_ratio == 0.0


@dataclass(frozen=True)
class Saturating:
    """An exercise whose inputs saturate its graph, a correct numpy solution, and a wrong one."""

    name: str
    inputs: str
    graph: str
    solution: str  # the body after `r = W @ x - y`, returning (f, grad)
    wrong: str
    named: str | None = None  # the wrong file's mistake, where one is named


LOGCOSH = "a = np.abs(r)\n    f = np.sum(a + np.log1p(np.exp(-2 * a)) - np.log(2.0))\n    "
CASES = [
    # Outliers a hundred thousand units away: tanh(r) is exactly ±1, and a randomly rounded copy of
    # softplus(2r) overflows (its spread is NaN) where the exact one does not.
    Saturating(
        "logcosh_outliers",
        "y: {shape: [d, 1], dist: uniform, low: -300000, high: 300000}",
        "f = sum(softplus(2 * r) - r - 0.6931471805599453)",
        LOGCOSH + "return f, np.tanh(r) @ x.T",
        LOGCOSH + "return f, np.tanh(r) @ x.T * 2",
        "factor 2",
    ),
    Saturating(
        "hard_tanh",
        "y: {shape: [d, 1], dist: uniform, low: -3, high: 3}",
        "f = sum(clamp(r, min=-1.0, max=1.0) * r)",
        "c = np.clip(r, -1, 1)\n    inside = (np.abs(r) < 1).astype(r.dtype)\n"
        "    return np.sum(c * r), (c + inside * r) @ x.T",
        "c = np.clip(r, -1, 1)\n    return np.sum(c * r), (2 * r) @ x.T",
    ),
    Saturating(
        "clipped_loss",
        "y: {shape: [d, 1], dist: uniform, low: -4, high: 4}",
        "f = sum(minimum(r * r, 4.0))",
        "return np.sum(np.minimum(r * r, 4.0)), (2 * r * (r * r < 4.0)) @ x.T",
        "return np.sum(np.minimum(r * r, 4.0)), (2 * r) @ x.T",
    ),
    Saturating(
        "relu_exact_zeros",  # most residuals negative: whole rows of the gradient exactly 0
        "y: {shape: [d, 1], dist: uniform, low: -1, high: 4}",
        "f = sum(relu(r) * 3)",
        "return np.sum(np.maximum(r, 0) * 3), (3.0 * (r > 0)) @ x.T",
        "return np.sum(np.maximum(r, 0) * 3), -(3.0 * (r > 0)) @ x.T",
        "sign flipped",
    ),
]


def _exercise(root: Path, case: Saturating) -> Exercise:
    body = "import numpy as np\n\n\ndef f(W, x, y):\n    r = W @ x - y\n    {rest}\n"
    folder = write_exercise(
        root / case.name,
        f"""
id: {case.name}
title: {case.name}
entry: f
args: [W, x, y]
sizes:
  d: {{min: 1, max: 4}}
inputs:
  W: {{shape: [d, d], dist: normal}}
  x: {{shape: [d, 1], dist: normal}}
  {case.inputs}
graph: |
  r = W @ x - y
  {case.graph}
returns:
  - {{name: f, value: f}}
  - {{name: grad, grad: {{of: f, wrt: W}}, by_hand: true}}
trials: {TRIALS}
solution: solution.py
starter: null
""",
    )
    (folder / "solution.py").write_text(body.format(rest=case.solution))
    (folder / "wrong.py").write_text(body.format(rest=case.wrong))
    return load_exercise(folder)


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def saturating(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Exercise, Saturating]:
    case: Saturating = request.param
    return _exercise(tmp_path_factory.mktemp("saturating"), case), case


def test_the_correct_float64_and_float32_solutions_pass(saturating: tuple[Exercise, Saturating]) -> None:
    exercise, _ = saturating
    exact = grade(exercise, submission_from_path(exercise.root / "solution.py", "f"), Settings(0, TRIALS))
    assert exact.error is None
    assert [r.verdict for r in exact.returns] == [Verdict.PASS, Verdict.PASS], exact.returns
    narrow = validation.grade_float32_variant(exercise, "solution.py", 0, TRIALS)
    assert all(r.verdict in (Verdict.PASS, Verdict.PRECISION) for r in narrow.returns), narrow.returns


def test_the_wrong_solution_is_still_logic_and_named(saturating: tuple[Exercise, Saturating]) -> None:
    exercise, case = saturating
    result = grade(exercise, submission_from_path(exercise.root / "wrong.py", "f"), Settings(0, TRIALS))
    by_name = {r.name: r for r in result.returns}
    assert by_name["f"].verdict is Verdict.PASS
    assert by_name["grad"].verdict is Verdict.LOGIC
    if case.named is not None:
        assert case.named in (by_name["grad"].misconception or "")


def test_validate_passes_and_says_how_much_saturates(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, CASES[0])
    checks = {c.name: c for c in validation.validate(exercise, 0, TRIALS)}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    told = checks["the graph at these inputs"].detail
    assert "saturate the graph on grad" in told and "%" in told and "narrow the inputs' range" in told


def test_validate_fails_a_graph_that_overflows(tmp_path: Path) -> None:
    overflowing = Saturating(
        "overflowing",
        "y: {shape: [d, 1], dist: uniform, low: -3000, high: 3000}",
        "f = sum(log(exp(r) + exp(-r)))",
        "return np.sum(np.logaddexp(r, -r)), np.tanh(r) @ x.T",
        "return 0.0, 0 * x.T",
    )
    exercise = _exercise(tmp_path, overflowing)
    references = compute_references(exercise, make_trials(exercise, 0, 20))
    check = validation.saturation(references)
    assert not check.ok
    assert "NaN or infinity" in check.detail and "narrow the inputs' range" in check.detail
