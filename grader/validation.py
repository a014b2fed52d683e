"""`grader validate`: checks an exercise's gradients, its reference solution and its known-wrong solutions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.grading import grade
from grader.reference import forward_values, reference_returns
from grader.results import SubmissionResult
from grader.spec import Exercise, Verdict
from grader.submissions import submission_from_path
from grader.trials import Trial, make_trials

FD_TRIALS = 3
FD_STEP = 1e-6
FD_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def validate(
    exercise: Exercise,
    seed: int,
    trial_count: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Check]:
    def note(text: str) -> None:
        if progress is not None:
            progress(text)

    checks = [_finite_differences(exercise, make_trials(exercise, seed, FD_TRIALS))]
    trials = trial_count or min(exercise.spec.trials, 200)
    if exercise.spec.solution is not None:
        note(f"{exercise.id}: grading the reference solution")
        result = _grade_file(exercise, exercise.spec.solution, seed, trials)
        bad = [r for r in result.returns if r.verdict is not Verdict.PASS]
        detail = "passes every return" if not bad and result.error is None else _summary(result)
        checks.append(
            Check(f"reference solution {exercise.spec.solution}", not bad and result.error is None, detail)
        )
    for wrong in exercise.spec.wrong:
        note(f"{exercise.id}: grading {wrong.file}")
        result = _grade_file(exercise, wrong.file, seed, trials)
        verdicts = {r.name: r.verdict for r in result.returns}
        mismatched = {n: (v, verdicts[n]) for n, v in wrong.expect.items() if verdicts[n] is not v}
        if mismatched:
            detail = "; ".join(f"{n}: expected {e.value}, got {g.value}" for n, (e, g) in mismatched.items())
        else:
            detail = ", ".join(f"{n}={v.value}" for n, v in wrong.expect.items())
        checks.append(Check(f"known-wrong {wrong.file} ({wrong.mistake})", not mismatched, detail))
    return checks


def _grade_file(exercise: Exercise, relative: str, seed: int, trials: int) -> SubmissionResult:
    submission = submission_from_path(exercise.path_of(relative), exercise.spec.entry)
    return grade(exercise, submission, seed, trials)


def _summary(result: SubmissionResult) -> str:
    if result.error is not None:
        return f"error ({result.error.kind}): {result.error.message}"
    return "; ".join(
        f"{r.name}: {r.verdict.value} — {r.message}" for r in result.returns if r.verdict is not Verdict.PASS
    )


def _finite_differences(exercise: Exercise, trials: list[Trial]) -> Check:
    expected = reference_returns(exercise, trials)
    worst = 0.0
    checked = 0
    for ret in exercise.spec.returns:
        target = ret.grad or ret.vjp
        if target is None:
            continue
        for trial in trials:
            upstream = trial.inputs[ret.vjp.upstream] if ret.vjp is not None else None

            def objective(
                x: np.ndarray,
                of: str = target.of,
                wrt: str = target.wrt,
                trial: Trial = trial,
                upstream: np.ndarray | None = upstream,
            ) -> float:
                value = forward_values(exercise, trial, {wrt: x})[of]
                return float(np.sum(value * upstream) if upstream is not None else np.sum(value))

            base = np.array(trial.inputs[target.wrt], dtype=np.float64)
            numeric = np.zeros_like(base)
            for k in range(base.size):
                step = FD_STEP * max(1.0, abs(base.flat[k]))
                plus, minus = base.copy(), base.copy()
                plus.flat[k] += step
                minus.flat[k] -= step
                numeric.flat[k] = (objective(plus) - objective(minus)) / (2 * step)
            analytic = expected[trial.index][ret.name]
            scale = max(1.0, float(np.max(np.abs(analytic))) if analytic.size else 1.0)
            worst = max(worst, float(np.max(np.abs(numeric - analytic))) / scale if analytic.size else 0.0)
            checked += 1
    ok = worst <= FD_TOLERANCE
    detail = (
        f"autograd matches central differences on {checked} gradient checks (max scaled error {worst:.1e})"
        if checked
        else "no gradient returns to check"
    )
    if not ok:
        detail = (
            f"autograd and central differences disagree by {worst:.1e} (scaled; allowed {FD_TOLERANCE:.0e}): "
            "a non-differentiable point in the graph, or inputs where it is ill-conditioned"
        )
    return Check("gradients vs finite differences", ok, detail)
