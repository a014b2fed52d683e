"""The linear classifiers of CS231n A1 and EECS498 A2, handed in as the courses' own files: one
linear_svm.py or softmax.py (or linear_classifier.py) defines several graded functions, starts with the
course's imports (`from past.builtins import xrange`: the worker stands in for the `future` package, which
the grader does not install), and a formula without the max-shift is right on moderate scores and unstable
on the stress exercises' large ones.

Each exercise's own solution and known-wrong files are graded in test_cases.py; this is the hand-in side.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import EXERCISES, write_source

from grader.exercise.settings import Settings
from grader.exercise.spec import load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict

Run = Callable[..., subprocess.CompletedProcess[str]]
CS231N = EXERCISES / "cs231n" / "a1"
EECS498 = EXERCISES / "eecs498" / "a2"
# The first lines of CS231n A1's linear_svm.py and softmax.py from 2019 on (2017's: the last three)
HEADER = (
    "from builtins import range\nimport numpy as np\n"
    "from random import shuffle\nfrom past.builtins import xrange\n"
)


def verdicts(stdout: str) -> dict[str, dict[str, str]]:
    """exercise id -> return -> verdict, from `grader check --json`."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {line["exercise"]: {r["name"]: r["verdict"] for r in line["returns"]} for line in lines}


def body(path: Path) -> str:
    """A solution file without its import lines: the functions alone, to put in one course file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not re.match(r"(import|from) \w", line)).strip() + "\n"


def course_file(path: Path, header: str, *solutions: Path) -> Path:
    return write_source(path, header + "\n\n" + "\n\n\n".join(body(s) for s in solutions))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("linear")


def test_a_whole_linear_svm_py_with_the_course_header_is_graded_on_both_svm_exercises(
    run_grader: Run, work: Path
) -> None:
    hand_in = course_file(
        work / "linear_svm.py",
        HEADER,
        CS231N / "svm_loss_naive" / "solution.py",
        CS231N / "svm_loss_vectorized" / "solution.py",
    )
    proc = run_grader("check", CS231N, hand_in, "--trials", "10", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdicts(proc.stdout) == {
        "cs231n.a1.svm_loss_naive": {"loss": "pass", "dW": "pass"},
        "cs231n.a1.svm_loss_vectorized": {"loss": "pass", "dW": "pass"},
    }


def test_softmax_without_the_shift_passes_on_moderate_scores_and_is_unstable_on_large_ones(
    run_grader: Run, work: Path
) -> None:
    unshifted = """
        def softmax_loss_naive(W, X, y, reg):
            loss, dW = 0.0, np.zeros_like(W)
            for i in xrange(X.shape[0]):
                p = np.exp(X[i].dot(W))  # no max-shift
                p /= np.sum(p)
                loss -= np.log(p[y[i]])
                for j in range(W.shape[1]):
                    dW[:, j] += (p[j] - (j == y[i])) * X[i]
            loss = loss / X.shape[0] + reg * np.sum(W * W)
            return loss, dW / X.shape[0] + 2 * reg * W


        def softmax_loss_vectorized(W, X, y, reg):
            N = X.shape[0]
            p = np.exp(X.dot(W))  # no max-shift
            p /= np.sum(p, axis=1, keepdims=True)
            loss = -np.mean(np.log(p[np.arange(N), y])) + reg * np.sum(W * W)
            p[np.arange(N), y] -= 1
            return loss, X.T.dot(p) / N + 2 * reg * W
    """
    hand_in = write_source(work / "softmax.py", HEADER + textwrap.dedent(unshifted))
    proc = run_grader("check", CS231N, hand_in, "--trials", "20", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    unstable = {"loss": "instability", "dW": "instability"}
    assert verdicts(proc.stdout) == {
        "cs231n.a1.softmax_loss_naive": {"loss": "pass", "dW": "pass"},
        "cs231n.a1.softmax_loss_naive_stress": unstable,
        "cs231n.a1.softmax_loss_vectorized": {"loss": "pass", "dW": "pass"},
        "cs231n.a1.softmax_loss_vectorized_stress": unstable,
    }


def test_a_whole_linear_classifier_py_is_graded_on_the_four_eecs498_exercises(
    run_grader: Run, work: Path
) -> None:
    names = ("svm_loss_naive", "svm_loss_vectorized", "softmax_loss_naive", "softmax_loss_vectorized")
    hand_in = course_file(
        work / "linear_classifier.py", "import torch\n", *(EECS498 / n / "solution.py" for n in names)
    )
    proc = run_grader("check", EECS498, hand_in, "--trials", "10", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdicts(proc.stdout) == {f"eecs498.a2.{n}": {"loss": "pass", "dW": "pass"} for n in names}


def test_eecs498_hands_out_torch_tensors_and_a_python_float(work: Path) -> None:
    exercise = load_exercise(EECS498 / "svm_loss_vectorized")
    probe = write_source(
        work / "probe" / "linear_classifier.py",
        """
        import torch


        def svm_loss_vectorized(W, X, y, reg):
            assert W.dtype == X.dtype == torch.float64 and y.dtype == torch.int64, (W.dtype, X.dtype, y.dtype)
            assert W.device.type == X.device.type == y.device.type == "cpu"
            assert type(reg) is float, type(reg)
            N = X.shape[0]
            scores = X.mm(W)
            margins = (scores - scores[torch.arange(N), y].view(-1, 1) + 1).clamp(min=0)
            margins[torch.arange(N), y] = 0
            mask = (margins > 0).double()
            mask[torch.arange(N), y] = -mask.sum(dim=1)
            loss = margins.sum() / N + reg * torch.sum(W * W)
            return loss, X.t().mm(mask) / N + 2 * reg * W
        """,
    )
    result = grade(exercise, submission_from_path(probe, exercise.spec.entry), Settings(0, 10))
    assert result.error is None, result.error
    got: dict[str, Any] = {r.name: r.verdict for r in result.returns}
    assert got == {"loss": Verdict.PASS, "dW": Verdict.PASS}
