"""Declared misconceptions name what they describe: matched within their own rounding envelope.

The exercise here declares a misconception the way authors write them, from the graph's names: the
prediction without its intercept as `pred - c`, which passes through the intercept c (300 to 600). Its
float64 values carry c's rounding (about 1e-13), ten times the envelope the right gradient gives
them (about 1e-14); a student who computes w * x directly is exact, and used to be named by nothing: the
match was judged within the right formula's envelope.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from conftest import grader_command, library, write_exercise

from grader.exercise.reference import References, compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import Trial, make_trials
from grader.judging.compare import compare_many
from grader.judging.naming.diagnosis import Diagnosis, diagnose, near_misses
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Returned

TRIALS = 40
NAME = "the prediction without its intercept, not the input"

INTERCEPT = f"""
id: intercept
title: Gradient of a linear model with a large intercept
entry: intercept
args: [w, x, c]
sizes:
  n: {{min: 2, max: 9}}
inputs:
  w: {{shape: [n], dist: normal}}
  x: {{shape: [n], dist: normal}}
  c: {{dist: uniform, low: 300, high: 600, type: python}}
graph: |
  pred = w * x + c
  loss = sum(pred)
returns:
  - {{name: dw, grad: {{of: loss, wrt: w}}, by_hand: true}}
trials: 40
points: {{dw: 1}}
solution: solution.py
starter: null
misconceptions:
  - name: {NAME}
    return: dw
    expr: pred - c
    feedback: d loss / dw is x; w * x is the prediction itself, without its intercept
  - name: the intercept kept in the gradient
    return: dw
    expr: x + c
    feedback: the intercept c does not depend on w, and drops out of the gradient
wrong:
  - file: wrong/prediction.py
    mistake: "dw = w * x: the prediction, not its derivative"
    expect: {{dw: logic}}
    misconceptions: {{dw: "the prediction without its intercept"}}
  - file: wrong/prediction_scaled.py
    mistake: "dw = 1.001 * w * x: near the declared misconception, but not it"
    expect: {{dw: logic}}
    misconceptions: {{dw: "the prediction without its intercept"}}
