"""One serialisation of a result: the gradebook's row, the `--json` line and Gradescope's tests of the same
grading state the same score, verdicts, names and points, since all three start from report/serialised.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import TRANSPOSED_GRAPH2, grade_source

from grader import gradebook
from grader.exercise.spec import Exercise
from grader.gradebook import Gradebook, Key
from grader.outcomes import IsolationLevel, Verdict
from grader.report.gradescope import gradescope_results
from grader.report.json_report import to_json_line
from grader.results import SubmissionResult


@pytest.fixture(scope="module")
def transposed(graph2: Exercise, tmp_path_factory: pytest.TempPathFactory) -> SubmissionResult:
    return grade_source(graph2, tmp_path_factory.mktemp("one"), "transposed.py", TRANSPOSED_GRAPH2, trials=8)


def _row(tmp_path: Path, result: SubmissionResult) -> dict[str, Any]:
    book = Gradebook(tmp_path / "book.sqlite")
    book.record(book.start_run("grader run"), Key(result.student, result.exercise, "s", "e", "{}"), result)
    book.close()
    with sqlite3.connect(tmp_path / "book.sqlite") as db:
        (text,) = db.execute("SELECT result FROM results").fetchone()
    row: dict[str, Any] = json.loads(text)
    return row


def test_the_gradebook_the_json_line_and_gradescope_state_one_result_alike(
    transposed: SubmissionResult, tmp_path: Path
) -> None:
    row = _row(tmp_path, transposed)
    line = json.loads(to_json_line(transposed))
    gradescope = gradescope_results([transposed])
    tests = gradescope["tests"]
    verdicts = [r.verdict.value for r in transposed.returns]
    assert Verdict.LOGIC.value in verdicts and Verdict.PASS.value in verdicts  # a result worth comparing
    # the result as a whole
    for field in ("exercise", "student", "seed", "trials"):
        assert row[field] == line[field] == getattr(transposed, field)
    assert line["score"] == gradescope["score"] == sum(r["score"] for r in row["returns"]) == transposed.score
    assert (
        line["max_score"]
        == gradescope["max_score"]
        == sum(r["points"] for r in row["returns"])
        == transposed.max_score
    )
    assert row["isolation"]["line"] == line["isolation"] == transposed.isolation.line
    assert row["isolation"]["level"] == transposed.isolation.level.value
    # each return, in order
    assert [t["name"] for t in tests] == [f"{transposed.exercise}: {r['name']}" for r in row["returns"]]
    assert [r["name"] for r in line["returns"]] == [r["name"] for r in row["returns"]]
    assert [r["verdict"] for r in row["returns"]] == [r["verdict"] for r in line["returns"]] == verdicts
    assert [t["tags"][0] for t in tests] == verdicts
    assert [r["points"] for r in row["returns"]] == [r["points"] for r in line["returns"]]
    assert [r["points"] for r in row["returns"]] == [t["max_score"] for t in tests]
    assert [r["score"] for r in row["returns"]] == [r["score"] for r in line["returns"]]
    assert [r["score"] for r in row["returns"]] == [t["score"] for t in tests]
    assert [r["misconception"] for r in row["returns"]] == [r["misconception"] for r in line["returns"]]
    assert [t["tags"][1:] for t in tests] == [
        [m] if m else [] for m in (r["misconception"] for r in row["returns"])
    ]
    assert [r["message"] for r in row["returns"]] == [r["message"] for r in line["returns"]]
    for kept, said in zip(row["returns"], line["returns"], strict=True):
        assert said["max_envelope_ratio"] == kept["max_ratio"]  # finite here: the same number
        assert said["failing_entries"] == kept["failing_entries"]  # finite here too: the same fields
        case = kept["case"]
        assert (said["smallest_failing_case"] is None) == (case is None)
        if case is not None:
            assert said["smallest_failing_case"]["trial"] == case["trial"]
            assert said["smallest_failing_case"]["sizes"] == case["sizes"]


def test_a_row_written_before_the_typed_fields_reads_as_reports_read_it_then(
    transposed: SubmissionResult,
) -> None:
    """A gradebook kept from before: its isolation a line, its returns without speaks_of_envelopes."""
    data = json.loads(gradebook.encode(transposed))
    full = (
        "bubblewrap (own PID and network namespaces), processes bounded by a cgroup, "
        "no new processes (seccomp)"
    )
    data["isolation"] = full
    for ret in data["returns"]:
        del ret["speaks_of_envelopes"]
    old = gradebook.decode(json.dumps(data, allow_nan=True))
    assert old.isolation.level is IsolationLevel.FULL and old.isolation.line == full
    assert old.isolation.brief == "bubblewrap, processes bounded by a cgroup, no new processes"
    assert [r.speaks_of_envelopes for r in old.returns] == [r.speaks_of_envelopes for r in transposed.returns]
    assert any(r.speaks_of_envelopes for r in old.returns)
    data["isolation"] = reduced = "reduced isolation: base (rlimits); bubblewrap is not installed"
    old = gradebook.decode(json.dumps(data, allow_nan=True))
    assert (old.isolation.level, old.isolation.brief) == (IsolationLevel.REDUCED, reduced)
