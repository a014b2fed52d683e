"""Returns that are array-likes as numpy understands them: a nested list or tuple of numbers (what
`.tolist()` gives), or a Python number where a one-entry array is due, graded as the array it describes,
with a note saying so; a list that describes no array (ragged, of strings, of tensors, enormous, nested in
itself) stays an error that names the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import CORRECT_GRAPH2, grade_source

from grader.exercise.spec import Exercise
from grader.outcomes import Verdict
from grader.results import SubmissionResult
from grader.sandbox.worker.returns import _MAX_LIST_DEPTH, _MAX_LIST_ENTRIES
from grader.sandbox.worker.returns import to_array as _to_array

NOTE = "graded as the array it describes"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("array_likes")


@pytest.fixture(scope="module")
def as_lists(graph2: Exercise, workdir: Path) -> SubmissionResult:
    source = CORRECT_GRAPH2.replace(
        "return f, W.grad, (s * (1 - s)) @ x_np.T",
        "return f.item(), tuple(W.grad.tolist()), ((s * (1 - s)) @ x_np.T).tolist()",
    )
    assert "tolist()" in source
    return grade_source(graph2, workdir / "lists", "lists.py", source, trials=5)


def test_a_list_from_tolist_passes_with_a_note(as_lists: SubmissionResult) -> None:
    assert as_lists.error is None
    by_name = {r.name: r for r in as_lists.returns}
    assert {name: r.verdict for name, r in by_name.items()} == {
        "f": Verdict.PASS,
        "auto_grad": Verdict.PASS,
        "user_grad": Verdict.PASS,
    }
    assert f"returned a list; {NOTE}" in by_name["user_grad"].message
    assert f"returned a tuple; {NOTE}" in by_name["auto_grad"].message
    assert NOTE not in by_name["f"].message  # a Python float where a number is due is nothing to note


@pytest.fixture(scope="module")
def ragged(graph2: Exercise, workdir: Path) -> SubmissionResult:
    source = CORRECT_GRAPH2.replace(
        "return f, W.grad, (s * (1 - s)) @ x_np.T",
        "return f, W.grad, [[1.0, 2.0], [3.0]]",
    )
    assert "[3.0]" in source
    return grade_source(graph2, workdir / "ragged", "ragged.py", source, trials=3)


def test_a_ragged_list_is_an_error_naming_the_problem(ragged: SubmissionResult) -> None:
    assert ragged.error is None
    by_name = {r.name: r for r in ragged.returns}
    assert by_name["f"].verdict is Verdict.PASS
    assert by_name["user_grad"].verdict is Verdict.ERROR
    message = by_name["user_grad"].message
    assert "ragged list" in message and "[1] has 1 item where [0] has 2" in message, message


def test_nested_lists_and_tuples_become_their_arrays() -> None:
    converted = _to_array(((1, 2.5), (True, 4)))
    assert not isinstance(converted, str)
    array, label, source = converted
    assert array.dtype == np.float64 and label == "float64" and source == "Python tuple"
    np.testing.assert_array_equal(array, [[1.0, 2.5], [1.0, 4.0]])
    empty = _to_array([[], []])
    assert not isinstance(empty, str) and empty[0].shape == (2, 0)


def test_numpy_scalars_keep_their_precision() -> None:
    converted = _to_array([np.float32(1.5), np.float32(2.0)])
    assert not isinstance(converted, str)
    assert converted[0].dtype == np.float32 and converted[1] == "float32"


class _Sly(float):
    def __float__(self) -> float:  # what a hostile hand-in could run inside numpy's conversion
        raise AssertionError("the grader called into a student's object")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([[1.0, 2.0], [3.0]], "ragged list: [1] has 1 item where [0] has 2"),
        ([[1.0, 2.0], 3.0], "ragged list: [1] is a float where a list is due"),
        ([1.0, [2.0]], "ragged list: [1] is a list where [0] is a number"),
        (["a", "b"], "entry [0] is a str"),
        ([[1.0], [torch.tensor(2.0)]], "entry [1][0] is a torch.Tensor"),
        ([np.array(1.0)], "entry [0] is a numpy.ndarray"),
        ([1.0, _Sly(2.0)], "entry [1] is a test_array_likes._Sly"),
        ([1j], "entry [0] is a complex"),
        ([10**400], "integer too large"),
        ([[0.0] * 4096] * 4096, f"over {_MAX_LIST_ENTRIES} numbers"),
    ],
)
def test_lists_that_describe_no_array_are_errors(value: Any, words: str) -> None:
    problem = _to_array(value)
    assert isinstance(problem, str) and words in problem, problem


def test_a_list_nested_in_itself_is_an_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    problem = _to_array(loop)
    assert isinstance(problem, str) and f"nested more than {_MAX_LIST_DEPTH} deep" in problem


def test_a_list_subclass_is_not_taken_for_a_list() -> None:
    class Rows(list[float]):
        pass

    problem = _to_array(Rows([1.0]))
    assert isinstance(problem, str) and "return a numpy array" in problem
