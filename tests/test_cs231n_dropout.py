"""CS231n's dropout (exercises/cs231n/a2/dropout): the expected out comes from the seed the student's
dropout_forward is handed, through numpy's legacy global generator, so it is exact; a mask drawn from the
same stream in another spelling passes, one drawn from another stream does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exercise_folder, grade_source

from grader.exercise.reference import reference_returns
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials

EXERCISE_ID = "cs231n.a2.dropout"

DRAWN = """
    import numpy as np


    def dropout_forward(x, dropout_param):
        p = dropout_param["p"]
        if "seed" in dropout_param:
            np.random.seed(dropout_param["seed"])
        mask = (DRAW < p) / p
        return x * mask, (dropout_param, mask)


    def dropout_backward(dout, cache):
        return dout * cache[1]
"""


@pytest.fixture(scope="module")
def dropout() -> Exercise:
    return load_exercise(exercise_folder(EXERCISE_ID))


def test_the_expected_out_is_the_mask_of_the_seeded_global_generator(dropout: Exercise) -> None:
    trials = make_trials(dropout, 0, 30)
    expected = reference_returns(dropout, trials)
    state = np.random.get_state()
    try:
        for trial in trials:
            x, p, seed = trial.inputs["x"], float(trial.inputs["p"]), int(trial.inputs["seed"])
            np.random.seed(seed)  # what the handout's dropout_forward does first
            mask = np.random.rand(*x.shape) < p
            out, dx = expected[trial.index]["out"], expected[trial.index]["dx"]
            np.testing.assert_array_equal(out == 0, ~mask)
            np.testing.assert_allclose(out, x * mask / p, rtol=1e-15, atol=0)
            np.testing.assert_allclose(dx, trial.inputs["dout"] * mask / p, rtol=1e-15, atol=0)
    finally:
        np.random.set_state(state)
    assert len({int(t.inputs["seed"]) for t in trials}) == len(trials)  # a fresh seed every trial


@pytest.mark.parametrize(
    "draw",
    ["np.random.random_sample(x.shape)", "np.random.random(x.shape)", "np.random.uniform(size=x.shape)"],
)
def test_the_same_stream_spelled_otherwise_passes(dropout: Exercise, tmp_path: Path, draw: str) -> None:
    result = grade_source(dropout, tmp_path, "layers.py", DRAWN.replace("DRAW", draw), trials=40)
    assert {r.name: r.verdict.value for r in result.returns} == {"out": "pass", "dx": "pass"}


def test_a_binomial_mask_is_right_only_where_numpy_draws_it_as_rand_below_p() -> None:
    """numpy's legacy binomial(1, p) takes one uniform u per entry from the same stream: 1 where u <= p
    when p > 0.5, but where u > 1 - p when p <= 0.5 (its wrong/binomial_mask.py is logic on those)."""
    state = np.random.get_state()
    try:
        for p in (0.3, 0.45, 0.55, 0.7):
            np.random.seed(11)
            u = np.random.rand(40, 40)
            np.random.seed(11)
            drawn = np.random.binomial(1, p, size=(40, 40)).astype(bool)
            np.testing.assert_array_equal(drawn, u < p if p > 0.5 else u > 1 - p)
    finally:
        np.random.set_state(state)
