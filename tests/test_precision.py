"""Precision, instability or logic: the rerun at float64 and the precision read from returned values."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.compare import Precision, infer_precision
from grader.outcomes import Verdict
from grader.results import SubmissionResult

TRIALS = 150

# Logits spread so wide that exp() overflows in float32 (above ~88.7) but not in float64 (above ~709).
LSE_SPEC = """
id: lse
title: log-sum-exp of wide logits
entry: lse
args: [z_np]
sizes:
  n: {min: 2, max: 6}
inputs:
  z_np: {shape: [n], dist: uniform, low: -150, high: 150}
graph: |
  f = logsumexp(z_np, dim=0)
returns:
  - {name: f, value: f}
  - {name: grad, grad: {of: f, wrt: z_np}}
solution: null
starter: null
"""

VARIANTS = {
    "stable64": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np, requires_grad=True)
            f = torch.logsumexp(z, 0)
            f.backward()
            return f, z.grad
    """,
    "naive32": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np, dtype=torch.float32, requires_grad=True)
            f = torch.log(torch.sum(torch.exp(z)))
            f.backward()
            return f, z.grad
    """,
    "naive32_via_float": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np).float().requires_grad_()
            f = torch.log(torch.sum(torch.exp(z)))
            f.backward()
            return f.double(), z.grad.double()
    """,
    "naive64": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np, requires_grad=True)
            f = torch.log(torch.sum(torch.exp(z)))
            f.backward()
            return f, z.grad
    """,
    "naive_numpy32": """
        import numpy as np
        def lse(z_np):
            e = np.exp(z_np.astype(np.float32))
            return np.log(e.sum()), e / e.sum()
    """,
    "naive_asarray32": """
        import numpy as np
        def lse(z_np):
            e = np.exp(np.asarray(z_np, dtype=np.float32))
            return np.log(e.sum()), e / e.sum()
    """,
    # np.float32(array) is the narrowing the rerun cannot lift (astype and dtype= it can)
    "naive_npfloat32": """
        import numpy as np
        def lse(z_np):
            e = np.exp(np.float32(z_np))
            return np.log(e.sum()), e / e.sum()
    """,
    "factor2_32": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np, dtype=torch.float32, requires_grad=True)
            f = torch.logsumexp(z, 0)
            f.backward()
            return f, 2 * z.grad
    """,
    "factor2_numpy32": """
        import numpy as np
        def lse(z_np):
            z = np.float32(z_np)  # not lifted by the rerun
            m = z.max()
            e = np.exp(z - m)
            return m + np.log(e.sum()), 2 * e / e.sum()
    """,
    "mixed32": """
        import numpy as np
        def lse(z_np):
            z = z_np.astype(np.float32)  # float32 work...
            m = z.max()
            e = np.exp(z - m)
            p = e.astype(np.float64)  # ...finished in float64: values no float32 can hold
            return np.float64(m) + np.log(p.sum()), p / p.sum()
    """,
    "stable16": """
        import torch
        def lse(z_np):
            z = torch.tensor(z_np, dtype=torch.float16, requires_grad=True)
            f = torch.logsumexp(z.float(), 0)
            f.backward()
            return f.half(), z.grad
    """,
}


