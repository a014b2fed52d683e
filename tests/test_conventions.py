"""Other course years' conventions: graded wrong, and named "right under the <name> convention (<rule>)" on
each return a student's code written under them changes, never where the student follows the exercise's
own convention on another return that the convention changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import exercise_folder, grade_source, grader_run, line_of, write_exercise, write_source

from grader.errors import SpecError
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import MistakeFamily, Verdict
from grader.results import SubmissionResult

RIDGE = """
id: ridge
title: Ridge regression, this year with reg * sum(w * w)
entry: ridge
args: [X, y, w, reg]
sizes:
  N: {min: 2, max: 6}
  D: {min: 1, max: 4}
inputs:
  X: {shape: [N, D], dist: normal}
  y: {shape: [N], dist: normal}
  w: {shape: [D], dist: normal}
  reg: {dist: uniform, low: 0.5, high: 1, type: python}
graph: |
  residual = X @ w - y
  data_loss = mean(residual * residual)
  loss = data_loss + reg * sum(w * w)
returns:
  - {name: loss, value: loss}
  - {name: dw, grad: {of: loss, wrt: w}, by_hand: true}
trials: 40
solution: solution.py
starter: null
wrong:
  - file: wrong/half_reg.py
    mistake: "last year's 0.5 * reg * sum(w * w), with its gradient reg * w"
    expect: {loss: logic, dw: logic}
    misconceptions: {loss: "right under the 2016 convention", dw: "right under the 2016 convention"}
conventions:
  - name: "2016"
    rule: "0.5 * reg * sum(w * w), whose gradient is reg * w"
    graph: |
      loss = data_loss + 0.5 * reg * sum(w * w)
    feedback: this year the penalty is reg * sum(w * w), whose gradient is 2 * reg * w
"""

RIDGE_FILES = {
    "solution.py": """
        import numpy as np


        def ridge(X, y, w, reg):
            r = X @ w - y
            return np.mean(r * r) + reg * np.sum(w * w), 2 * X.T @ r / len(y) + 2 * reg * w
        """,
    "wrong/half_reg.py": """
        import numpy as np


        def ridge(X, y, w, reg):
            r = X @ w - y
            return np.mean(r * r) + 0.5 * reg * np.sum(w * w), 2 * X.T @ r / len(y) + reg * w
        """,
}

LABEL_2016 = "right under the 2016 convention (0.5 * reg * sum(w * w), whose gradient is reg * w)"


def ridge_folder(folder: Path, spec: str = RIDGE) -> Path:
    (folder / "wrong").mkdir(parents=True)
    write_exercise(folder, spec, RIDGE_FILES)
    return folder


# --- the spec ---------------------------------------------------------------------------------------------


def test_a_convention_loads_with_the_name_it_gives(tmp_path: Path) -> None:
    exercise = load_exercise(ridge_folder(tmp_path / "ridge"))
    (convention,) = exercise.spec.conventions
    assert convention.label == LABEL_2016
    assert convention.feedback.startswith("this year the penalty is")


def _broken(tmp_path: Path, old: str, new: str) -> tuple[str, SpecError]:
    assert old in RIDGE
    folder = ridge_folder(tmp_path / "ridge", RIDGE.replace(old, new, 1))
    text = (folder / "exercise.yaml").read_text(encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    return text, info.value


def test_a_convention_that_changes_nothing_is_refused_at_its_line(tmp_path: Path) -> None:
    text, error = _broken(
        tmp_path,
        "    graph: |\n      loss = data_loss + 0.5 * reg * sum(w * w)\n",
        "",
    )
    assert (error.line, error.field) == (line_of(text, '- name: "2016"'), "conventions[0]")
    assert "give graph (lines replacing the graph's of the same names" in error.message


def test_a_convention_line_for_no_line_of_the_graph_is_refused_at_that_line(tmp_path: Path) -> None:
    text, error = _broken(
        tmp_path,
        "      loss = data_loss + 0.5",
        "      penalty = 0.5 * reg * sum(w * w)\n      loss = data_loss + 0.5",
    )
    assert (error.line, error.field) == (line_of(text, "penalty = "), "conventions[0].graph")
    assert error.message.startswith(
        "'penalty' is not a line of the graph (it assigns data_loss, loss, residual)"
    )


def test_a_convention_line_outside_the_language_is_refused_at_that_line(tmp_path: Path) -> None:
    text, error = _broken(
        tmp_path, "      loss = data_loss + 0.5 * reg", "      loss = data_loss + 0.5 * np.reg"
    )
    assert (error.line, error.field) == (line_of(text, "np.reg"), "conventions[0].graph")
    assert "graph lines over the graph's names" in error.message


def test_a_convention_line_reading_what_the_graph_computes_later_is_refused(tmp_path: Path) -> None:
    text, error = _broken(
        tmp_path, "      loss = data_loss + 0.5 * reg * sum(w * w)", "      residual = X @ w - y + 0 * loss"
    )
    assert (error.line, error.field) == (line_of(text, "0 * loss"), "conventions[0].graph")
    assert "'loss' is not defined" in error.message
    assert "reads only what the graph computes before the line it replaces" in error.message


def test_a_reference_function_on_a_graph_exercise_is_refused(tmp_path: Path) -> None:
    text, error = _broken(
        tmp_path,
        "    graph: |\n      loss = data_loss + 0.5 * reg * sum(w * w)\n",
        "    reference: reference.py:ridge_2016\n",
    )
    assert (error.line, error.field) == (line_of(text, "reference: reference.py"), "conventions[0].reference")
    assert "this exercise has a graph, not a reference function" in error.message


def test_two_conventions_of_one_name_are_refused(tmp_path: Path) -> None:
    second = '  - name: "2016"\n    rule: again\n    graph: |\n      loss = data_loss\n'
    _, error = _broken(tmp_path, "    feedback: this year", second + "    feedback: this year")
    assert error.field == "conventions[1].name"
    assert "two conventions are named '2016'" in error.message


def test_a_convention_in_another_reference_file_is_refused(tmp_path: Path) -> None:
    source = exercise_folder("cs231n.a2.dropout")
    folder = tmp_path / "a2" / "dropout"
    shutil.copytree(source, folder)
    shutil.copytree(source.parent / "_support", folder.parent / "_support")
    spec = folder / "exercise.yaml"
    text = spec.read_text(encoding="utf-8").replace(
        "reference: reference.py:dropout_drop_probability", "reference: old.py:dropout"
    )
    spec.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert (info.value.line, info.value.field) == (
        line_of(text, "old.py:dropout"),
        "conventions[0].reference",
    )
    assert "'old.py:dropout' is not in the exercise's reference file: name a function of reference.py" in str(
        info.value
    )


# --- naming, through grade() on code written as those years' courses wrote it -----------------------------

DROPOUT_2016 = """
    import numpy as np


    def dropout_forward(x, dropout_param):
        p, mode = dropout_param['p'], dropout_param['mode']
        if 'seed' in dropout_param:
            np.random.seed(dropout_param['seed'])

        mask = None
        out = None

        if mode == 'train':
            ###########################################################################
            # TODO: Implement the training phase forward pass for inverted dropout.   #
            # Store the dropout mask in the mask variable.                            #
            ###########################################################################
            mask = (np.random.rand(*x.shape) >= p) / (1 - p)
            out = x * mask
        elif mode == 'test':
            out = x

        cache = (dropout_param, mask)
        out = out.astype(x.dtype, copy=False)

        return out, cache


    def dropout_backward(dout, cache):
        dropout_param, mask = cache
        mode = dropout_param['mode']

        dx = None
        if mode == 'train':
            dx = dout * mask
        elif mode == 'test':
            dx = dout
        return dx