"""

FILES = {
    "solution.py": """
        import numpy as np


        def intercept(w, x, c):
            return np.array(x, dtype=np.float64)
        """,
    "wrong/prediction.py": """
        def intercept(w, x, c):
            return w * x
        """,
    "wrong/prediction_scaled.py": """
        def intercept(w, x, c):
            return 1.001 * w * x
        """,
}


def intercept_folder(target: Path) -> Path:
    (target / "wrong").mkdir(parents=True)
    return write_exercise(target, INTERCEPT, FILES)


@pytest.fixture(scope="module")
def intercept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Exercise, References]:
    exercise = load_exercise(intercept_folder(tmp_path_factory.mktemp("intercept") / "intercept"))
    return exercise, compute_references(exercise, make_trials(exercise, 0, TRIALS))


Student = Callable[[Trial], np.ndarray]


def returned_by(references: References, name: str, student: Student) -> dict[int, Returned]:
    returned = {}
    for trial in references.trials:
        array = np.asarray(student(trial))
        description = ReturnedArray(name=name, ok=True, dtype=str(array.dtype), source="numpy")
        returned[trial.index] = Returned(description, array)
    return returned


def diagnosed(exercise: Exercise, references: References, name: str, student: Student) -> Diagnosis | None:
    spec = next(r for r in exercise.spec.returns if r.name == name)
    returned = returned_by(references, name, student)
    trials = sorted(returned)
    judged = compare_many(
        spec,
        trials,
        [references.expected[i][name] for i in trials],
        [returned[i].array for i in trials],
        [returned[i].dtype for i in trials],
        [references.spread[i][name] for i in trials],
    )
    return diagnose(exercise, references, spec, returned, {c.trial: c for c in judged})


def test_a_misconception_computed_through_a_large_intermediate_is_named_in_float64(
    intercept: tuple[Exercise, References],
) -> None:
    exercise, references = intercept
    found = diagnosed(exercise, references, "dw", lambda t: t.inputs["w"] * t.inputs["x"])
    assert found is not None and found.name == NAME, found


def test_a_float32_student_with_the_misconception_is_named(intercept: tuple[Exercise, References]) -> None:
    exercise, references = intercept

    def in_float32(trial: Trial) -> np.ndarray:
        w, x = (trial.inputs[n].astype(np.float32) for n in ("w", "x"))
        product: np.ndarray = w * x
        return product

    found = diagnosed(exercise, references, "dw", in_float32)
    assert found is not None and found.name == NAME, found


def test_values_near_the_misconception_but_beyond_its_envelope_are_not_named(
    intercept: tuple[Exercise, References],
) -> None:
    exercise, references = intercept
    assert diagnosed(exercise, references, "dw", lambda t: 1.001 * t.inputs["w"] * t.inputs["x"]) is None
    # and the report says how far they were, in the misconception's own envelopes
    spec = exercise.spec.returns[0]
    returned = returned_by(references, "dw", lambda t: 1.001 * t.inputs["w"] * t.inputs["x"])
    misses = {m.name: m for m in near_misses(exercise, references, spec, returned)}
    assert misses[NAME].envelopes > 1 and misses[NAME].beyond > 0 and misses[NAME].separated


def test_the_right_values_are_never_named_even_where_a_misconception_is_within_rounding(
    intercept: tuple[Exercise, References],
) -> None:
    """`pred` without its term `c` (a standard mistake) is dw unchanged: it agrees with the right values
    on every trial, and used to name them. No candidate may name right values, in float64 or float32."""
    exercise, references = intercept
    assert diagnosed(exercise, references, "dw", lambda t: np.array(t.inputs["x"])) is None
    assert diagnosed(exercise, references, "dw", lambda t: t.inputs["x"].astype(np.float32)) is None


def _bundled() -> list[str]:
    return sorted(library())


@pytest.mark.parametrize("exercise_id", _bundled())
def test_correct_values_of_a_bundled_exercise_are_named_by_no_candidate(exercise_id: str) -> None:
    """The expected values themselves, and them rounded to float32, as a right student returns them:
    no declared misconception, standard mistake or mutant may claim them."""
    exercise = load_exercise(library()[exercise_id])
    references = compute_references(exercise, make_trials(exercise, 0, 16))
    for spec in exercise.spec.returns:
        for dtype in (np.float64, np.float32):
            returned = returned_by(
                references, spec.name, partial(_right, references, name=spec.name, dtype=dtype)
            )
            trials = sorted(returned)
            judged = compare_many(
                spec,
                trials,
                [references.expected[i][spec.name] for i in trials],
                [returned[i].array for i in trials],
                [returned[i].dtype for i in trials],
                [references.spread[i][spec.name] for i in trials],
            )
            found = diagnose(exercise, references, spec, returned, {c.trial: c for c in judged})
            assert found is None, (exercise_id, spec.name, dtype, found)


def _right(references: References, trial: Trial, name: str, dtype: type[np.generic]) -> np.ndarray:
    right: np.ndarray = references.expected[trial.index][name].astype(dtype)
    return right


def test_validate_says_how_far_a_misconception_that_did_not_fire_was(tmp_path: Path) -> None:
    folder = intercept_folder(tmp_path / "intercept")
    proc = subprocess.run(
        [*grader_command(), "validate", str(folder), "--trials", "24"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    out = " ".join(proc.stdout.split())  # the report wraps its lines to the terminal
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "ok known-wrong wrong/prediction.py (dw = w * x: the prediction, not its derivative): "
        f"dw=logic; dw: {NAME}"
    ) in out
    failed = out[out.index("FAIL known-wrong wrong/prediction_scaled.py") :]
    assert f"got None — closest: misconception '{NAME}' at " in failed
    # 1.001 * w * x is beyond every entry's envelope, on the 16 trials every candidate is tried on first
    assert re.search(r"envelopes on dw \(needs <= 1\), (\d+) of \1 entries beyond over 16 trials", failed), (
        failed
    )
    assert "likely cause: the file computes something else than the misconception's expression" in failed
    assert (
        f"see it: grader repro {folder} {folder / 'wrong' / 'prediction_scaled.py'} --seed 0 --trial "
        in failed
    )
    # the second misconception has no known-wrong file: nothing shows it can fire
    assert (
        "FAIL declared misconceptions expected by known-wrong files: 1 of 2 declared misconceptions are "
        "expected by no known-wrong file: 'the intercept kept in the gradient' (return dw)"
    ) in out


def test_a_results_near_misses_are_kept_in_the_gradebook(tmp_path: Path) -> None:
    from grader import gradebook
    from grader.grading import grade
    from grader.handin.discover import submission_from_path

    folder = intercept_folder(tmp_path / "intercept")
    exercise = load_exercise(folder)
    submission = submission_from_path(folder / "wrong" / "prediction_scaled.py", exercise.spec.entry)
    result = grade(exercise, submission, Settings(0, 20))
    (ret,) = result.returns
    assert ret.misconception is None
    assert {m.name for m in ret.near_misses} == {NAME, "the intercept kept in the gradient"}
    assert gradebook.decode(gradebook.encode(result)).returns[0].near_misses == ret.near_misses