@pytest.fixture(scope="module")
def lse_exercise(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    folder = tmp_path_factory.mktemp("lse")
    (folder / "exercise.yaml").write_text(LSE_SPEC, encoding="utf-8")
    return load_exercise(folder)


@pytest.fixture(scope="module")
def graded(lse_exercise: Exercise, tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    folder = tmp_path_factory.mktemp("variants")
    references = compute_references(lse_exercise, make_trials(lse_exercise, 0, TRIALS))
    results = {}
    for name, source in VARIANTS.items():
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        submission = submission_from_path(path, "lse")
        results[name] = grade(lse_exercise, submission, Settings(0), references=references)
    return results


def verdicts(result: SubmissionResult) -> dict[str, Verdict]:
    return {r.name: r.verdict for r in result.returns}


def test_stable_float64_passes(graded: dict[str, SubmissionResult]) -> None:
    assert verdicts(graded["stable64"]) == {"f": Verdict.PASS, "grad": Verdict.PASS}


def test_naive_formula_overflowing_float32_is_instability(graded: dict[str, SubmissionResult]) -> None:
    for name in ("naive32", "naive32_via_float"):
        result = graded[name]
        assert verdicts(result) == {"f": Verdict.INSTABILITY, "grad": Verdict.INSTABILITY}, name
        message = result.returns[0].message
        assert "right when rerun at float64" in message
        assert "unstable" in message


def test_the_same_naive_code_in_float64_passes(graded: dict[str, SubmissionResult]) -> None:
    assert verdicts(graded["naive64"]) == {"f": Verdict.PASS, "grad": Verdict.PASS}


@pytest.mark.parametrize("name", ["naive_numpy32", "naive_asarray32"])
def test_numpy_float32_requests_are_lifted_by_the_rerun(
    graded: dict[str, SubmissionResult], name: str
) -> None:
    """astype(np.float32) and np.asarray(x, dtype=np.float32) alike."""
    result = graded[name]
    assert verdicts(result) == {"f": Verdict.INSTABILITY, "grad": Verdict.INSTABILITY}
    assert "right when rerun at float64" in result.returns[0].message


def test_hard_coded_numpy_float32_overflow_is_instability_and_says_so(
    graded: dict[str, SubmissionResult],
) -> None:
    result = graded["naive_npfloat32"]
    assert verdicts(result) == {"f": Verdict.INSTABILITY, "grad": Verdict.INSTABILITY}
    assert "hard-codes" in result.returns[0].message


def test_float32_work_finished_in_float64_passes(graded: dict[str, SubmissionResult]) -> None:
    """Values widened to float64 after float32 work carry float32 rounding: correct, not unstable."""
    result = graded["mixed32"]
    assert set(verdicts(result).values()) == {Verdict.PASS}, [r.message for r in result.returns]


def test_a_mistake_stays_logic_at_any_precision(graded: dict[str, SubmissionResult]) -> None:
    result = graded["factor2_32"]
    assert verdicts(result) == {"f": Verdict.PASS, "grad": Verdict.LOGIC}
    assert "at any precision" in result.returns[1].message


def test_a_mistake_in_hard_coded_float32_is_logic_and_says_why(graded: dict[str, SubmissionResult]) -> None:
    result = graded["factor2_numpy32"]
    assert verdicts(result)["grad"] is Verdict.LOGIC
    assert "hard-codes float32" in result.returns[1].message


def test_stable_half_precision_is_never_logic(graded: dict[str, SubmissionResult]) -> None:
    result = graded["stable16"]
    assert Verdict.LOGIC not in verdicts(result).values()
    assert Verdict.ERROR not in verdicts(result).values()


def test_messages_give_the_ratio_to_the_envelope(graded: dict[str, SubmissionResult]) -> None:
    for name in ("stable64", "factor2_32"):
        for ret in graded[name].returns:
            assert "envelopes" in ret.message, ret.message


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [(np.float16, Precision.FLOAT16), (np.float32, Precision.FLOAT32)],
)
def test_lower_precision_values_in_a_float64_array_are_recognised(dtype: type, expected: Precision) -> None:
    values = np.random.default_rng(1).normal(size=(4, 3)).astype(dtype).astype(np.float64)
    assert infer_precision(values, "float64")[0] is expected


def test_bfloat16_values_in_a_float64_array_are_recognised() -> None:
    values = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    truncated = (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    truncated *= 2.0**20  # exactly: beyond float16's range, so only bfloat16 holds them
    assert infer_precision(truncated.astype(np.float64), "float64")[0] is Precision.BFLOAT16


def test_rounding_spread_grows_with_cancelling_terms(tmp_path: Path) -> None:
    """sum(1/a) over terms of both signs: rounding follows the terms, not the small total."""
    (tmp_path / "exercise.yaml").write_text(
        textwrap.dedent(
            """
            id: cancel
            title: cancelling sum
            entry: f
            args: [a]
            inputs:
              a: {shape: [2], dist: constant, value: 1}
            graph: |
              s = sum(1 / a)
            returns:
              - {name: s, value: s}
            solution: null
            starter: null
            """
        ),
        encoding="utf-8",
    )
    exercise = load_exercise(tmp_path)
    trial = make_trials(exercise, 0, 1)[0]
    cancelling = {"a": np.array([1e-3, -1.0000001e-3])}
    balanced = {"a": np.array([1.0, 1.0])}
    spreads = []
    for inputs in (cancelling, balanced):
        changed = type(trial)(index=0, sizes={}, inputs=inputs)
        spreads.append(float(compute_references(exercise, [changed]).spread[0]["s"]))
    total = abs(1 / 1e-3 - 1 / 1.0000001e-3)
    assert spreads[0] > 100 * total  # the terms (1000 each) set the scale, not their difference
    assert spreads[1] < 10
