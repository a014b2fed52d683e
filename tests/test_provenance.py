"""Returns to be derived by hand that come from autograd get the verdict autograd and no points, however
they were taken (`.grad`, `autograd.grad`, `torch.func`, a backward pass run by torch), in any precision;
a hand derivation never does, even one written with torch operations next to a backward() call. The
hostile hand-ins (memoizing, probing, restoring the engine, forward mode, leaving mid-check...) are in
test_provenance_attacks.py."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GRAPH2, copy_exercise, exercise_folder, grade_source, write_source

from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.provenance import CHECKS, pick_checks
from grader.outcomes import Verdict
from grader.results import SubmissionResult

FORWARD = """
    import numpy as np
    import torch


    def graph2(W_np, x_np, b_np):
        W = torch.tensor(W_np, dtype=DTYPE, requires_grad=True)
        x, b = torch.tensor(x_np, dtype=DTYPE), torch.tensor(b_np, dtype=DTYPE)
        z = W @ x + b
        z.retain_grad()
        f = torch.sigmoid(z).sum()
        f.backward(retain_graph=True)
"""
COPIES = {
    "grad_numpy": "user_grad = W.grad.numpy().copy()",
    "grad_detach_clone": "user_grad = W.grad.detach().clone()",
    "intermediate_grad": "user_grad = z.grad.clone() @ x.T  # dz from autograd, the last step by hand",
    "autograd_grad": "(user_grad,) = torch.autograd.grad(f, W)",
    "fresh_graph": (
        "W2 = W.detach().clone().requires_grad_()\n"
        "        (user_grad,) = torch.autograd.grad(torch.sigmoid(W2 @ x + b).sum(), W2)"
    ),
    "func_grad": "user_grad = torch.func.grad(lambda w: torch.sigmoid(w @ x + b).sum())(W.detach())",
    "func_vjp": (
        "_, pull = torch.func.vjp(lambda w: torch.sigmoid(w @ x + b), W.detach())\n"
        "        (user_grad,) = pull(torch.ones_like(z))"
    ),
    "jacobian": (
        "user_grad = torch.autograd.functional.jacobian(lambda w: torch.sigmoid(w @ x + b).sum(), W.detach())"
    ),
}
HAND = {
    "numpy": (
        "u = W_np @ x_np + b_np\n        s = 1 / (1 + np.exp(-u))\n        user_grad = (s * (1 - s)) @ x_np.T"
    ),
    "torch_ops": (
        "with torch.no_grad():\n"
        "            s = torch.sigmoid(z)  # the forward value, used by hand\n"
        "            user_grad = (s * (1 - s)) @ x.T"
    ),
    "detached_forward": (
        "s = torch.sigmoid(z).detach().numpy()\n        user_grad = (s * (1 - s)) @ x.numpy().T"
    ),
}
DTYPES = {"float64": "torch.float64", "float32": "torch.float32", "float16": "torch.float16"}


def source(body: str, dtype: str) -> str:
    return FORWARD.replace("DTYPE", DTYPES[dtype]) + f"        {body}\n        return f, W.grad, user_grad\n"


def graded(graph2: Exercise, tmp_path: Path, name: str, body: str, dtype: str) -> SubmissionResult:
    return grade_source(graph2, tmp_path, f"{name}_{dtype}.py", source(body, dtype), trials=20)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("copy", sorted(COPIES))
def test_every_autograd_copy_is_named_and_scores_nothing(
    graph2: Exercise, tmp_path: Path, copy: str, dtype: str
) -> None:
    result = graded(graph2, tmp_path, copy, COPIES[copy], dtype)
    by_name = {r.name: r for r in result.returns}
    user_grad = by_name["user_grad"]
    assert user_grad.verdict is Verdict.AUTOGRAD, user_grad.message
    assert user_grad.score == 0
    assert "user_grad changed when only autograd's results changed" in user_grad.message
    assert "it comes from autograd, not from your own derivation" in user_grad.message
    # auto_grad is autograd's by design, and f is no gradient: both keep their verdicts
    assert by_name["auto_grad"].verdict in (Verdict.PASS, Verdict.PRECISION)
    assert by_name["f"].verdict in (Verdict.PASS, Verdict.PRECISION)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("hand", sorted(HAND))
def test_a_hand_derivation_is_never_taken_for_autograd(
    graph2: Exercise, tmp_path: Path, hand: str, dtype: str
) -> None:
    result = graded(graph2, tmp_path, hand, HAND[hand], dtype)
    assert Verdict.AUTOGRAD not in {r.verdict for r in result.returns}, [r.message for r in result.returns]
    assert result.score == result.max_score, [r.message for r in result.returns]


@pytest.fixture(scope="module")
def batchnorm() -> Exercise:
    return load_exercise(exercise_folder("batchnorm_backward"))


def test_a_backward_pass_run_by_torch_is_autograd_on_every_return(
    batchnorm: Exercise, tmp_path: Path
) -> None:
    body = """
        import torch


        def batchnorm_backward(dout, cache):
            x_np, gamma_np, beta_np, eps = cache
            x, gamma, beta = (torch.tensor(a, requires_grad=True) for a in (x_np, gamma_np, beta_np))
            mu = x.mean(0)
            out = gamma * (x - mu) / torch.sqrt(((x - mu) ** 2).mean(0) + float(eps)) + beta
            out.backward(torch.tensor(dout))
            return x.grad.numpy(), gamma.grad.numpy(), beta.grad.numpy()
    """
    result = grade_source(batchnorm, tmp_path, "torch_backward.py", body, trials=20)
    assert {r.name: r.verdict for r in result.returns} == dict.fromkeys(
        ("dx", "dgamma", "dbeta"), Verdict.AUTOGRAD
    )
    assert result.score == 0


def test_the_cli_reports_autograd_in_json(
    run_grader: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path = write_source(tmp_path / "copy.py", source(COPIES["grad_numpy"], "float64"))
    proc = run_grader("check", GRAPH2, path, "--trials", "12", "--json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    verdicts = {r["name"]: r["verdict"] for r in result["returns"]}
    assert verdicts["user_grad"] == "autograd"
    assert result["score"] == 6  # f and auto_grad keep their points


def test_the_checked_trials_are_few_and_follow_the_seed(graph2: Exercise) -> None:
    """Drawn from the seed: another seed (every grading that counts draws a secret one), other trials; the
    same seed, the same trials (a run replayed with its seed gives its result again)."""
    trials = make_trials(graph2, 0, 20)
    drawn = {pick_checks(graph2, trials, seed) for seed in range(20)}
    assert all(
        len(set(checks)) == CHECKS and set(checks) <= {t.index for t in trials[1:]} for checks in drawn
    )
    assert len(drawn) > 10
    assert pick_checks(graph2, trials, 7) == pick_checks(graph2, trials, 7)
    assert pick_checks(graph2, trials, 0, only_trial=3) == ()  # a replay of one trial checks nothing
    assert [len(pick_checks(graph2, make_trials(graph2, 0, n), 0)) for n in (1, 2, 4, 6)] == [0, 1, 2, 3]


def test_an_exercise_without_returns_by_hand_checks_nothing(graph2: Exercise) -> None:
    returns = [r.model_copy(update={"by_hand": False}) for r in graph2.spec.returns]
    plain = dataclasses.replace(graph2, spec=graph2.spec.model_copy(update={"returns": returns}))
    assert pick_checks(plain, make_trials(plain, 0, 20), 0) == ()


def test_the_in_notebook_check_says_that_provenance_is_checked_when_graded(tmp_path: Path) -> None:
    """`grader.check` runs the trials in this process, where no check of provenance can hold (it needs a
    worker of its own, autograd wrong in it from the start): it changes nothing of torch, says so, and
    never says "derived by hand"."""
    import torch
    from torch.autograd.variable import Variable

    import grader

    engine, make_engine = Variable._execution_engine, torch._C._ImperativeEngine
    namespace: dict[str, Any] = {}
    hand = textwrap.dedent(source(HAND["numpy"], "float64")).replace("def graph2", "def hand_graph2")
    exec(textwrap.dedent(source(COPIES["autograd_grad"], "float64")) + hand, namespace)
    copied = grader.check(GRAPH2, namespace["graph2"], trials=12)
    by_name = {r.name: r for r in copied.result.returns}
    assert "not checked here that user_grad is derived by hand" in by_name["user_grad"].message
    right = grader.check(GRAPH2, graph2=namespace["hand_graph2"], trials=12)
    assert right.result.score == right.result.max_score, [r.message for r in right.result.returns]
    assert all("derived by hand" not in r.message.split("not checked here")[0] for r in right.result.returns)
    assert Variable._execution_engine is engine and torch._C._ImperativeEngine is make_engine


def test_an_unstable_formula_off_on_a_checked_trial_is_no_copy(tmp_path: Path) -> None:
    """softmax_large's naive float64 softmax overflows on every trial: on a checked trial its NaN is no proof
    of autograd. It gives the same NaN in the checked worker as in the ordinary one: instability, with the
    credit the exercise gives it, not autograd."""
    source = exercise_folder("softmax_large")
    folder = copy_exercise(tmp_path / "softmax_large", source=source, append="\ninstability_credit: 0.5\n")
    exercise = load_exercise(folder)
    naive = exercise.path_of("wrong/naive.py")
    result = grade(exercise, submission_from_path(naive, exercise.spec.entry), Settings(0, 12))
    assert {r.verdict for r in result.returns} == {Verdict.INSTABILITY}, [r.message for r in result.returns]
    assert all(r.score > 0 for r in result.returns)
