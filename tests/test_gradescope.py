"""`grader gradescope` as a student reads it: Markdown with the failing grid and a replay they can run,
an error told once, no path of the autograder's machine, and the course's visibility settings."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    CORRECT_GRAPH2,
    EXERCISES,
    GRAPH2,
    ROOT,
    TRANSPOSED_GRAPH2,
    copy_exercise,
    exercise_folder,
    grader_command,
    write_source,
)

import grader
from grader.errors import SpecError, UsageError
from grader.exercise.spec import EXERCISES_ENV, exercise_argument, load_exercise
from grader.judging.compare import Precision
from grader.outcomes import Failure, FailureKind, IsolationLevel, IsolationUsed, Verdict
from grader.report.gradescope import gradescope_results
from grader.results import FailingCase, ReturnResult, SubmissionResult

TRIALS = 20
_NONE = IsolationUsed(IsolationLevel.NONE, "", "")  # results made here, by no grading
PREVIEW = 5
LATER = "graph2_later"  # graph2 again, its full grading shown after the due date, f at once
LATER_SETTINGS = f"gradescope: {{visibility: after_due_date, visible_trials: {PREVIEW}}}\n"
# The seed is the one drawn for that submission (secret until it was graded): any number.
REPLAY = re.compile(r"grader repro graph2 (\S+) --seed \d+ --trial (\d+)")


@dataclass(frozen=True)
class Graded:
    results: dict[str, Any]
    stderr: str
    submission: Path

    @property
    def tests(self) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in self.results["tests"]}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exercises as Gradescope holds them, below a folder named as Gradescope's is: graph2, graph2
    with visibility settings, and an exercise whose spec is broken."""
    exercises = tmp_path_factory.mktemp("gs") / "autograder" / "source" / "exercises"
    copy_exercise(exercises / "mac0460" / "graph2")
    later = [
        ("id: graph2", f"id: {LATER}"),
        ("- {name: f, value: f}", "- {name: f, value: f, visibility: visible}"),
    ]
    copy_exercise(exercises / "mac0460" / LATER, later, append=LATER_SETTINGS)
    (exercises / "broken").mkdir()
    (exercises / "broken" / "exercise.yaml").write_text("id: broken\ntitle: no entry\n", encoding="utf-8")
    return exercises


