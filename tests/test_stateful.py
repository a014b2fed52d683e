"""Hand-ins whose answers change between identical calls (a call counter, a cache keyed by input): judged by
their values and told so, never `autograd` nor `instability` on the strength of a call that answered
otherwise; copies of autograd stay `autograd`, whatever state they keep, and none of them earns a point.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, copy_exercise, grade_source

from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.judging.provenance import pick_checks
from grader.outcomes import Verdict
from grader.results import ReturnResult

TRIALS = 20
SAME_INPUTS = "it returned different answers for the same inputs"

# The correct graph2 with a call counter: `{when}` decides, from the number of calls so far, on which
# calls user_grad is 1.5 times what it should be.
COUNTING = """
    import numpy as np
    import torch

    CALLS = [0]


    def graph2(W_np, x_np, b_np):
        CALLS[0] += 1
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        user_grad = (s * (1 - s)) @ x_np.T
        return f, W.grad, user_grad * 1.5 if {when} else user_grad
"""
COPY = """
    import torch

    CALLS = [0]
    SEEN = {{}}


    def graph2(W_np, x_np, b_np):
        CALLS[0] += 1
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        key = (W_np.tobytes(), x_np.tobytes(), b_np.tobytes())
        SEEN.setdefault(key, W.grad.clone())  # the first answer for an input, given again for it
        user_grad = {user_grad}
        return f, W.grad, user_grad * 1.5 if {when} else user_grad
"""


@pytest.fixture(scope="module")
def graph2() -> Exercise:
    return load_exercise(GRAPH2)


@pytest.fixture(scope="module")
def late(graph2: Exercise) -> tuple[int, int]:
    """A seed whose last trials are all checks, and the first of them: code that turns wrong there is
    wrong on those trials of the first pass, and right on them in the checked worker (a fresh process,
    its counter at 0): its answers changed, not autograd."""
    for seed in range(200):
        checks = set(pick_checks(graph2, make_trials(graph2, seed, TRIALS), seed))
        first = TRIALS
        while first - 1 in checks:
            first -= 1
        if first < TRIALS:
            return seed, first
    raise AssertionError("no seed of 200 checks the last trial")


def user_grad(exercise: Exercise, folder: Path, source: str, seed: int = 0) -> ReturnResult:
    result = grade_source(exercise, folder, "hw.py", source, trials=TRIALS, seed=seed)
    assert result.error is None, result.error
    by_name = {r.name: r for r in result.returns}
    assert by_name["f"].verdict is by_name["auto_grad"].verdict is Verdict.PASS
    return by_name["user_grad"]


def test_wrong_after_many_calls_is_logic_and_said_so_not_autograd(
    graph2: Exercise, tmp_path: Path, late: tuple[int, int]
) -> None:
    seed, first_checked = late
    judged = user_grad(graph2, tmp_path, COUNTING.format(when=f"CALLS[0] > {first_checked}"), seed)
    assert (judged.verdict, judged.score) == (Verdict.LOGIC, 0.0), judged.message
    assert SAME_INPUTS in judged.message, judged.message
    assert "off by 50% when called again with the same inputs" in judged.message, judged.message
    # the checked trials are ordinary trials of the first pass too: wrong there, judged by its values
    assert "comes from autograd" not in judged.message


def test_a_copy_is_still_autograd_on_the_same_trials(
    graph2: Exercise, tmp_path: Path, late: tuple[int, int]
) -> None:
    """The steady reruns that clear the counter above leave a copy, memoized per input or not, accused."""
    seed, _ = late
    for number, copied in enumerate(("W.grad", "SEEN[key]")):
        source = COPY.format(user_grad=copied, when="False")
        judged = user_grad(graph2, tmp_path / str(number), source, seed)
        assert (judged.verdict, judged.score) == (Verdict.AUTOGRAD, 0.0), judged.message
        assert SAME_INPUTS not in judged.message


def test_a_copy_that_changes_after_many_calls_earns_nothing(
    graph2: Exercise, tmp_path: Path, late: tuple[int, int]
) -> None:
    """Changing its answers takes the accusation away, and with it nothing but the word: no points."""
    seed, _ = late
    source = COPY.format(user_grad="SEEN[key]", when=f"CALLS[0] > {TRIALS}")  # wrong on reruns alone
    judged = user_grad(graph2, tmp_path, source, seed)
    assert (judged.verdict, judged.score) == (Verdict.LOGIC, 0.0), judged.message
    assert SAME_INPUTS in judged.message, judged.message


@pytest.mark.parametrize("credit", [0.0, 0.5])
def test_wrong_on_the_first_calls_only_is_logic_not_instability(tmp_path: Path, credit: float) -> None:
    """Its reruns come back right, as an unstable formula's would: the same call run again as it first
    ran shows the state, and no trial earns the exercise's instability credit."""
    folder = copy_exercise(
        tmp_path / "graph2",
        [("trials: 1000\n", f"trials: 1000\ninstability_credit: {credit}\n")],
    )
    exercise = load_exercise(folder)
    judged = user_grad(exercise, tmp_path, COUNTING.format(when="CALLS[0] <= 3"))
    assert (judged.verdict, judged.score) == (Verdict.LOGIC, 0.0), judged.message
    assert SAME_INPUTS in judged.message, judged.message
    assert "on trial 0 its user_grad was off by 50% on the first call" in judged.message, judged.message
    assert "unstable" not in judged.message


def test_a_hand_in_that_keeps_state_but_answers_alike_keeps_every_point(
    graph2: Exercise, tmp_path: Path
) -> None:
    source = CORRECT_GRAPH2.replace(
        "def graph2(W_np, x_np, b_np):\n",
        "CALLS = []\n\n\n    def graph2(W_np, x_np, b_np):\n        CALLS.append(W_np.copy())\n",
    )
    assert "CALLS.append" in source
    result = grade_source(graph2, tmp_path, "hw.py", source, trials=TRIALS)
    assert result.score == result.max_score == 10, [(r.name, r.message) for r in result.returns]


def test_a_plain_mistake_is_not_called_a_changing_answer(graph2: Exercise, tmp_path: Path) -> None:
    judged = user_grad(graph2, tmp_path, COUNTING.format(when="True"))
    assert judged.verdict is Verdict.LOGIC and SAME_INPUTS not in judged.message, judged.message


def test_wrong_after_some_calls_says_that_its_answers_changed(graph2: Exercise, tmp_path: Path) -> None:
    """Right on the first 10 calls, wrong after: the failing trials alone look like a plain mistake, and the
    smallest of them would replay right in a fresh process; a trial it got right, called again, shows why."""
    judged = user_grad(graph2, tmp_path, COUNTING.format(when="CALLS[0] > 10"))
    assert (judged.verdict, judged.score) == (Verdict.LOGIC, 0.0), judged.message
    assert SAME_INPUTS in judged.message, judged.message
    assert "on the first call and off by 50% when called again" in judged.message, judged.message