"""

SVM_2016 = """
    import numpy as np
    from random import shuffle
    from past.builtins import xrange


    def svm_loss_naive(W, X, y, reg):
        dW = np.zeros(W.shape)  # initialize the gradient as zero

        # compute the loss and the gradient
        num_classes = W.shape[1]
        num_train = X.shape[0]
        loss = 0.0
        for i in xrange(num_train):
            scores = X[i].dot(W)
            correct_class_score = scores[y[i]]
            for j in xrange(num_classes):
                if j == y[i]:
                    continue
                margin = scores[j] - correct_class_score + 1  # note delta = 1
                if margin > 0:
                    loss += margin
                    dW[:, j] += X[i]
                    dW[:, y[i]] -= X[i]

        # Right now the loss is a sum over all training examples, but we want it
        # to be an average instead so we divide by num_train.
        loss /= num_train
        dW /= num_train

        # Add regularization to the loss.
        loss += 0.5 * reg * np.sum(W * W)
        dW += reg * W

        return loss, dW
"""


@pytest.fixture(scope="module")
def dropout() -> Exercise:
    return load_exercise(exercise_folder("cs231n.a2.dropout"))


@pytest.fixture(scope="module")
def svm() -> Exercise:
    return load_exercise(exercise_folder("cs231n.a1.svm_loss_naive"))


def _named(result: SubmissionResult) -> dict[str, tuple[Verdict, str | None, MistakeFamily | None]]:
    return {r.name: (r.verdict, r.misconception, r.mistake_family) for r in result.returns}


def test_2016_dropout_is_logic_and_named_right_under_its_convention(
    dropout: Exercise, tmp_path: Path
) -> None:
    result = grade_source(dropout, tmp_path, "layers.py", DROPOUT_2016, trials=60)
    label = "right under the 2016-17 CS231n convention (p is the probability to DROP a unit)"
    assert _named(result) == {
        "out": (Verdict.LOGIC, label, MistakeFamily.CONVENTION),
        "dx": (Verdict.LOGIC, label, MistakeFamily.CONVENTION),
    }
    feedback = {r.feedback for r in result.returns}
    assert len(feedback) == 1
    assert (
        "this course's p is the probability to keep one: use mask = rand < p and divide by p"
        in feedback.pop()
    )


def test_a_2016_svm_with_half_the_penalty_is_named_on_loss_and_dw(svm: Exercise, tmp_path: Path) -> None:
    result = grade_source(svm, tmp_path, "linear_svm.py", SVM_2016, trials=40)
    label = (
        "right under the winter 2016 CS231n convention (0.5 * reg * np.sum(W * W), whose gradient is reg * W)"
    )
    assert _named(result) == {
        "loss": (Verdict.LOGIC, label, MistakeFamily.CONVENTION),
        "dW": (Verdict.LOGIC, label, MistakeFamily.CONVENTION),
    }
    dw = next(r for r in result.returns if r.name == "dW")
    # the gradient of the student's own loss, as the convention's name already says: no second story
    assert "Fix the computation of loss first" not in dw.feedback
    assert "double both" in dw.feedback


def test_half_the_gradient_under_this_years_loss_is_no_convention(svm: Exercise, tmp_path: Path) -> None:
    source = SVM_2016.replace("loss += 0.5 * reg * np.sum(W * W)", "loss += reg * np.sum(W * W)")
    result = grade_source(svm, tmp_path, "linear_svm.py", source, trials=40)
    named = _named(result)
    assert named["loss"] == (Verdict.PASS, None, None)
    verdict, name, family = named["dW"]
    assert (verdict, family) == (Verdict.LOGIC, MistakeFamily.DECLARED)
    assert name == "regularisation gradient reg * W, not 2 * reg * W"


def test_half_the_penalty_under_this_years_gradient_is_no_convention(svm: Exercise, tmp_path: Path) -> None:
    source = SVM_2016.replace("dW += reg * W", "dW += 2 * reg * W")
    result = grade_source(svm, tmp_path, "linear_svm.py", source, trials=40)
    named = _named(result)
    assert named["dW"] == (Verdict.PASS, None, None)
    verdict, name, family = named["loss"]
    assert verdict is Verdict.LOGIC
    assert family is not MistakeFamily.CONVENTION, name


def test_the_solutions_are_never_named(dropout: Exercise, svm: Exercise) -> None:
    for exercise in (dropout, svm):
        assert exercise.spec.solution is not None
        path = exercise.path_of(exercise.spec.solution)
        result = grade(exercise, submission_from_path(path, exercise.spec.entry), Settings(0, 40))
        assert {r.name: (r.verdict, r.misconception) for r in result.returns} == {
            r.name: (Verdict.PASS, None) for r in exercise.spec.returns
        }


def test_check_tells_a_convention_as_one_and_counts_it_as_its_family(tmp_path: Path) -> None:
    folder = exercise_folder("cs231n.a2.dropout")
    path = write_source(tmp_path / "layers.py", DROPOUT_2016)
    proc = grader_run("check", folder, path, "--json", "--trials", 40)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert {r["name"]: r["mistake_family"] for r in result["returns"]} == {
        "out": "convention",
        "dx": "convention",
    }
    told = grader_run("check", folder, path, "--trials", 40)
    assert "dx: not this course's convention: right under the 2016-17 CS231n convention" in told.stdout
    assert "likely mistake" not in told.stdout


# --- grader validate -----------------------------------------------------------------------------------


def _validate(folder: Path) -> tuple[int, str]:
    proc = grader_run("validate", folder, "--trials", 24)
    return proc.returncode, " ".join(proc.stdout.split()) + proc.stderr


def test_validate_checks_a_convention_is_named_and_changes_a_return(tmp_path: Path) -> None:
    code, out = _validate(ridge_folder(tmp_path / "ridge"))
    assert code == 0, out
    assert f"dw=logic; loss: {LABEL_2016}; dw: {LABEL_2016}" in out
    assert "ok declared conventions expected by known-wrong files: all 1: '2016' by wrong/half_reg.py" in out
    assert (
        "ok declared conventions differ from the exercise's own: '2016' changes loss on 24 of 24 trials"
        in out
    )


def test_validate_fails_a_convention_no_wrong_file_expects(tmp_path: Path) -> None:
    expects = '{loss: "right under the 2016 convention", dw: "right under the 2016 convention"}'
    spec = RIDGE.replace(f"    misconceptions: {expects}\n", "")
    code, out = _validate(ridge_folder(tmp_path / "ridge", spec))
    assert code == 1, out
    assert (
        "FAIL declared conventions expected by known-wrong files: 1 of 1 declared conventions are expected "
        "by no known-wrong file: '2016'"
    ) in out
    assert f'`misconceptions: {{RETURN: "{LABEL_2016}"}}`' in out


def test_validate_fails_a_convention_that_is_the_exercises_own(tmp_path: Path) -> None:
    spec = RIDGE.replace("loss = data_loss + 0.5 * reg * sum(w * w)", "loss = data_loss + reg * sum(w * w)")
    code, out = _validate(ridge_folder(tmp_path / "ridge", spec))
    assert code == 1, out
    assert (
        "FAIL declared conventions differ from the exercise's own: '2016' gives every return within float32 "
        "rounding of the exercise's own values on every trial"
    ) in out
