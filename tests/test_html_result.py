"""One result as HTML: hostile student text stays text, the failing-entry grid matches the mask, an error of
the whole submission is told once."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser

import numpy as np

from grader.judging.compare import EntryError, Precision
from grader.outcomes import Failure, FailureKind, IsolationLevel, IsolationUsed, Verdict
from grader.report.html_result import result_html, verdict_colour
from grader.results import FailingCase, ReturnResult, SubmissionResult

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
_VOID = {"br", "img", "hr", "meta", "input", "link"}


class _Tree(HTMLParser):
    """The fragment's elements (tag, attributes) and text, checking that every element is closed."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.open: list[str] = []
        self.feed(text)
        self.close()
        assert not self.open, f"unclosed elements: {self.open}"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def tags(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def _entry(i: int) -> EntryError:
    return EntryError((0, i), 1.0 + i, -1.0 - i, 2.0 + 2 * i, 2.0, 1e9, 500.0)


def sample_result(**changes: object) -> SubmissionResult:
    """ana's graph2: f passes, dW is transposed (a 2×3 smallest case, 7 failing entries listed)."""
    mask = np.array([[True, False, True], [False, False, True]])
    wrong = ReturnResult(
        name="dW",
        verdict=Verdict.LOGIC,
        trials=20,
        failed_trials=20,
        message="20 of 20 trials fail",
        points=2.0,
        score=0.0,
        precision=Precision.FLOAT64,
        max_ratio=1e6,
        failing_entries=tuple(_entry(i) for i in range(7)),
        case=FailingCase(3, {"n": 2, "m": 3}, np.zeros((2, 3)), np.ones((2, 3)), mask),
        misconception="transposed gradient",
        feedback="dW has the shape of W: transpose the product",
    )
    right = dataclasses.replace(
        wrong,
        name="f",
        verdict=Verdict.PASS,
        score=1.0,
        points=1.0,
        case=None,
        failing_entries=(),
        misconception=None,
        feedback="",
        message="all pass",
    )
    result = SubmissionResult(
        exercise="graph2",
        exercise_dir="exercises/mac0460/graph2",
        submission="submissions/ana",
        student="ana",
        seed=0,
        trials=20,
        returns=(right, wrong),
        error=None,
        isolation=IsolationUsed(IsolationLevel.FULL, "bubblewrap", "bubblewrap"),
    )
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]


def test_hostile_student_text_is_shown_as_text_never_markup() -> None:
    result = sample_result(student=HOSTILE, submission=HOSTILE, stdout=HOSTILE + "\n")
    returns = tuple(
        dataclasses.replace(r, name=HOSTILE, message=HOSTILE, misconception=HOSTILE, feedback=HOSTILE)
        for r in result.returns
    )
    result = dataclasses.replace(
        result, returns=returns, error=Failure(FailureKind.IMPORT, HOSTILE, f"Traceback\n{HOSTILE}")
    )
    page = result_html(result)
    tree = _Tree(page)
    assert not tree.tags("script") and not tree.tags("img")
    assert all(not k.startswith("on") for _, attrs in tree.elements for k in attrs)
    # each hostile string is shown, as its text: the submission, the error and its traceback, the returns
    assert "".join(tree.text).count(HOSTILE) >= 5
    assert "&lt;script&gt;" in page


def test_the_failing_entries_grid_is_the_smallest_cases_mask() -> None:
    result = sample_result()
    tree = _Tree(result_html(result))
    case = result.returns[1].case
    assert case is not None and case.mask is not None
    mask = case.mask
    cells = tree.tags("td", **{"data-fails": "1"}) + tree.tags("td", **{"data-fails": "0"})
    drawn = {(int(c["data-row"] or -1), int(c["data-col"] or -1)): c["data-fails"] == "1" for c in cells}
    assert drawn == {(i, j): bool(mask[i, j]) for i in range(2) for j in range(3)}
    assert all(c["class"] == "fail" for c in cells if c["data-fails"] == "1")
    text = "".join(tree.text)
    assert "likely mistake:" in text and "transposed gradient" in text
    assert "trial 3 (m=3, n=2)" in text
    assert len(tree.tags("table", **{"class": "entries"})) == 1
    entry_rows = [a for t, a in tree.elements if t == "tr"]
    # the returns table's header and 2 rows, the grid's 2 rows, the entries' header and its worst 5
    assert len(entry_rows) == 3 + 2 + 1 + 5
    assert "grader repro exercises/mac0460/graph2 submissions/ana --seed 0 --trial 3" in text


def test_a_large_mask_is_counted_not_drawn() -> None:
    result = sample_result()
    big = np.zeros((20, 20), dtype=bool)
    big[3, :7] = True
    case = dataclasses.replace(result.returns[1].case, mask=big)  # type: ignore[type-var]
    result = dataclasses.replace(
        result, returns=(result.returns[0], dataclasses.replace(result.returns[1], case=case))
    )
    tree = _Tree(result_html(result))
    assert not tree.tags("table", **{"class": "grid"})
    assert "7 of 400 entries fail" in "".join(tree.text)


def test_a_whole_submission_error_is_told_once_and_the_returns_not_graded() -> None:
    message = "mat1 and mat2 shapes cannot be multiplied\nthe operator's whole signature"
    error = Failure(
        FailureKind.IMPORT, message, f"Traceback (most recent call last):\nRuntimeError: {message}"
    )
    returns = tuple(
        dataclasses.replace(r, verdict=Verdict.ERROR, score=0.0, case=None) for r in sample_result().returns
    )
    tree = _Tree(result_html(sample_result(error=error, returns=returns)))
    text = "".join(tree.text)
    assert len(tree.tags("div", **{"class": "error"})) == 1
    assert text.count("mat1 and mat2 shapes cannot be multiplied") == 2  # the summary line, the traceback
    assert text.count("the operator's whole signature") == 1  # in the traceback only
    assert text.count("not graded: see the error above") == 2
    assert not tree.tags("div", **{"class": "failure"})
    assert "grader check exercises/mac0460/graph2 submissions/ana --seed 0 --trials 20" in text


def test_a_replay_command_given_replaces_the_repro_commands() -> None:
    text = "".join(_Tree(result_html(sample_result(), replay="check(graph2, trial=3)")).text)
    assert "check(graph2, trial=3)" in text and "grader repro" not in text


def test_without_style_the_fragment_holds_no_style_sheet() -> None:
    assert "<style>" in result_html(sample_result()) and "<style>" not in result_html(
        sample_result(), style=False
    )


def test_each_verdict_has_a_colour_of_its_own() -> None:
    assert len({verdict_colour(v) for v in Verdict}) == len(Verdict)