def _gradescope(course: Path, submission: Path, *, trials: int = TRIALS) -> Graded:
    results = submission.parent / f"results-{submission.name}" / "results.json"
    command = [*grader_command(), "gradescope", str(course), "--submission", str(submission)]
    done = subprocess.run(
        [*command, "--results", str(results), "--trials", str(trials)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Graded(json.loads(results.read_text(encoding="utf-8")), done.stderr, submission)


def _notebook(path: Path, source: str) -> Path:
    code: dict[str, Any] = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# HW3"},
        {**code, "source": textwrap.dedent(source)},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


HAND_INS: dict[str, Callable[[Path], Path]] = {
    "transposed": lambda folder: write_source(folder / "graph2.py", TRANSPOSED_GRAPH2),
    "syntax": lambda folder: write_source(
        folder / "hw" / "graph2.py", "def graph2(W_np, x_np, b_np:\n    pass\n"
    ),
    "missing": lambda folder: write_source(
        folder / "graph2.py", "from math import *\n\ndef graph_2():\n    pass\n"
    ),
    "notebook": lambda folder: _notebook(folder / "hw3.ipynb", TRANSPOSED_GRAPH2),
}


@pytest.fixture(scope="module")
def graded(course: Path) -> dict[str, Graded]:
    """Each hand-in of HAND_INS graded through the real command, once for the module."""
    root = course.parents[2]
    made = {}
    for name, write in HAND_INS.items():
        folder = root / "submission" / name
        write(folder)
        made[name] = _gradescope(course, folder)
    return made


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_a_failing_return_shows_its_grid_worst_entries_mistake_and_replay(graded: dict[str, Graded]) -> None:
    test = graded["transposed"].tests["graph2: user_grad"]
    assert test["status"] == "failed" and test["score"] == 0 and test["output_format"] == "md"
    output = test["output"]
    assert output.startswith("**logic**: wrong by up to")
    assert "**Likely mistake: transposed.**" in output
    grid = re.search(r"Failing entries \(x\), passing \(\.\):\n\n```\n([x. \n]+)\n```", output)
    assert grid is not None, output
    rows = grid.group(1).splitlines()
    assert all(row[2 * k] == "." for k, row in enumerate(rows))  # transposed: the diagonal is right
    assert "x" in grid.group(1)
    assert "| entry | expected | got | abs err | rel err |" in output
    replay = REPLAY.search(output)
    assert replay is not None and replay.group(1) == "graph2.py", output
    # f is judged on every trial (the autograd check's run again in a worker of their own)
    assert graded["transposed"].tests["graph2: f"]["output"].startswith("**pass**: correct on all 20 trials")


def test_rounding_envelope_is_explained_once_in_the_first_test_that_speaks_of_it(
    graded: dict[str, Graded],
) -> None:
    tests = list(graded["transposed"].tests.values())
    explained = [t["name"] for t in tests if "rounding envelope: how far" in t["output"]]
    first = next(t["name"] for t in tests if "envelope" in t["output"])
    assert explained == [first] == ["graph2: f"]


def test_the_printed_replay_runs_where_the_course_hands_the_exercise_out(
    graded: dict[str, Graded], tmp_path: Path
) -> None:
    """A student's folder: the exercise's folder as handed out (no solution, no known-wrong files), the
    course's shared helpers beside it, and their file. The replay shows the same failure, entry for entry."""
    output = graded["transposed"].tests["graph2: user_grad"]["output"]
    replay = REPLAY.search(output)
    assert replay is not None
    mine = tmp_path / "hw3"
    shutil.copytree(
        GRAPH2, mine / "graph2", ignore=shutil.ignore_patterns("solution.py", "wrong", "__pycache__")
    )
    shutil.copytree(GRAPH2.parent / "_support", mine / "_support")
    shutil.copyfile(graded["transposed"].submission / "graph2.py", mine / "graph2.py")
    command = [*grader_command(), *replay.group(0).split()[1:], "--json"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=mine, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    replayed = {r["name"]: r for r in json.loads(done.stdout)["returns"]}
    assert replayed["user_grad"]["verdict"] == "logic"
    case = replayed["user_grad"]["smallest_failing_case"]
    assert case["trial"] == int(replay.group(2))
    grid = re.search(r"```\n([x. \n]+)\n```", output)
    assert grid is not None
    marked = [
        [r, c]
        for r, row in enumerate(grid.group(1).splitlines())
        for c, m in enumerate(row.split())
        if m == "x"
    ]
    assert sorted(case["failing_indices"]) == marked


def test_a_syntax_error_is_told_once_per_exercise(graded: dict[str, Graded]) -> None:
    results = graded["syntax"].results
    assert results["output"].count("SyntaxError") == 2  # graph2 and graph2_later, once each
    assert 'File "hw/graph2.py", line 1' in results["output"]
    assert re.search(r"grader check graph2 hw/graph2.py --seed \d+", results["output"])
    for test in results["tests"]:
        assert "SyntaxError" not in test["output"] and "not graded: see the error above" in test["output"]
    assert {t["score"] for t in results["tests"] if "score" in t} == {0}


def test_a_missing_function_is_told_once(graded: dict[str, Graded]) -> None:
    results = graded["missing"].results
    assert results["output"].count("missing-function") == 2, results["output"]
    assert all("see the error above" in t["output"] for t in results["tests"])


def test_a_notebook_is_replayed_by_its_own_name(graded: dict[str, Graded]) -> None:
    replay = REPLAY.search(graded["notebook"].tests["graph2: user_grad"]["output"])
    assert replay is not None and replay.group(1) == "hw3.ipynb"


def test_no_path_of_the_autograders_machine_reaches_the_student(
    graded: dict[str, Graded], course: Path
) -> None:
    install = Path(grader.__file__).resolve().parent.parent
    for name, run in graded.items():
        private = {
            str(course),
            str(course.resolve()),
            "/autograder/source",
            str(run.submission.resolve()),
            str(install),
        }
        for text in _strings(run.results):
            leaked = [p for p in private if p in text]
            assert not leaked, (name, leaked, text)
        assert "autograder configuration error (not your fault)" in run.results["output"]
        assert str(course / "broken" / "exercise.yaml") in run.stderr  # the staff's log has it whole


def test_visibility_shows_a_preview_now_and_the_full_grading_after_the_due_date(
    graded: dict[str, Graded],
) -> None:
    tests = graded["transposed"].tests
    full = {n: t for n, t in tests.items() if n.startswith(f"{LATER}:") and "preview" not in n}
    previews = {n: t for n, t in tests.items() if n.startswith(f"{LATER}:") and "preview" in n}
    assert {n: t["visibility"] for n, t in full.items()} == {
        f"{LATER}: f": "visible",
        f"{LATER}: auto_grad": "after_due_date",
        f"{LATER}: user_grad": "after_due_date",
    }
    # f is seen whole already; the others are previewed, visible, and count no points
    assert sorted(previews) == [
        f"{LATER}: auto_grad (preview: the first {PREVIEW} of {TRIALS} trials)",
        f"{LATER}: user_grad (preview: the first {PREVIEW} of {TRIALS} trials)",
    ]
    for test in previews.values():
        assert test["visibility"] == "visible" and "score" not in test and "max_score" not in test
    preview = previews[f"{LATER}: user_grad (preview: the first {PREVIEW} of {TRIALS} trials)"]
    # wrong anyway, on every trial of the preview (the autograd check's trials are judged too)
    assert preview["status"] == "failed" and f"on {PREVIEW} of {PREVIEW} trials" in preview["output"]
    trial = re.search(r"--trial (\d+)", preview["output"])
    assert trial is not None and int(trial.group(1)) < PREVIEW  # one of the trials it was graded on
    summary = graded["transposed"].results["output"]
    escaped = LATER.replace("_", "\\_")  # Markdown's
    assert (
        f"**{escaped}**: graded on {TRIALS} trials, shown after the due date; on the first {PREVIEW}"
        in summary
    )
    assert "**graph2**: 6/10 (logic)" in summary
    assert graded["transposed"].results["score"] == 12  # the full grading counts, hidden or not


def test_staged_exercises_keep_their_layout_and_grade_as_the_originals(tmp_path: Path) -> None:
    staged = tmp_path / "source" / "exercises"
    sources = [EXERCISES / "cs231n" / "a2", GRAPH2]
    stage = [sys.executable, str(ROOT / "gradescope" / "stage_exercises.py"), *map(str, sources), str(staged)]
    subprocess.run(stage, check=True, capture_output=True, timeout=120)
    names = {p.name for p in staged.rglob("*") if p.is_file()}
    assert "solution.py" not in names and "starter.py" not in names and not list(staged.rglob("wrong"))
    assert (staged / "cs231n" / "a2" / "_support" / "cs231n").is_dir()
    assert (staged / "mac0460" / "_support" / "util.py").is_file()  # each course under its own name
    hand_in = tmp_path / "submission"
    write_source(hand_in / "graph2.py", CORRECT_GRAPH2)
    shutil.copyfile(exercise_folder("cs231n.a2.affine") / "solution.py", hand_in / "layers.py")
    results = _gradescope(staged, hand_in, trials=5).results
    mine = [t for t in results["tests"] if t["name"].split(":")[0] in ("graph2", "cs231n.a2.affine")]
    assert {t["name"].split(":")[0] for t in mine} == {"graph2", "cs231n.a2.affine"}
    assert all(t["score"] == t["max_score"] > 0 for t in mine), mine
    assert "configuration error" not in results["output"]


def test_visibility_settings_are_checked_with_the_file_and_line(tmp_path: Path) -> None:
    for settings, expected in (
        ("gradescope: {visibility: after_due_dat}", "did you mean 'after_due_date'?"),
        ("gradescope: {visble_trials: 5}", "'visble_trials' is not a field: did you mean 'visible_trials'?"),
        ("gradescope: {visible_trials: 5}", "visible_trials previews a grading students do not see yet"),
    ):
        folder = copy_exercise(tmp_path / str(len(list(tmp_path.iterdir()))), append=settings + "\n")
        with pytest.raises(SpecError, match=re.escape(expected)) as raised:
            load_exercise(folder, authoring=False)
        assert raised.value.field.startswith("gradescope") and raised.value.line is not None
    folder = copy_exercise(
        tmp_path / "return", [("- {name: f, value: f}", "- {name: f, value: f, visibility: later}")]
    )
    with pytest.raises(SpecError, match=r"returns\[0\]\.visibility"):
        load_exercise(folder, authoring=False)


def test_an_exercise_id_is_looked_up_where_the_student_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_exercise(tmp_path / "hw" / "graph2")
    copy_exercise(
        tmp_path / "library" / "cs231n" / "a2" / "affine", source=exercise_folder("cs231n.a2.affine")
    )
    monkeypatch.delenv(EXERCISES_ENV, raising=False)
    monkeypatch.chdir(tmp_path / "hw")
    assert exercise_argument(Path("graph2")) == Path("graph2")  # a folder holding exercise.yaml is itself
    with pytest.raises(
        UsageError, match=r"'graph3': .* below .*hw; did you mean 'graph2'\? \(ids found: graph2\)"
    ):
        exercise_argument(Path("graph3"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setenv(EXERCISES_ENV, str(tmp_path / "library"))
    with pytest.raises(UsageError, match=r"did you mean 'cs231n\.a2\.affine'\?"):
        exercise_argument(Path("affine"))
    affine = tmp_path / "library" / "cs231n" / "a2" / "affine"
    assert exercise_argument(Path("cs231n.a2.affine")) == affine.resolve()
    monkeypatch.chdir(tmp_path)  # the course's folder of exercises below the current one
    assert exercise_argument(Path("graph2")) == (tmp_path / "hw" / "graph2").resolve()


def test_student_text_cannot_break_out_of_the_markdown() -> None:
    hostile = "<img src=x onerror=alert(1)> **bold** [link](http://x) ``` \x1b[2J"
    logic = ReturnResult("f", Verdict.LOGIC, 1, 1, f"wrong: {hostile}", 1.0, 0.0, Precision.FLOAT64, 9.0)
    told = gradescope_results(
        [SubmissionResult("graph2", "x", "/x/graph2.py", "x", 0, 1, (logic,), None, _NONE)]
    )
    output = told["tests"][0]["output"]
    assert re.search(r"(?<!\\)[<*\[]", output.split("\n\n")[0].removeprefix("**logic**")) is None, output
    assert "\x1b" not in output
    assert "\\\\x1b\\[2J" in output  # the escape made visible, then escaped for Markdown
    traceback = f'  File "graph2.py", line 1\n    {hostile}\n```\n# not a heading'
    failure = Failure(FailureKind.IMPORT, hostile, traceback=traceback)
    erred = ReturnResult("f", Verdict.ERROR, 1, 1, "not run", 1.0, 0.0, Precision.FLOAT64, 0.0)
    told = gradescope_results(
        [SubmissionResult("graph2", "x", "/x/graph2.py", "x", 0, 1, (erred,), failure, _NONE)]
    )
    # fenced by more backticks than the traceback holds: all of it stays inside the code block
    shown = traceback.replace("\x1b", "\\x1b")  # the escape made visible
    assert f"````\n{shown}\n````" in told["output"]


def test_a_seed_of_the_pool_is_in_no_replay_the_student_reads() -> None:
    """A seed drawn from the image's pool comes back in later submissions: no replay names it (the staff's
    log does), neither a failing return's nor a whole-submission error's; a fresh seed is shown, to replay."""
    seed = 6_154_829_301_776_512_093
    case = FailingCase(9, {"d": 3}, None, None, None)
    logic = ReturnResult("f", Verdict.LOGIC, 10, 1, "wrong", 1.0, 0.0, Precision.FLOAT64, 9.0, case=case)
    failed = SubmissionResult("graph2", "x", "/x/hw/graph2.py", "hw", seed, 10, (logic,), None, _NONE)
    erred = ReturnResult("f", Verdict.ERROR, 10, 10, "not run", 1.0, 0.0, Precision.FLOAT64, 0.0)
    crash = Failure(FailureKind.EXCEPTION, "ValueError: no", trial=4)
    crashed = SubmissionResult("graph2", "x", "/x/hw/graph2.py", "hw", seed, 10, (erred,), crash, _NONE)
    for result in (failed, crashed):
        hidden = json.dumps(gradescope_results([result], seed_shown=False))
        assert str(seed) not in hidden and "--seed" not in hidden, hidden
        assert "grader check graph2 graph2.py" in hidden and "secret seed the course uses again" in hidden
        shown = json.dumps(gradescope_results([result]))
        assert f"graph2.py --seed {seed} --trial" in shown, shown


def test_every_result_states_the_grader_torch_and_numpy_it_was_graded_with(graded: dict[str, Graded]) -> None:
    from importlib import metadata

    versions = {
        "grader": grader.__version__,
        "torch": metadata.version("torch"),
        "numpy": metadata.version("numpy"),
    }
    for hand_in in graded.values():
        assert hand_in.results["extra_data"]["versions"] == versions
        stated = ", ".join(f"{name} {version}" for name, version in versions.items())
        assert hand_in.results["output"].endswith(f"_Graded with {stated}._")
