"""Naming the mistake: a logic return's values are matched against each candidate mistake on every trial.

The student's values are made here from the references themselves (no worker needed): the right values
changed the way a mistake would change them, or in ways no candidate explains.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import GRAPH2, copy_exercise, grade_source

from grader.errors import SpecError
from grader.exercise.reference import References, compute_references
from grader.exercise.spec import Exercise, ReturnSpec, load_exercise
from grader.exercise.trials import make_trials
from grader.judging.compare import Comparison, compare_many
from grader.judging.naming.diagnosis import Diagnosis, diagnose
from grader.outcomes import MistakeFamily, Verdict
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Returned

TRIALS = 40

DECLARED = """
misconceptions:
  - name: tanh for sigmoid
    return: user_grad
    expr: (1 - tanh(W_np @ x_np + b_np) ** 2) @ x_np.T
    feedback: the layer is a sigmoid, not a tanh
"""


@pytest.fixture(scope="module")
def graph2_refs() -> tuple[Exercise, References]:
    exercise = load_exercise(GRAPH2)
    return exercise, compute_references(exercise, make_trials(exercise, 0, TRIALS))


def diagnosed(
    exercise: Exercise, references: References, name: str, change: Callable[[np.ndarray, int], np.ndarray]
) -> Diagnosis | None:
    spec = next(r for r in exercise.spec.returns if r.name == name)
    returned = {
        t.index: Returned(
            ReturnedArray(name=name, ok=True, dtype="float64", source="numpy"),
            change(references.expected[t.index][name], t.index),
        )
        for t in references.trials
    }
    return diagnose(exercise, references, spec, returned, _compared(spec, references, returned))


def _compared(
    spec: ReturnSpec, references: References, returned: dict[int, Returned]
) -> dict[int, Comparison]:
    trials = sorted(returned)
    judged = compare_many(
        spec,
        trials,
        [references.expected[i][spec.name] for i in trials],
        [returned[i].array for i in trials],
        ["float64"] * len(trials),
        [references.spread[i][spec.name] for i in trials],
    )
    return {c.trial: c for c in judged}


@pytest.mark.parametrize(
    ("change", "name"),
    [
        (lambda e, _: e.T, "transposed"),
        (lambda e, _: -e, "sign flipped"),
        (lambda e, _: 2 * e, "twice the value"),
        (lambda e, _: e / 2, "half the value"),
    ],
    ids=["transposed", "sign", "twice", "half"],
)
def test_standard_mistakes_are_named(
    graph2_refs: tuple[Exercise, References], change: Callable[[np.ndarray, int], np.ndarray], name: str
) -> None:
    exercise, references = graph2_refs
    found = diagnosed(exercise, references, "user_grad", change)
    assert found is not None and found.name.startswith(name), found
    assert found.feedback


def test_values_within_rounding_of_a_mistake_still_match_it(graph2_refs: tuple[Exercise, References]) -> None:
    exercise, references = graph2_refs
    found = diagnosed(exercise, references, "auto_grad", lambda e, _: 2 * e * (1 + 1e-15))
    assert found is not None and found.name.startswith("twice the value")


def test_a_mistake_that_matches_no_candidate_is_named_by_none(
    graph2_refs: tuple[Exercise, References],
) -> None:
    exercise, references = graph2_refs
    rng = np.random.default_rng(1)
    assert diagnosed(exercise, references, "user_grad", lambda e, _: e + rng.uniform(0.1, 1, e.shape)) is None
    assert diagnosed(exercise, references, "user_grad", lambda e, _: 3 * e) is None
    # Right on most trials, transposed on one: not the transposed mistake (it would be wrong everywhere).
    assert diagnosed(exercise, references, "user_grad", lambda e, i: e.T if i == 5 else e) is None
    # Candidates are tried on the first trials before the others: a match there is not enough. Transposed
    # on every trial but the last few, where the sign is flipped instead: neither mistake, on all of them.
    late = TRIALS - 3
    assert diagnosed(exercise, references, "user_grad", lambda e, i: e.T if i < late else -e) is None
    found = diagnosed(exercise, references, "user_grad", lambda e, i: e.T)
    assert found is not None and found.name.startswith("transposed")


def test_failures_confined_to_the_diagonal_or_a_row_are_said_so(
    graph2_refs: tuple[Exercise, References],
) -> None:
    exercise, references = graph2_refs

    def diagonal(e: np.ndarray, _: int) -> np.ndarray:
        changed: np.ndarray = e + np.eye(e.shape[0]) * 0.5
        return changed

    def last_row(e: np.ndarray, _: int) -> np.ndarray:
        changed: np.ndarray = e.copy()
        changed[-1] += 0.5
        return changed

    found = diagnosed(exercise, references, "user_grad", diagonal)
    assert found is not None and found.name == "only the diagonal is wrong"
    found = diagnosed(exercise, references, "user_grad", last_row)
    assert found is not None and found.name.startswith("only one row is wrong")


def test_a_misconception_declared_in_the_yaml_is_named_with_its_feedback(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2", append=DECLARED))
    references = compute_references(exercise, make_trials(exercise, 0, TRIALS))

    def tanh_layer(_: np.ndarray, index: int) -> np.ndarray:
        trial = references.trials[index]
        w, x, b = (trial.inputs[n] for n in ("W_np", "x_np", "b_np"))
        layer: np.ndarray = (1 - np.tanh(w @ x + b) ** 2) @ x.T
        return layer

    found = diagnosed(exercise, references, "user_grad", tanh_layer)
    assert found == Diagnosis(
        "tanh for sigmoid", "the layer is a sigmoid, not a tanh", MistakeFamily.DECLARED
    )


@pytest.mark.parametrize(
    ("block", "field", "message"),
    [
        (
            DECLARED.replace("return: user_grad", "return: nope"),
            "misconceptions[0].return",
            "'nope' is not a return",
        ),
        (
            DECLARED.replace("(1 - tanh", "(1 - tanhh"),
            "misconceptions[0].expr",
            "'tanhh' is not an allowed function",
        ),
    ],
    ids=["unknown-return", "unknown-function"],
)
def test_a_broken_misconception_is_a_spec_error_naming_its_field(
    tmp_path: Path, block: str, field: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        load_exercise(copy_exercise(tmp_path / "graph2", append=block))
    assert caught.value.field == field
    assert message in caught.value.message
    assert caught.value.line is not None


WRONG_FORWARD = """
    import numpy as np
    import torch


    def graph2(W_np, x_np, b_np):
        W = torch.tensor(W_np, requires_grad=True)
        g = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np))
        f = torch.sum(g * g)  # the forward is wrong: sum(g**2) instead of sum(g)
        f.backward()
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        return f, SCALE * W.grad, (s * (1 - s)) @ x_np.T
"""


@pytest.mark.parametrize(("scale", "named"), [(1, True), (3, False)], ids=["own-derivative", "wrong-even-so"])
def test_a_gradient_of_the_students_own_wrong_forward_is_told_apart(
    graph2: Exercise, tmp_path: Path, scale: int, named: bool
) -> None:
    """The student's own f, run again on inputs moved along a random direction, has the finite difference
    its gradient predicts: the gradient is right for that f, and the forward is what to fix."""
    result = grade_source(graph2, tmp_path, "hw.py", WRONG_FORWARD.replace("SCALE", str(scale)), trials=20)
    verdicts = {r.name: r.verdict for r in result.returns}
    assert verdicts == {"f": Verdict.LOGIC, "auto_grad": Verdict.LOGIC, "user_grad": Verdict.PASS}
    auto_grad = next(r for r in result.returns if r.name == "auto_grad")
    own = auto_grad.misconception == "the derivative of your own f, which is wrong"
    assert own is named, auto_grad.misconception
    if named:
        assert "Fix the computation of f first" in auto_grad.feedback
