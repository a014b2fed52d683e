"""The gradebook: lossless results, reuse only when nothing changed, one row per (student, exercise)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, TRANSPOSED_GRAPH2, grade_source

from grader import gradebook
from grader.errors import UsageError
from grader.exercise.spec import Exercise
from grader.gradebook import Gradebook, Key
from grader.outcomes import Failure, FailureKind, Location
from grader.report.exports import class_summary
from grader.report.gradescope import gradescope_results
from grader.results import SubmissionResult


@pytest.fixture(scope="module")
def transposed(graph2: Exercise, tmp_path_factory: pytest.TempPathFactory) -> SubmissionResult:
    return grade_source(graph2, tmp_path_factory.mktemp("gb"), "transposed.py", TRANSPOSED_GRAPH2, trials=8)


@pytest.fixture(scope="module")
def correct(graph2: Exercise, tmp_path_factory: pytest.TempPathFactory) -> SubmissionResult:
    return grade_source(graph2, tmp_path_factory.mktemp("gb"), "correct.py", CORRECT_GRAPH2, trials=8)


def _key(student: str = "ana", submission: str = "s1", exercise: str = "e1", settings: str = "{}") -> Key:
    return Key(student, "graph2", submission, exercise, settings)


def test_a_result_comes_back_exactly_as_it_was_stored(transposed: SubmissionResult) -> None:
    text = gradebook.encode(transposed)
    back = gradebook.decode(text)
    assert gradebook.encode(back) == text
    case, original = back.returns[2].case, transposed.returns[2].case
    assert case is not None and original is not None
    assert case.mask is not None and original.mask is not None
    assert np.array_equal(case.mask, original.mask) and case.mask.dtype == original.mask.dtype
    assert back.returns[2].failing_entries == transposed.returns[2].failing_entries
    assert (back.score, back.max_score, back.worst, back.repro(3)) == (
        transposed.score,
        transposed.max_score,
        transposed.worst,
        transposed.repro(3),
    )


def test_a_result_is_reused_only_when_nothing_changed(tmp_path: Path, correct: SubmissionResult) -> None:
    book = Gradebook(tmp_path / "book.sqlite")
    run = book.start_run("grader run exercises/")
    book.record(run, _key(), correct)
    stored = book.stored(_key())
    assert stored is not None and gradebook.encode(stored) == gradebook.encode(correct)
    assert book.stored(_key(submission="s2")) is None  # the student changed the file
    assert book.stored(_key(exercise="e2")) is None  # the instructor changed the exercise
    assert book.stored(_key(settings='{"seed": 1}')) is None  # another seed or trial count
    assert book.stored(_key(student="ben")) is None


def test_each_student_and_exercise_is_held_once(tmp_path: Path, correct: SubmissionResult) -> None:
    path = tmp_path / "book.sqlite"
    book = Gradebook(path)
    run = book.start_run("first")
    book.record(run, _key(), correct)
    book.record(book.start_run("second"), _key(submission="s2"), correct)
    book.close()
    rows = sqlite3.connect(path).execute("SELECT student, exercise, submission_hash FROM results").fetchall()
    assert rows == [("ana", "graph2", "s2")]


def test_grading_threads_can_record_at_once(tmp_path: Path, correct: SubmissionResult) -> None:
    book = Gradebook(tmp_path / "book.sqlite")
    run = book.start_run("threads")
    threads = [
        threading.Thread(target=book.record, args=(run, _key(student=f"s{i}"), correct)) for i in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(book.results()) == 16


def test_gradescope_results_have_the_required_fields(
    correct: SubmissionResult, transposed: SubmissionResult
) -> None:
    results = gradescope_results([correct, transposed])
    assert results["score"] == correct.score + transposed.score
    assert results["max_score"] == correct.max_score + transposed.max_score
    assert len(results["tests"]) == 6
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] in ("passed", "failed")
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == ["graph2: user_grad"]
    assert "grader repro graph2 transposed.py --seed 0 --trial" in failed[0]["output"]
    assert "**Likely mistake: transposed.** your values are the right ones transposed" in failed[0]["output"]
    assert "transposed" in failed[0]["tags"]


def test_the_class_summary_counts_verdicts_and_failing_entries(
    correct: SubmissionResult, transposed: SubmissionResult
) -> None:
    summary = class_summary([correct, transposed], ["graph2"])["exercises"]["graph2"]
    assert summary["submissions"] == 2 and summary["passed"] == 1
    assert summary["returns"]["user_grad"]["verdicts"] == {"pass": 1, "logic": 1}
    assert summary["returns"]["user_grad"]["failing_entries"]


def test_numpy_scalars_in_a_result_are_stored_as_plain_numbers(correct: SubmissionResult) -> None:
    odd = dataclasses.replace(
        correct,
        seed=np.int64(3),
        error=Failure(FailureKind.EXCEPTION, "boom", trial=np.int64(2)),
        seconds=np.float32(1.5),
        only_trial=np.bool_(True),  # type: ignore[arg-type]
    )
    back = gradebook.decode(gradebook.encode(odd))
    assert (back.seed, back.seconds, back.only_trial) == (3, 1.5, True)
    assert back.error is not None and back.error.trial == 2


def test_a_failing_scalar_return_round_trips(graph2: Exercise, tmp_path: Path) -> None:
    doubled_f = CORRECT_GRAPH2.replace("return f, W.grad", "return 2 * f, W.grad")
    result = grade_source(graph2, tmp_path, "doubled.py", doubled_f, trials=4)
    assert result.returns[0].case is not None  # a failing case for the scalar f
    back = gradebook.decode(gradebook.encode(result))
    assert gradebook.encode(back) == gradebook.encode(result)


def test_a_file_that_is_not_a_gradebook_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database", encoding="utf-8")
    with pytest.raises(UsageError, match=r"cannot use this file as the gradebook .*--gradebook FILE"):
        Gradebook(path)


def test_a_failures_location_round_trips(correct: SubmissionResult) -> None:
    located = Location("hw.ipynb", 2, "graph2", cell=3)
    failed = dataclasses.replace(correct, error=Failure(FailureKind.EXCEPTION, "boom", location=located))
    back = gradebook.decode(gradebook.encode(failed))
    assert back.error is not None and back.error.location == located
    kept = json.loads(gradebook.encode(failed))  # kept before failures carried a location: none told
    del kept["error"]["location"]
    back = gradebook.decode(json.dumps(kept))
    assert back.error is not None and back.error.location is None and back.error.message == "boom"
