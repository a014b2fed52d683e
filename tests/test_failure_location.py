"""A failure's location in the student's files travels as fields (outcomes.Location), checked at the
payload boundary, and reads as the traceback's own last place did: the text shown is the same."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.handin import notebooks
from grader.outcomes import Location
from grader.sandbox.payload import MESSAGE, Fatal, TrialFailed, located
from grader.sandbox.protocol import MAX_LOCATION_FILE, MAX_LOCATION_FUNCTION
from grader.sandbox.worker.tracebacks import student_location, student_traceback


def _as_the_text_says(traceback: str) -> str:
    """What the grader once read back out of a traceback's text: its last 'File' line."""
    frames = [line.strip() for line in traceback.splitlines() if line.strip().startswith('File "')]
    if not frames:
        return ""
    file, _, rest = frames[-1].removeprefix('File "').partition('", ')
    return f"{file} {rest}"


def _raised(folder: Path, source: str, call: str = "") -> BaseException:
    """The exception that importing `source` as folder/hw.py (then running `call`) raises."""
    path = folder / "hw.py"
    path.write_text(source, encoding="utf-8")
    scope: dict[str, object] = {}
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), scope)
        exec(call, scope)
    except BaseException as exc:
        return exc
    raise AssertionError("nothing raised")


CASES = {
    "nested": ("def helper(a):\n    return 1 / a\n\n\ndef f():\n    return helper(0)\n", "f()"),
    "syntax": ("def f(:\n    pass\n", ""),
    "exec-syntax": ("def f():\n    exec('1 +')\n", "f()"),
    "module": ("x = 1\nraise ValueError('at import')\n", ""),
}


@pytest.mark.parametrize("case", CASES)
def test_the_location_is_the_texts_last_place(case: str, tmp_path: Path) -> None:
    exc = _raised(tmp_path, *CASES[case])
    sent = student_location(exc, tmp_path)
    assert sent is not None
    shown = located(TrialFailed.model_validate({**_trial_error(), "location": sent}).location)
    assert shown is not None and str(shown) == _as_the_text_says(student_traceback(exc, tmp_path))


def test_a_message_that_imitates_a_place_does_not_move_it(tmp_path: Path) -> None:
    exc = _raised(
        tmp_path, "def f():\n    raise ValueError('x\\n  File \"other.py\", line 99, in g')\n", "f()"
    )
    assert "other.py line 99" in _as_the_text_says(student_traceback(exc, tmp_path))  # the text misleads
    assert student_location(exc, tmp_path) == {"file": "hw.py", "line": 2, "function": "f"}


def test_no_frame_of_the_students_is_no_location(tmp_path: Path) -> None:
    try:
        sys.exit(3)
    except SystemExit as exc:
        assert student_location(exc, tmp_path) is None


def test_a_name_past_the_bounds_is_no_location(tmp_path: Path) -> None:
    name = "f" * (MAX_LOCATION_FUNCTION + 1)
    exc = _raised(tmp_path, f"def {name}():\n    raise ValueError\n", f"{name}()")
    assert student_location(exc, tmp_path) is None


def _trial_error() -> dict[str, object]:
    return {"type": "trial-error", "trial": 0, "run": "first", "kind": "exception", "message": "boom"}


@pytest.mark.parametrize(
    "location",
    [
        {"file": "hw.py", "line": -1},
        {"file": "hw.py", "line": True},
        {"file": "hw.py", "line": "3"},
        {"file": "hw.py", "line": 10**8},
        {"file": "x" * (MAX_LOCATION_FILE + 1), "line": 1},
        {"file": "hw.py", "line": 1, "function": "f" * (MAX_LOCATION_FUNCTION + 1)},
        {"file": "hw.py", "line": 1, "cell": 2},  # the grader's to tell, from the notebook
        {"line": 1},
    ],
)
def test_a_forged_location_is_refused(location: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MESSAGE.validate_python({**_trial_error(), "location": location})
    with pytest.raises(ValidationError):
        Fatal.model_validate(
            {"type": "fatal", "kind": "import", "file": "hw.py", "message": "m", "location": location}
        )


def test_a_notebooks_location_is_relocated_as_its_text(tmp_path: Path) -> None:
    code: dict[str, object] = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cells: list[dict[str, object]] = [
        {**code, "source": "import math\n"},
        {"cell_type": "markdown", "source": "text", "metadata": {}},
        {**code, "source": "def f():\n    raise ValueError\n"},
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    converted = notebooks.convert(json.dumps(document).encode(), tmp_path / "hw.ipynb")
    line = converted.source.splitlines().index("    raise ValueError") + 1
    known = {"hw.ipynb": converted}
    text = notebooks.relocate(f'  File "hw.ipynb.py", line {line}, in f', known)
    moved = notebooks.relocate_location(Location("hw.ipynb.py", line, "f"), known)
    assert moved.cell == 3 and str(moved) == _as_the_text_says(text)
    other = Location("other.ipynb.py", line, "f")  # not a notebook of the hand-in: as it was
    assert notebooks.relocate_location(other, known) == other
