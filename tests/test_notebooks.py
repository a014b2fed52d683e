"""Notebook submissions: graded like the .py of their code cells, errors told by cell and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, TRANSPOSED_GRAPH2, line_of, write_source

from grader.exercise.spec import Exercise
from grader.grading import grade
from grader.handin import notebooks
from grader.handin.discover import discover_students, submission_from_path
from grader.results import SubmissionResult


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
    return grade(graph2, submission_from_path(path, "graph2"), seed=3, trial_count=12)


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
    broken = CORRECT_GRAPH2.replace("f.backward()", "f.backwards()")
    result = _grade(graph2, write_notebook(tmp_path / "hw.ipynb", homework(broken)))
    assert result.error is not None
    assert result.error.kind == "import"  # the try-out cell calls graph2 at import time
    line = line_of(textwrap.dedent(broken).lstrip(), "f.backwards()")
    assert f'File "hw.ipynb", cell 3, line {line}, in graph2' in result.error.traceback
    assert 'File "hw.ipynb", cell 4, line 2, in <module>' in result.error.traceback
    assert ".ipynb.py" not in result.error.traceback + result.error.message
