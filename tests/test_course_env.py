"""A course's environment, declared in course.yaml: the packages student code may import (the rest refused
with how to add them, even where the machine has them), course-wide stand-ins, plots drawn headless, and
the pip requirements the setup installs."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, EXERCISES, GRAPH2, ROOT, copy_exercise, line_of, write_source

from grader.errors import SpecError
from grader.exercise.course import COURSE_FILE, course_of
from grader.exercise.settings import Settings
from grader.exercise.spec import load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.report.gradescope import gradescope_results

RunGrader = Callable[..., subprocess.CompletedProcess[str]]
ALL_CELLS = "notebook: {cells: all}\n"
REFUSED = (
    "your code imports matplotlib, which this course's environment does not provide: the instructor adds "
    "it under `packages:` in course.yaml (beside the exercises) and reruns setup"
)


def _cell(source: str) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {}, "source": source, "execution_count": None, "outputs": []}


def _notebook(path: Path, *cells: str) -> Path:
    document = {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Homework"}, *map(_cell, cells)],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _plotting_homework(path: Path) -> Path:
    """A correct graph2 as students hand it in: it plots, and a leftover scratch cell fails on its own."""
    return _notebook(
        path,
        "import numpy as np\nimport torch\nimport matplotlib.pyplot as plt\n",
        textwrap.dedent(CORRECT_GRAPH2).replace("import numpy as np\nimport torch\n", "").strip() + "\n",
        "plt.plot([1, 2, 3], [2, 4, 1])\nplt.title('loss')\nplt.savefig('curve.png')\nplt.show()\n",
        "W = np.ones(3)\nprint(W.grad)\n",  # the scratch cell: a numpy array has no .grad
    )


def _course(folder: Path, text: str | None, cells_all: bool = True) -> Path:
    """graph2 copied into `folder`, with `text` as the course.yaml beside it (None: no course file)."""
    exercise = copy_exercise(folder / "graph2", append=ALL_CELLS if cells_all else "")
    if text is not None:
        (folder / COURSE_FILE).write_text(text, encoding="utf-8")
    return exercise


def _json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert isinstance(result, dict)
    return result


# --- the acceptance: a plotting notebook with a failing scratch cell --------------------------------------


def test_a_plotting_notebook_scores_full_marks_where_the_course_declares_matplotlib(
    run_grader: RunGrader, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    exercise = _course(tmp_path / "course", "packages:\n  - matplotlib>=3.5\n")
    notebook = _plotting_homework(tmp_path / "hw.ipynb")

    proc = run_grader("check", exercise, notebook, "--trials", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "score 10/10" in proc.stdout
    # The scratch cell is told, by cell and line, and costs nothing.
    assert "1 cell(s) failed outside the definitions and were skipped" in proc.stdout
    assert "hw.ipynb cell 5, line 2: AttributeError:" in proc.stdout

    result = _json(run_grader("check", exercise, notebook, "--trials", "10", "--json"))
    assert result["score"] == result["max_score"] == 10
    (failed,) = result["notebook"]["failed_cells"]
    assert (failed["notebook"], failed["cell"], failed["line"]) == ("hw.ipynb", 5, 2)
    assert failed["error"] == "AttributeError: 'numpy.ndarray' object has no attribute 'grad'"


def test_without_the_course_file_the_error_names_matplotlib_and_how_to_add_it(
    run_grader: RunGrader, tmp_path: Path
) -> None:
    """Even where the machine has matplotlib (it does here, for the courses that declare it)."""
    pytest.importorskip("matplotlib")
    notebook = _plotting_homework(tmp_path / "hw.ipynb")

    whole = _course(tmp_path / "whole", None)
    proc = run_grader("check", whole, notebook, "--trials", "10", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    error = _json(proc)["error"]
    assert error["kind"] == "import"
    assert error["message"] == f"ModuleNotFoundError: {REFUSED}"
    assert 'File "hw.ipynb", cell 2, line 3, in <module>' in error["traceback"]

    # By default (definitions) the import is left out with the same words, and the definitions graded.
    default = _course(tmp_path / "default", None, cells_all=False)
    proc = run_grader("check", default, notebook, "--trials", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "score 10/10" in proc.stdout
    assert "import matplotlib.pyplot as plt (cell 2, line 3): your code imports matplotlib" in proc.stdout


def test_student_code_cannot_reach_an_undeclared_package_another_way(
    run_grader: RunGrader, tmp_path: Path
) -> None:
    """importlib.import_module is an import by student code too; the course's helpers, torch's and
    numpy's own imports are not student code, and the hand-in's own files are its to import."""
    pytest.importorskip("matplotlib")
    exercise = _course(tmp_path / "course", None, cells_all=False)
    folder = tmp_path / "handin"
    write_source(folder / "helpers.py", "SCALE = 1.0\n")
    write_source(folder / "src" / "nested.py", "SCALE = 2.0\n")  # found through the student's sys.path
    write_source(
        folder / "main.py",
        "import importlib\nimport os, sys\nimport helpers\nimport util\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'src'))\nimport nested\n"
        "plt = importlib.import_module('matplotlib.pyplot')\n" + textwrap.dedent(CORRECT_GRAPH2),
    )
    proc = run_grader("check", exercise, folder, "--trials", "5", "--json")
    error = _json(proc)["error"]
    assert error["kind"] == "import", error
    assert error["message"] == f"ModuleNotFoundError: {REFUSED}"
    assert 'File "main.py", line 7, in <module>' in error["traceback"]


def test_a_module_missing_here_is_still_pythons_own_error(run_grader: RunGrader, tmp_path: Path) -> None:
    exercise = _course(tmp_path / "course", "packages: [no-such-package-anywhere]\n", cells_all=False)
    hand_in = write_source(tmp_path / "hw.py", "import google.colab\n" + textwrap.dedent(CORRECT_GRAPH2))
    error = _json(run_grader("check", exercise, hand_in, "--trials", "5", "--json"))["error"]
    assert error["message"] == "ModuleNotFoundError: No module named 'google'"


def test_the_notes_reach_gradescope(tmp_path: Path) -> None:
    exercise = load_exercise(_course(tmp_path / "course", "packages: [matplotlib]\n"))
    notebook = _plotting_homework(tmp_path / "hw.ipynb")
    submission = submission_from_path(notebook, "graph2", notebook=exercise.spec.notebook.selection)
    result = grade(exercise, submission, Settings(1, 8))
    if importlib.util.find_spec("matplotlib") is None:  # the import cell fails: a definition, the zero
        assert result.error is not None and "No module named 'matplotlib'" in result.error.message
        return
    assert result.score == result.max_score
    output = gradescope_results([result])["output"]
    assert "Cell skipped (it failed outside the definitions; not scored): hw.ipynb cell 5, line 2" in output


# --- EECS498's coutils stand-in --------------------------------------------------------------------------


def test_an_eecs498_notebook_imports_coutils(run_grader: RunGrader, tmp_path: Path) -> None:
    """The course's helpers, as its notebooks use them, graded whole: each cell's checks hold."""
    course = tmp_path / "eecs498"
    shutil.copytree(EXERCISES / "eecs498" / "_support", course / "_support")
    shutil.copyfile(EXERCISES / "eecs498" / COURSE_FILE, course / COURSE_FILE)
    source = EXERCISES / "eecs498" / "a2" / "svm_loss_naive"
    exercise = copy_exercise(course / "a2" / "svm_loss_naive", source=source, append=ALL_CELLS)
    solution = (source / "solution.py").read_text(encoding="utf-8")
    checks = """
        import coutils
        from coutils import fix_random_seed, rel_error, compute_numeric_gradient, reset_seed, Solver

        fix_random_seed(0)
        W = torch.randn(3, 4, dtype=torch.float64) * 0.01
        X = torch.randn(5, 3, dtype=torch.float64)
        y = torch.randint(4, (5,))
        loss, grad = svm_loss_naive(W, X, y, 0.1)
        numeric = compute_numeric_gradient(lambda w: svm_loss_naive(w, X, y, 0.1)[0], W)
        assert rel_error(numeric, grad) < 1e-6, rel_error(numeric, grad)
        assert rel_error(grad, grad) == 0.0
        reset_seed(0)
        first = torch.randn(2)
        fix_random_seed(0)
        assert torch.equal(first, torch.randn(2))
        Solver(None, {}, num_epochs=1)
    """
    notebook = _notebook(tmp_path / "linear_classifier.ipynb", solution, textwrap.dedent(checks))
    result = _json(run_grader("check", exercise, notebook, "--trials", "20", "--json"))
    assert result["error"] is None, result["error"]
    assert result["score"] == result["max_score"]
    assert result["notebook"]["failed_cells"] == []  # the checks cell ran through
    assert result["notebook"]["cells"] == "all"


def test_the_bundled_eecs498_exercises_get_coutils_from_their_course() -> None:
    exercise = load_exercise(EXERCISES / "eecs498" / "a2" / "svm_loss_naive")
    assert exercise.course is not None and exercise.course.path == EXERCISES / "eecs498" / COURSE_FILE
    assert exercise.support_paths == (EXERCISES / "eecs498" / "_support" / "coutils",)
    assert exercise.allowed_modules == ("matplotlib",)
    assert load_exercise(GRAPH2).allowed_modules == ("matplotlib",)  # MAC0460's notebooks plot


def test_the_course_support_is_part_of_the_exercise_hash(tmp_path: Path) -> None:
    from grader.exercise.reference_key import exercise_identity
    from grader.exercise.spec import exercise_hash

    folder = _course(tmp_path / "course", "support: [_helpers/coutils.py]\n")
    (tmp_path / "course" / "_helpers").mkdir()
    helper = tmp_path / "course" / "_helpers" / "coutils.py"
    helper.write_text("SCALE = 1\n", encoding="utf-8")
    exercise = load_exercise(folder)
    before = (exercise_hash(exercise), exercise_identity(exercise)["files"])
    helper.write_text("SCALE = 2\n", encoding="utf-8")
    exercise = load_exercise(folder)
    after = (exercise_hash(exercise), exercise_identity(exercise)["files"])
    assert before[0] != after[0]  # the gradebook grades again
    assert before[1] != after[1]  # the references are looked up again
    (tmp_path / "course" / COURSE_FILE).write_text(
        "support: [_helpers/coutils.py]\npackages: [matplotlib]\n", encoding="utf-8"
    )
    declared = load_exercise(folder)
    assert exercise_hash(declared) != after[0]  # a hand-in refused matplotlib before grades again
    assert exercise_identity(declared)["files"] == after[1]  # the references do not depend on it


# --- course.yaml: what it may say, and its mistakes told by file, line, field and value -----------------


def _course_error(tmp_path: Path, text: str) -> tuple[Path, SpecError]:
    folder = _course(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    return tmp_path / COURSE_FILE, info.value


def test_packages_and_their_import_names(tmp_path: Path) -> None:
    text = (
        "packages:\n  - matplotlib>=3.7\n  - {pip: scikit-learn, import: sklearn}\n  - Pillow\n"
        "  - python-dateutil==2.9.0\n"
    )
    course = course_of(_course(tmp_path, text))
    assert [(p.requirement, p.module) for p in course.packages] == [
        ("matplotlib>=3.7", "matplotlib"),
        ("scikit-learn", "sklearn"),
        ("Pillow", "pillow"),
        ("python-dateutil==2.9.0", "python_dateutil"),
    ]


@pytest.mark.parametrize(
    ("text", "needle", "field", "message"),
    [
        (
            "packages:\n  - numpy\n  - --index-url http://example.com\n",
            "--index-url",
            "packages[1]",
            "expected a pip requirement",
        ),
        (
            "packages:\n  - {pip: scikit-learn, import: sk.learn}\n",
            "sk.learn",
            "packages[0].import",
            "top-level",
        ),
        (
            "packages:\n  - {pip: scikit-learn, module: sklearn}\n",
            "module:",
            "packages[0].module",
            "(a package is {pip: REQUIREMENT, import: MODULE} pip, import)",
        ),
        (
            "pakages: [matplotlib]\n",
            "pakages",
            "pakages",
            "(a course.yaml has packages, support, subprocesses, numerical_derivatives): did you mean "
            "'packages'?",
        ),
        ("support: [../../outside]\n", "support:", "support[0]", "is not inside the course's folder"),
        ("support: [_nowhere.py]\n", "support:", "support[0]", "neither a .py file nor a folder"),
        ("subprocesses: 'yes'\n", "subprocesses", "subprocesses", "valid boolean"),
        ("subprocesses: 1\n", "subprocesses", "subprocesses", "valid boolean"),
        (
            "numerical_derivatives: forbid\n",
            "numerical_derivatives",
            "numerical_derivatives",
            "'allow' or 'refuse'",
        ),
        (
            "numerical_derivative: refuse\n",
            "numerical_derivative",
            "numerical_derivative",
            "did you mean 'numerical_derivatives'?",
        ),
    ],
)
def test_a_wrong_course_file_is_told_by_line_field_and_value(
    tmp_path: Path, text: str, needle: str, field: str, message: str
) -> None:
    path, error = _course_error(tmp_path, text)
    assert error.path == path
    assert error.line == line_of(text, needle)
    assert error.field == field
    assert message in error.message, error.message
    assert str(error).startswith(f"{path}:{error.line}: {field}:")


def test_a_requirement_the_error_quotes(tmp_path: Path) -> None:
    _, error = _course_error(tmp_path, "packages: ['matplotlib; os_name == \"nt\"']\n")
    assert "(got 'matplotlib; os_name == \"nt\"')" in error.message


def test_a_course_file_that_is_not_yaml(tmp_path: Path) -> None:
    path, error = _course_error(tmp_path, "packages: [matplotlib\n")
    assert error.path == path and error.message.startswith("YAML syntax error")


def test_the_nearest_course_file_governs_alone(tmp_path: Path) -> None:
    (tmp_path / COURSE_FILE).write_text("packages: [matplotlib]\n", encoding="utf-8")
    inner = _course(tmp_path / "a2", "packages: [scipy]\n")
    outer = _course(tmp_path / "a1", None)
    assert course_of(inner).modules == ("scipy",)  # not merged with the parent's
    assert course_of(outer).modules == ("matplotlib",)


# --- python -m grader.exercise.requirements DIR... -------------------------------------------------------


def _requirements(*folders: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grader.exercise.requirements", *map(str, folders)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_requirements_lists_each_course_package_once(tmp_path: Path) -> None:
    (tmp_path / COURSE_FILE).write_text("packages: [matplotlib>=3.7, scipy]\n", encoding="utf-8")
    _course(tmp_path / "a1", None)
    _course(tmp_path / "a2", "packages: ['matplotlib>=3.7', {pip: scikit-learn, import: sklearn}]\n")
    proc = _requirements(tmp_path / "a1", tmp_path / "a2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "matplotlib>=3.7\nscipy\nscikit-learn\n"
    assert proc.stderr == ""


def test_requirements_of_the_bundled_library() -> None:
    proc = _requirements(EXERCISES)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "matplotlib>=3.5\n"
    none = _requirements(EXERCISES / "basics")
    assert (none.returncode, none.stdout) == (0, "")


def test_requirements_of_a_wrong_course_file_prints_nothing_and_says_why(tmp_path: Path) -> None:
    _course(tmp_path, "packages: ['-e git+https://example.com/x.git']\n")
    proc = _requirements(tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"{tmp_path / COURSE_FILE}:1: packages[0]: expected a pip requirement" in proc.stderr
