"""Which file of a student's folder is graded when several define the entry (handin/choice.py's rule),
told in every report; and the exercise's `handin: {file: ...}` pin (unit, real CLI)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, TRANSPOSED_GRAPH2, copy_exercise, grader_command, write_source

from grader.errors import SpecError, UsageError
from grader.exercise.settings import Settings
from grader.exercise.spec import load_exercise
from grader.grading import grade
from grader.handin.choice import ChosenBy
from grader.handin.discover import submission_from_path
from grader.report.gradescope import gradescope_results
from grader.results import SubmissionResult

RIGHT, WRONG, OTHER = CORRECT_GRAPH2, TRANSPOSED_GRAPH2, "def helper():\n    return 1\n"


def _notebook(source: str) -> str:
    lines = textwrap.dedent(source).lstrip().splitlines(keepends=True)
    cell: dict[str, object] = {
        "cell_type": "code",
        "metadata": {},
        "source": lines,
        "execution_count": None,
        "outputs": [],
    }
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _folder(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        if name.endswith(".ipynb"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_notebook(source), encoding="utf-8")
        else:
            write_source(path, source)
    return root


# files -> (graded, why, the others that define graph2); OTHER defines something else
LAYOUTS = [
    ({"a_draft.py": RIGHT, "graph2.py": WRONG}, ("graph2.py", ChosenBy.NAMED, ("a_draft.py",))),
    ({"graph2.py": WRONG, "scratch.py": RIGHT}, ("graph2.py", ChosenBy.NAMED, ("scratch.py",))),
    ({"b.py": RIGHT, "a.py": WRONG, "c.py": OTHER}, ("a.py", ChosenBy.FIRST, ("b.py",))),
    ({"answers.py": WRONG, "work.ipynb": RIGHT}, ("work.ipynb", ChosenBy.NOTEBOOK, ("answers.py",))),
    ({"work.ipynb": WRONG, "graph2.py": RIGHT}, ("graph2.py", ChosenBy.NAMED, ("work.ipynb",))),
    ({"a.py": WRONG, "mac0460.py": RIGHT}, ("mac0460.py", ChosenBy.NAMED, ("a.py",))),  # the assignment's
    ({"sub/graph2.py": RIGHT, "a.py": WRONG}, ("sub/graph2.py", ChosenBy.NAMED, ("a.py",))),
]


@pytest.mark.parametrize(("files", "chosen"), LAYOUTS)
def test_the_rule_picks_the_named_file_then_a_notebook_then_the_first(
    tmp_path: Path, files: dict[str, str], chosen: tuple[str, ChosenBy, tuple[str, ...]]
) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "mac0460" / "graph2"))
    folder = _folder(tmp_path / "student", files)
    submission = submission_from_path(folder, "graph2", rule=exercise.file_rule)
    assert submission.choice is not None
    assert (submission.choice.graded, submission.choice.chosen_by, submission.choice.also_defined) == chosen
    assert submission.files[0] == chosen[0]  # what the worker imports first, and so grades


def test_one_file_defining_the_entry_needs_no_word(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2"))
    folder = _folder(tmp_path / "student", {"hw.py": RIGHT, "util2.py": OTHER})
    assert submission_from_path(folder, "graph2", rule=exercise.file_rule).choice is None


def _check(exercise: Path, handin: Path, cwd: Path) -> tuple[int, dict[str, object], str]:
    command = [*grader_command(), "check", str(exercise), str(handin), "--trials", "20", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, lines[0] if lines else {}, done.stderr


def _verdicts(result: dict[str, object]) -> dict[str, str]:
    returns = result["returns"]
    assert isinstance(returns, list)
    return {r["name"]: r["verdict"] for r in returns}


@pytest.mark.parametrize(
    ("files", "graded", "user_grad"),
    [
        ({"a_draft.py": RIGHT, "graph2.py": WRONG}, "graph2.py", "logic"),  # alphabetically, a_draft.py won
        ({"graph2.py": RIGHT, "a_draft.py": WRONG}, "graph2.py", "pass"),
        ({"graph2.py": WRONG, "scratch.py": RIGHT}, "graph2.py", "logic"),
    ],
)
def test_the_verdict_is_the_chosen_files_and_the_json_names_the_others(
    tmp_path: Path, files: dict[str, str], graded: str, user_grad: str
) -> None:
    exercise = copy_exercise(tmp_path / "graph2")
    code, result, stderr = _check(exercise, _folder(tmp_path / "student", files), tmp_path)
    assert code == (0 if user_grad == "pass" else 1), stderr
    assert _verdicts(result)["user_grad"] == user_grad
    others = sorted(set(files) - {graded})
    choice = result["file_choice"]
    assert choice == {
        "graded": graded,
        "chosen_by": "named",
        "also_defined": others,
        "note": choice["note"] if isinstance(choice, dict) else None,
    }
    assert isinstance(choice, dict) and f"also defined in {others[0]}: not graded" in choice["note"]


PINNED = "solution: solution.py\nhandin: {file: hw.py}"


def test_a_pinned_file_is_graded_over_one_named_after_the_exercise(tmp_path: Path) -> None:
    exercise = copy_exercise(tmp_path / "graph2", (("solution: solution.py", PINNED),))
    folder = _folder(tmp_path / "student", {"graph2.py": WRONG, "hw.py": RIGHT})
    code, result, stderr = _check(exercise, folder, tmp_path)
    assert code == 0, stderr
    assert _verdicts(result) == {"f": "pass", "auto_grad": "pass", "user_grad": "pass"}
    choice = result["file_choice"]
    assert isinstance(choice, dict)
    assert (choice["graded"], choice["chosen_by"], choice["also_defined"]) == (
        "hw.py",
        "pinned",
        ["graph2.py"],
    )


def test_a_missing_pinned_file_is_an_error_naming_it(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2", (("solution: solution.py", PINNED),)))
    folder = _folder(tmp_path / "student", {"graph2.py": RIGHT, "notes.py": OTHER})
    with pytest.raises(
        UsageError, match=r"grades the file hw\.py .*defined in graph2\.py.*rename that file hw\.py"
    ):
        submission_from_path(folder, "graph2", rule=exercise.file_rule)
    # Nothing defines the entry: not handed in, as without a pin; and one file handed in is graded as is.
    absent = _folder(tmp_path / "absent", {"notes.py": OTHER})
    assert submission_from_path(absent, "graph2", rule=exercise.file_rule).choice is None
    single = write_source(tmp_path / "alone" / "mine.py", RIGHT)
    assert submission_from_path(single, "graph2", rule=exercise.file_rule).files == ("mine.py",)


def test_a_pinned_file_without_the_function_is_an_error_naming_where_it_is(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2", (("solution: solution.py", PINNED),)))
    folder = _folder(tmp_path / "student", {"hw.py": OTHER, "draft.py": RIGHT})
    with pytest.raises(UsageError, match=r"hw\.py does not define .* draft\.py does"):
        submission_from_path(folder, "graph2", rule=exercise.file_rule)


@pytest.mark.parametrize("pinned", ["../hw.py", "/etc/hw.py", "hw.txt", "a/../../hw.py"])
def test_a_pin_outside_the_hand_in_is_refused(tmp_path: Path, pinned: str) -> None:
    folder = copy_exercise(
        tmp_path / "graph2",
        (("solution: solution.py", f"solution: solution.py\nhandin: {{file: '{pinned}'}}"),),
    )
    with pytest.raises(SpecError, match="handin"):
        load_exercise(folder)


def test_a_class_run_names_the_other_files_in_the_table_the_json_and_the_html(tmp_path: Path) -> None:
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2")
    submissions = tmp_path / "submissions"
    _folder(submissions / "ana", {"a_draft.py": RIGHT, "graph2.py": WRONG})
    _folder(submissions / "ben", {"graph2.py": RIGHT})
    _folder(submissions / "caio", {"work.ipynb": RIGHT, "answers.py": WRONG})
    command = [*grader_command(), "run", str(exercises), "--trials", "20", "--seed", "1"]
    table = subprocess.run(
        [*command, "--html", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert table.returncode == 1, table.stderr
    told = " ".join(table.stdout.split())
    assert "ana / graph2: graded graph2.py (named after the exercise); also defined in a_draft.py" in told
    assert (
        "caio / graph2: graded work.ipynb (a notebook, before the other files); also defined in answers.py"
        in told
    )
    assert "ben / graph2" not in told
    as_json = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False
    )
    results = {r["student"]: r for r in map(json.loads, as_json.stdout.splitlines()) if "student" in r}
    assert _verdicts(results["ana"])["user_grad"] == "logic"
    assert results["ana"]["file_choice"]["also_defined"] == ["a_draft.py"]
    assert results["ben"]["file_choice"] is None
    assert _verdicts(results["caio"])["user_grad"] == "pass"
    assert results["caio"]["file_choice"]["graded"] == "work.ipynb"
    pages = " ".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html"))
    assert "also defined in a_draft.py: not graded" in pages
    assert "also defined in answers.py: not graded" in pages


def test_gradescope_names_the_files_not_graded(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2"))
    folder = _folder(tmp_path / "student", {"a_draft.py": RIGHT, "graph2.py": WRONG})
    submission = submission_from_path(folder, "graph2", rule=exercise.file_rule)
    result: SubmissionResult = grade(exercise, submission, Settings(0, 20))
    output = gradescope_results([result])["output"]
    assert "graded graph2.py (named after the exercise); also defined in a\\_draft.py: not graded" in output
