"""The class table as an instructor reads it on a terminal of ordinary width."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from conftest import CORRECT_GRAPH2, grade_source
from rich.console import Console

from grader.exercise.spec import Exercise
from grader.outcomes import IsolationLevel, IsolationUsed
from grader.report.terminal import _shared_prefix, render_result
from grader.results import SubmissionResult


def test_a_courses_shared_id_prefix_is_said_once() -> None:
    assert _shared_prefix(["cs231n.a3.rnn", "cs231n.a3.lstm_step"]) == "cs231n.a3."
    assert _shared_prefix(["cs231n.a2.affine", "cs231n.a3.rnn"]) == "cs231n."
    assert _shared_prefix(["graph1", "graph2"]) == ""  # nothing dotted to share
    assert _shared_prefix(["cs231n.a3.rnn"]) == ""  # one column keeps its whole id
    assert _shared_prefix(["cs231n.a3.rnn", "eecs498.a2.svm_loss_naive"]) == ""


HINT = "Hint: the backtrace further above shows the operation that failed"


def _raising(when: str) -> str:
    """graph2 raising a torch-like RuntimeError of two lines: a summary, then a hint."""
    return CORRECT_GRAPH2.replace(
        "f.backward()",
        # The hint in a line of its own: the traceback's source line must not hold it.
        f"f.backward()\n        hint = {HINT!r}\n        if {when}:\n"
        "            raise RuntimeError('one of the variables was modified\\n' + hint)",
    )


def _rendered(result: SubmissionResult) -> str:
    console = Console(file=io.StringIO(), width=300, highlight=False, color_system=None)
    render_result(console, result)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def test_a_multi_line_error_is_told_once_its_first_line_in_the_summary(
    graph2: Exercise, tmp_path: Path
) -> None:
    result = grade_source(graph2, tmp_path, "always.py", _raising("True"), trials=3)
    assert result.error is not None and HINT in result.error.message  # the JSON report keeps all of it
    text = _rendered(result)
    assert text.count(HINT) == 1, text  # in the traceback, not in the summary line too
    assert "error (exception): RuntimeError: one of the variables was modified …" in text


def test_a_multi_line_error_of_some_trials_is_cut_in_the_table(graph2: Exercise, tmp_path: Path) -> None:
    result = grade_source(graph2, tmp_path, "some.py", _raising("W_np.shape[0] % 2 == 0"), trials=10)
    assert result.error is None and result.first_trial_error is not None
    assert any(HINT in r.message for r in result.returns)
    text = _rendered(result)
    assert text.count(HINT) == 1, text  # in the first failing call's traceback only
    assert "RuntimeError: one of the variables was modified …" in text


def test_rounding_envelope_is_explained_once_where_the_word_first_appears(
    graph2: Exercise, tmp_path: Path
) -> None:
    result = grade_source(graph2, tmp_path, "ok.py", CORRECT_GRAPH2, trials=3)
    console = Console(file=io.StringIO(), width=300, highlight=False, color_system=None)
    render_result(console, result)
    render_result(console, result)  # a second exercise in the same report: told already
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert text.count("rounding envelope: how far rounding alone") == 1, text
    table_line = next(n for n, line in enumerate(text.splitlines()) if "rounding envelopes)" in line)
    said = next(n for n, line in enumerate(text.splitlines()) if "rounding envelope: how far" in line)
    assert said == table_line + 3  # right below the returns table (f, auto_grad, user_grad)
    assert "rounding envelope: how far" in _rendered(result)  # a new report tells it again


def test_the_score_line_names_the_isolation_in_a_few_words(graph2: Exercise, tmp_path: Path) -> None:
    right = grade_source(graph2, tmp_path, "ok.py", CORRECT_GRAPH2, trials=3)
    line = "bubblewrap (own PID and network namespaces), processes bounded by a cgroup"
    brief = "bubblewrap, processes bounded"
    shown = replace(right, isolation=IsolationUsed(IsolationLevel.FULL, line, brief))
    score_line = next(s for s in _rendered(shown).splitlines() if "isolation:" in s)
    assert score_line.strip() == "score 10/10   isolation: bubblewrap, processes bounded", score_line


def test_the_class_table_tells_nothing_handed_in_from_zero(graph2: Exercise, tmp_path: Path) -> None:
    """As gradebook.csv: everyone out of the class's maximum, and no total for who handed nothing in."""
    from grader.report.terminal import render_class

    right = grade_source(graph2, tmp_path, "ok.py", CORRECT_GRAPH2, trials=3)
    console = Console(file=io.StringIO(), width=200, highlight=False, color_system=None)
    render_class(console, [right], ["graph2"], [right.student, "absent"])
    rows = {line.split()[1]: line for line in console.file.getvalue().splitlines() if "│" in line[:2]}  # type: ignore[attr-defined]
    assert rows[right.student].rstrip(" │").endswith("10/10")
    assert rows["absent"].rstrip(" │").endswith("—/10")
