"""Notebook submissions: graded like the .py of their code cells, errors told by cell and line."""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, TRANSPOSED_GRAPH2, copy_exercise, line_of, write_source

from grader.classrun import plan
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.gradebook import decode, encode
from grader.grading import grade
from grader.handin import notebooks
from grader.handin.discover import discover_students, may_define, submission_from_path, untagged_hint
from grader.handin.prepare import prepare
from grader.outcomes import FailureKind, Location
from grader.report.json_report import to_json_line
from grader.report.terminal import notebook_note
from grader.results import NotebookUse, SubmissionResult


def _cell(kind: str, source: str | list[str]) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell |= {"execution_count": None, "outputs": []}
    return cell


def write_notebook(path: Path, cells: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def _lines(source: str) -> list[str]:
    return textwrap.dedent(source).lstrip().splitlines(keepends=True)


def homework(source: str) -> list[dict[str, Any]]:
    """A notebook as students hand them in: prose, an install line, magics, the work, a try-out cell."""
    return [
        _cell("markdown", ["# Homework 2\n", "Write graph2 below.\n"]),
        _cell("code", ["!pip install torch\n", "%matplotlib inline\n", "import numpy as np\n"]),
        _cell("code", _lines(source)),
        _cell("code", "%%time\nprint(graph2(np.ones((2, 2)), np.ones((2, 1)), np.ones((2, 1)))[0])"),
        _cell("code", "%%bash\necho this is not Python\n"),
    ]


def test_code_cells_become_python_with_magics_and_shell_lines_skipped(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "hw.ipynb", homework(CORRECT_GRAPH2))
    converted = notebooks.convert(path.read_bytes(), path)
    source = converted.source
    compile(source, "hw.ipynb.py", "exec")  # valid Python
    assert "pip install" not in source.replace("skipped by the grader: shell command !pip", "")
    assert "echo this is not Python" not in source
    assert "print(graph2(" in source  # a %%time cell still runs its code
    assert [span.cell for span in converted.cells] == [2, 3, 4, 5]  # markdown counts as a cell


def test_a_shell_line_before_a_future_import_keeps_the_notebook_valid(tmp_path: Path) -> None:
    """`!pip install` first, then `from __future__ import annotations`: the skipped line must not become a
    statement, which would have to come after the future import."""
    cells = [
        _cell("code", ["!pip install torch\n", "%load_ext autoreload\n"]),
        _cell("code", ["from __future__ import annotations\n", "import numpy as np\n"]),
        _cell("code", ["for i in range(2):\n", "    !echo inside a block\n"]),
    ]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    source = notebooks.convert(path.read_bytes(), path).source
    compile(source, "nb.ipynb.py", "exec")
    assert "    pass  # skipped by the grader: shell command !echo" in source


def test_lines_map_back_to_cells(tmp_path: Path) -> None:
    cells = [_cell("markdown", "intro"), _cell("code", "a = 1\nb = 2\n"), _cell("code", ["x = 1\n", "y = z"])]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    converted = notebooks.convert(path.read_bytes(), path)
    lines = converted.source.splitlines()
    where = lines.index("y = z") + 1
    assert converted.locate(where) == (3, 2)
    assert converted.locate(lines.index("b = 2") + 1) == (2, 2)
    traceback = f'  File "sub/nb.ipynb.py", line {where}, in <module>'
    relocated = notebooks.relocate(traceback, {"sub/nb.ipynb": converted})
    assert relocated == '  File "sub/nb.ipynb", cell 3, line 2, in <module>'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "not a readable notebook"),
        ('{"worksheets": []}', "no 'cells' list"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1: 'source' is neither text"),
        (
            '{"cells": [{"cell_type": "code", "source": "x = 1  # \\ud800"}]}',
            "cell 1: character 10 is a lone",
        ),
    ],
)
def test_unreadable_notebooks_are_refused_with_the_reason(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(notebooks.NotebookError, match=expected):
        submission_from_path(path, "graph2")


def test_a_class_folder_counts_notebooks_as_students(tmp_path: Path) -> None:
    write_notebook(tmp_path / "ana.ipynb", homework(CORRECT_GRAPH2))
    write_source(tmp_path / "ben.py", CORRECT_GRAPH2)
    assert [name for name, _ in discover_students(tmp_path)] == ["ana", "ben"]


def _grade(graph2: Exercise, path: Path) -> SubmissionResult:
    return grade(graph2, submission_from_path(path, "graph2"), Settings(3, 12))


@pytest.mark.parametrize("source", [CORRECT_GRAPH2, TRANSPOSED_GRAPH2], ids=["correct", "transposed"])
def test_a_notebook_grades_like_the_equivalent_py(graph2: Exercise, tmp_path: Path, source: str) -> None:
    as_notebook = _grade(graph2, write_notebook(tmp_path / "nb" / "hw.ipynb", homework(source)))
    as_py = _grade(graph2, write_source(tmp_path / "py" / "hw.py", source))
    assert as_notebook.error is None, as_notebook.error
    assert [(r.name, r.verdict, r.score) for r in as_notebook.returns] == [
        (r.name, r.verdict, r.score) for r in as_py.returns
    ]
    assert as_notebook.score == as_py.score


def test_an_error_in_a_notebook_names_its_cell_and_line(graph2: Exercise, tmp_path: Path) -> None:
    """Graded whole: the try-out cell that calls the broken graph2 at import is skipped with a note naming
    its cell and line (not the notebook's failure); the trials then fail by graph2's own cell and line."""
    broken = CORRECT_GRAPH2.replace("f.backward()", "f.backwards()")
    result = _grade(graph2, write_notebook(tmp_path / "hw.ipynb", homework(broken)))
    assert result.notebook is not None
    (failed,) = result.notebook.failed_cells
    assert (failed.notebook, failed.cell, failed.line) == ("hw.ipynb", 4, 2)
    assert failed.error.startswith("AttributeError:") and "backwards" in failed.error
    error = result.error  # every trial raises it
    assert error is not None and error.kind == "exception"
    line = line_of(textwrap.dedent(broken).lstrip(), "f.backwards()")
    assert f'File "hw.ipynb", cell 3, line {line}, in graph2' in error.traceback
    assert error.location == Location("hw.ipynb", line, "graph2", cell=3)
    assert error.where == f"hw.ipynb cell 3, line {line}, in graph2"
    assert ".ipynb.py" not in error.traceback + error.message + failed.error


# --- what of a notebook an exercise grades: notebook: {cells: all | definitions | tagged, tag} ---------

DEFINITIONS = notebooks.Selection("definitions")
TAGGED = notebooks.Selection("tagged")


def _tagged(kind: str, source: str | list[str], *tags: str) -> dict[str, Any]:
    cell = _cell(kind, source)
    cell["metadata"] = {"tags": list(tags)}
    return cell


def colab_homework(source: str) -> list[dict[str, Any]]:
    """A notebook as a Colab course hands it back: installs, plots, the course's helpers (absent here), a
    download, the work with its try-out call in the same cell, a training loop, and a cell that raises.
    Graded whole, its import fails; only its definitions, or its tagged cells, are gradable."""
    work = (
        textwrap.dedent(source).lstrip()
        + "\nprint(graph2(np.ones((2, 2)), np.ones((2, 1)), np.ones((2, 1))))\n"
    )
    return [
        _cell("markdown", ["# Homework 2\n"]),
        _tagged(
            "code",
            ["!pip install torch\n", "%matplotlib inline\n", "import numpy as np\n", "import torch\n"],
            "grade",
        ),
        _cell(
            "code",
            [
                "from coutils import reset_seed, Solver\n",
                "import google.colab\n",
                "import urllib.request\n",
                "reset_seed(0)\n",
            ],
        ),
        _cell("code", "data = urllib.request.urlopen('https://example.com/cifar-10.tgz').read()\n"),
        _tagged("code", _lines(work), "grade", "otter"),
        _cell("code", "eps = 1e-5\nfor epoch in range(100):\n    print(epoch)\n"),
        _cell("code", "raise RuntimeError('the top-level code ran')\n"),
        _cell("code", "import sys\nsys.exit(3)\n"),
    ]


def _converted(tmp_path: Path, cells: list[dict[str, Any]], selection: notebooks.Selection) -> Any:
    path = write_notebook(tmp_path / "hw.ipynb", cells)
    return notebooks.convert(path.read_bytes(), path, selection)


def test_definitions_keeps_imports_functions_and_constants_of_every_cell(tmp_path: Path) -> None:
    converted = _converted(tmp_path, colab_homework(CORRECT_GRAPH2), DEFINITIONS)
    source = converted.source
    compile(source, "hw.ipynb.py", "exec")
    assert "def graph2(W_np, x_np, b_np):" in source  # the def of a cell that also calls it
    assert "eps = 1e-5" in source
    for gone in ("print(", "urlopen", "reset_seed(0)", "range(100)", "RuntimeError", "sys.exit", "pip", "%"):
        assert gone not in source.replace("from coutils import reset_seed", ""), gone
    # reset_seed(0), data = urlopen(...), the print of the work cell, the loop, the raise, sys.exit
    assert converted.left_out == 6
    assert converted.code_cells == 7
    assert [span.cell for span in converted.cells] == [2, 3, 5, 6, 8]  # the download cell has nothing left


def test_definitions_guards_imports_so_a_missing_module_is_named_not_fatal(tmp_path: Path) -> None:
    """The converted file is ours to run here (the notebook's text is the test's own): a missing module
    leaves its names undefined and is listed, the other imports bind as usual."""
    cells = [
        _cell("code", ["import json\n", "from coutils import reset_seed, Solver\n", "import google.colab\n"]),
        _cell("code", ["from __future__ import annotations\n"]),
    ]
    source = _converted(tmp_path, cells, DEFINITIONS).source
    assert source.count("try: ") == 3  # a future import stays a bare statement
    namespace: dict[str, Any] = {}
    exec(compile(source.replace("from __future__ import annotations", ""), "hw.ipynb.py", "exec"), namespace)
    assert "json" in namespace
    assert "reset_seed" not in namespace and "Solver" not in namespace and "google" not in namespace
    assert namespace[notebooks.SKIPPED_IMPORTS] == [
        "from coutils import reset_seed, Solver (cell 1, line 2)",
        "import google.colab (cell 1, line 3)",
    ]


def test_definitions_takes_statements_apart_where_they_share_lines(tmp_path: Path) -> None:
    cells = [
        _cell(
            "code",
            _lines(
                """
                eps = 1e-5; W = np.zeros(3); import math
                @functools.lru_cache()
                def f(a):
                    return a * 2
                from math import (pi,
                                  e)  # constants
                DTYPE = math.pi; Y = undefined.attr; Z = -2 ** 10, (1, 'a')
                train = lambda x, lr=eps: x - lr
                if __name__ == "__main__":
                    f(3)
                def broken(:
                """
            ),
        ),
        _cell("code", "def g():\n    return 1\ng()\nG = g; PI = math.pi; R = random.random\n"),
    ]
    converted = _converted(tmp_path, cells, DEFINITIONS)
    lines = converted.source.splitlines()
    # the first cell does not parse: kept whole, so its SyntaxError is the student's to see, as in `all`
    assert "W = np.zeros(3)" in converted.source and "def broken(:" in converted.source
    cells[0]["source"] = cells[0]["source"][:-1]  # without `def broken(:`
    converted = _converted(tmp_path, cells, DEFINITIONS)
    source = converted.source
    compile(source, "hw.ipynb.py", "exec")
    lines = source.splitlines()
    assert "eps = 1e-5" in lines and "W = np.zeros(3)" not in source
    assert "try: import math" in lines
    # a decorator runs when its function is defined: refused with it, and told
    assert "@functools.lru_cache()" not in lines and "def f(a):" not in lines
    assert len(converted.refused) == 1 and "`@functools.lru_cache()`" in converted.refused[0]
    assert "try: from math import (pi," in lines and "                  e)" in lines
    assert "DTYPE = math.pi" in lines and "Z = -2 ** 10, (1, 'a')" in lines
    assert "Y = undefined.attr" not in source  # reads a name nothing above declares
    assert "train = lambda x, lr=eps: x - lr" in lines
    assert "__main__" not in source and "g()" not in lines
    assert "G = g" in lines and "PI = math.pi" in lines  # names the cells above declared
    assert "R = random.random" not in lines
    assert converted.left_out == 6  # W = ..., Y = ..., the __main__ block, g(), R = ..., def f
    # every kept line still tells its cell and line, the guards' `except` lines their import's
    assert converted.locate(lines.index("DTYPE = math.pi") + 1) == (1, 7)
    assert converted.locate(lines.index("                  e)") + 1) == (1, 6)
    assert converted.locate(lines.index("try: import math") + 2) == (1, 1)
    assert converted.locate(lines.index("    return 1") + 1) == (2, 2)


def test_definitions_places_map_back_to_cells_in_tracebacks(tmp_path: Path) -> None:
    cells = [
        _cell("code", "import numpy as np\nnp.random.seed(0)\nx = np.ones(3)\n"),
        _cell("markdown", "text"),
        _cell("code", "print('try it')\ndef f(a):\n    return a.missing\n"),
    ]
    converted = _converted(tmp_path, cells, DEFINITIONS)
    lines = converted.source.splitlines()
    where = lines.index("    return a.missing") + 1
    traceback = f'  File "hw.ipynb.py", line {where}, in f'
    assert notebooks.relocate(traceback, {"hw.ipynb": converted}) == '  File "hw.ipynb", cell 3, line 3, in f'


def test_tagged_keeps_the_tagged_code_cells_whole(tmp_path: Path) -> None:
    cells = colab_homework(CORRECT_GRAPH2)
    converted = _converted(tmp_path, cells, TAGGED)
    source = converted.source
    compile(source, "hw.ipynb.py", "exec")
    assert "print(graph2(" in source  # whole: the try-out call of a tagged cell stays
    assert "coutils" not in source and "urlopen" not in source and "RuntimeError" not in source
    assert [span.cell for span in converted.cells] == [2, 5]
    assert converted.left_out == 5  # code cells
    line = converted.source.splitlines().index("def graph2(W_np, x_np, b_np):") + 1
    assert converted.locate(line) == (5, line_of(textwrap.dedent(CORRECT_GRAPH2).lstrip(), "def graph2"))
    other = _converted(tmp_path, cells, notebooks.Selection("tagged", "otter"))
    assert [span.cell for span in other.cells] == [5]


def test_tagged_ignores_tags_that_are_not_a_list_of_strings(tmp_path: Path) -> None:
    odd = [_cell("code", "a = 1\n"), _cell("code", "b = 2\n"), _tagged("code", "c = 3\n", "grade")]
    odd[0]["metadata"] = {"tags": "grade"}
    odd[1]["metadata"] = [1, 2]
    converted = _converted(tmp_path, odd, TAGGED)
    assert converted.source.strip() == "c = 3"
    assert converted.left_out == 2


def test_all_is_the_default_and_leaves_nothing_out(tmp_path: Path) -> None:
    cells = colab_homework(CORRECT_GRAPH2)
    path = write_notebook(tmp_path / "hw.ipynb", cells)
    default = notebooks.convert(path.read_bytes(), path)
    assert default == notebooks.convert(path.read_bytes(), path, notebooks.Selection("all"))
    assert default.left_out == 0 and "RuntimeError" in default.source


def test_discovery_and_the_import_warning_see_what_the_selection_runs(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "hw.ipynb", colab_homework(CORRECT_GRAPH2))
    whole = submission_from_path(path, "graph2")
    assert whole.runs_at_import[0] == "hw.ipynb cell 3 line 4"  # reset_seed(0): told by cell and line
    assert whole.left_out == 0
    definitions = submission_from_path(path, "graph2", notebook=DEFINITIONS)
    assert definitions.runs_at_import == ()  # the guarded imports are not code at import
    assert (definitions.notebook, definitions.left_out) == (DEFINITIONS, 6)
    assert may_define(definitions, "graph2")
    untagged = [c for c in colab_homework(CORRECT_GRAPH2) if "tags" not in c["metadata"]]
    nothing = submission_from_path(
        write_notebook(tmp_path / "none.ipynb", untagged), "graph2", notebook=TAGGED
    )
    assert not may_define(nothing, "graph2")  # no cell tagged: nothing of the exercise handed in
    assert (
        prepare(definitions).files[0][1].decode()
        == notebooks.convert(path.read_bytes(), path, DEFINITIONS).source
    )


def test_a_class_run_prepares_each_hand_in_for_its_exercise(tmp_path: Path) -> None:
    folder = copy_exercise(tmp_path / "graph2", append="notebook:\n  cells: tagged\n  tag: otter\n")
    exercise = load_exercise(folder)
    path = write_notebook(tmp_path / "class" / "ana.ipynb", colab_homework(CORRECT_GRAPH2))
    (task,) = plan([exercise], [("ana", path)], Settings(seed=0, trials=5))
    assert task.submission is not None
    assert task.submission.notebook == notebooks.Selection("tagged", "otter")
    assert task.submission.left_out == 6
    # the gradebook keys a result by the hand-in's bytes and the spec's: another mode grades again
    other = plan([load_exercise(GRAPH2)], [("ana", path)], Settings(0, 5))[0]
    assert task.key.exercise_hash != other.key.exercise_hash


def test_the_mode_and_what_it_left_out_reach_the_report_and_the_gradebook(
    graph2: Exercise, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "hw.ipynb", colab_homework(CORRECT_GRAPH2))
    result = grade(graph2, submission_from_path(path, "graph2", notebook=DEFINITIONS), Settings(3, 5))
    assert result.error is None, result.error
    assert result.notebook == NotebookUse(
        cells="definitions",
        left_out=6,
        skipped_imports=(
            "from coutils import reset_seed, Solver (cell 3, line 1)",
            "import google.colab (cell 3, line 2)",
        ),
    )
    assert decode(encode(result)) == result
    note = json.loads(to_json_line(result))["notebook"]
    assert note == {
        "cells": "definitions",
        "tag": None,
        "left_out": 6,
        "refused_definitions": [],
        "skipped_imports": list(result.notebook.skipped_imports),
        "failed_cells": [],
    }
    assert notebook_note(result.notebook).startswith("notebook cells: definitions")
    as_py = grade(
        graph2,
        submission_from_path(write_source(tmp_path / "hw.py", CORRECT_GRAPH2), "graph2"),
        Settings(3, 5),
    )
    assert as_py.notebook is None and json.loads(to_json_line(as_py))["notebook"] is None


def test_grader_check_grades_a_notebook_by_the_exercise_mode(
    run_grader: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """The real command: the notebook whose top-level code fails (a missing course helper, a download,
    a raise, sys.exit) passes by its definitions or its tagged cells, and fails as today graded whole."""
    notebook = write_notebook(tmp_path / "hw.ipynb", colab_homework(CORRECT_GRAPH2))
    whole = copy_exercise(tmp_path / "whole", append="notebook: {cells: all}\n")
    definitions = copy_exercise(tmp_path / "definitions")  # the default
    tagged = copy_exercise(tmp_path / "tagged", append="notebook:\n  cells: tagged\n  tag: grade\n")

    proc = run_grader("check", definitions, notebook, "--trials", "10", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert result["score"] == result["max_score"] == 10
    assert result["runs_at_import"] == []
    assert result["notebook"]["cells"] == "definitions" and result["notebook"]["left_out"] == 6
    assert "import google.colab (cell 3, line 2)" in result["notebook"]["skipped_imports"]

    proc = run_grader("check", tagged, notebook, "--trials", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "notebook cells: tagged 'grade' (those code cells, whole); 5 others left out" in proc.stdout
    assert "score 10/10" in proc.stdout
    assert "your files run code at import (hw.ipynb cell 5 line " in proc.stdout  # a tagged cell runs whole

    proc = run_grader("check", whole, notebook, "--trials", "10", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert result["error"]["kind"] == "import"
    assert result["error"]["message"] == "ModuleNotFoundError: No module named 'coutils'"
    assert 'File "hw.ipynb", cell 3, line 1, in <module>' in result["error"]["traceback"]
    assert result["notebook"] == {
        "cells": "all",
        "tag": None,
        "left_out": 0,
        "refused_definitions": [],
        "skipped_imports": [],
        "failed_cells": [],
    }


def test_a_function_in_an_untagged_cell_is_pointed_out(graph2: Exercise, tmp_path: Path) -> None:
    """The student wrote graph2 but forgot the tag: the error says which notebook, and how to tag it."""
    cells = [_tagged("code", "import numpy as np\n", "grade"), _cell("code", _lines(CORRECT_GRAPH2))]
    path = write_notebook(tmp_path / "hw.ipynb", cells)
    submission = submission_from_path(path, "graph2", notebook=TAGGED)
    hint = untagged_hint(submission, "graph2")
    assert hint.startswith("hw.ipynb defines graph2() in a cell without the tag 'grade'")
    result = grade(graph2, submission, Settings(0, 3))
    assert result.error is not None and result.error.kind is FailureKind.MISSING_FUNCTION
    assert result.error.message.endswith(hint)
    # tagged, or graded by another mode, there is nothing to point out
    assert untagged_hint(submission_from_path(path, "graph2", notebook=DEFINITIONS), "graph2") == ""
    tagged = write_notebook(tmp_path / "ok.ipynb", [_tagged("code", _lines(CORRECT_GRAPH2), "grade")])
    assert untagged_hint(submission_from_path(tagged, "graph2", notebook=TAGGED), "graph2") == ""


def test_graded_whole_each_cell_runs_on_after_a_failing_one(tmp_path: Path) -> None:
    """`all` runs the cells one by one: a cell failing outside its definitions is skipped with a note, the
    next cells run; one needing what it would have made fails in turn, told the same way; the first
    cell's `from __future__` applies to every cell, as to one module."""
    exercise = load_exercise(copy_exercise(tmp_path / "graph2", append="notebook: {cells: all}\n"))
    cells = [
        _cell("code", "from __future__ import annotations\nimport numpy as np\nimport torch\n"),
        _cell("code", "def scale(x: NotDefinedAnywhere) -> float:\n    return 1.0\n"),
        _cell("code", "data = np.load('cifar10.npz')\nmean = data.mean()\n"),
        _cell("code", "centred = mean - 1\n"),
        _cell("code", _lines(CORRECT_GRAPH2)),
    ]
    path = write_notebook(tmp_path / "hw.ipynb", cells)
    submission = submission_from_path(path, "graph2", notebook=exercise.spec.notebook.selection)
    result = grade(exercise, submission, Settings(2, 8))
    assert result.error is None, result.error
    assert result.score == result.max_score
    assert result.notebook is not None
    first, second = result.notebook.failed_cells
    assert (first.cell, first.line) == (3, 1) and first.error.startswith("FileNotFoundError:")
    assert (second.cell, second.line) == (4, 1)
    assert second.error == "NameError: name 'mean' is not defined"
    assert "hw.ipynb cell 4, line 1: NameError" in notebook_note(result.notebook)


def test_graded_whole_a_failing_definition_still_fails_the_notebook(tmp_path: Path) -> None:
    exercise = load_exercise(copy_exercise(tmp_path / "graph2", append="notebook: {cells: all}\n"))
    cells = [
        _cell("code", _lines(CORRECT_GRAPH2)),
        _cell("code", "print('checked')\nimport no_such_helper\n"),
    ]
    path = write_notebook(tmp_path / "hw.ipynb", cells)
    submission = submission_from_path(path, "graph2", notebook=exercise.spec.notebook.selection)
    result = grade(exercise, submission, Settings(2, 8))
    assert result.error is not None and result.error.kind == "import"
    assert result.error.message == "ModuleNotFoundError: No module named 'no_such_helper'"
    assert 'File "hw.ipynb", cell 2, line 2, in <module>' in result.error.traceback
