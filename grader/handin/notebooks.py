"""Jupyter notebooks as submissions: the Python file made of their code cells.

IPython magics (`%time`, `%%capture`) and shell lines (`!pip install ...`) mean nothing outside Jupyter:
they become a comment on the same line (`pass` inside a block), so every other line keeps its number and
an error in the converted file can be told as "cell 3, line 2" of the notebook.

Which code cells, and how much of each, an exercise takes is its `Selection` (the exercise's
`notebook:` field): only the definitions of every cell (`definitions`, the default), every cell (`all`:
the worker runs them one by one, and a cell failing outside its definitions is a note, not a failure),
or only the cells carrying a tag (`tagged`). The student's text is only ever parsed here, never run.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from grader.errors import UsageError
from grader.handin.defining import Scope, bound_names, declares, refused_definition, runs_code
from grader.outcomes import Location

SUFFIX = ".ipynb"
CONVERTED = ".py"  # appended: graph2.ipynb is run as graph2.ipynb.py
_SKIPPED = "# skipped by the grader: {what}"
# Inside a block the line must stay a statement; at the top a comment, which may precede
# `from __future__ import ...` where a statement may not.
_SKIPPED_IN_BLOCK = "pass  " + _SKIPPED
_PYTHON_CELL_MAGICS = {"%%time", "%%timeit", "%%capture", "%%prun"}
_MAX_INT_DIGITS = 40  # execution counts, nbformat versions: a few digits
# Where the worker finds the imports a `definitions` notebook skipped: a list in the module's globals.
SKIPPED_IMPORTS = "__grader_skipped_imports__"
_MISSING = "__grader_missing__"  # the guard's exception, deleted by Python after its handler
_SHOWN_IMPORT = 120  # characters of an import statement named in the report

Cells = Literal["all", "definitions", "tagged"]
DEFAULT_TAG = "grade"  # nbgrader and Otter tag cells in JupyterLab's cell metadata the same way


@dataclass(frozen=True)
class Selection:
    """What of a notebook an exercise grades: `all` its code cells, as Jupyter runs them; the
    `definitions` of every code cell (imports, functions, classes, constants); or the code cells `tagged`
    with `tag`, whole. An exercise's default is `definitions` (NotebookSpec): notebooks hold try-out
    calls, plots and scratch. Here, converting a notebook without a selection takes it whole."""

    cells: Cells = "all"
    tag: str = DEFAULT_TAG


ALL = Selection()


class NotebookError(UsageError):
    pass


@dataclass(frozen=True)
class CellSpan:
    cell: int  # 1-based position among all the notebook's cells, markdown included: as a reader counts
    first_line: int  # 1-based line of the converted file where the cell starts
    lines: int
    # The cell's line each converted line comes from, where they are not simply 1, 2, 3...: a
    # `definitions` cell leaves statements out and wraps imports in a guard of two lines.
    origin: tuple[int, ...] = ()

    def line_in_cell(self, line: int) -> int:
        offset = line - self.first_line
        return self.origin[offset] if self.origin else offset + 1


@dataclass(frozen=True)
class ConvertedNotebook:
    source: str
    cells: tuple[CellSpan, ...]
    selection: Selection = ALL
    # Left out by the selection: top-level statements (`definitions`) or code cells (`tagged`).
    left_out: int = 0
    # Definitions `definitions` refused, since defining them would run code: "cell 3, line 1: `def f`:
    # its decorator calls something", in the student's words (refused_definition).
    refused: tuple[str, ...] = ()
    code_cells: int = 0  # in the whole notebook, kept or not

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, line within the cell) of a line of the converted file; None between cells."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.lines:
                return span.cell, span.line_in_cell(line)
        return None


def convert(content: bytes, path: Path, selection: Selection = ALL) -> ConvertedNotebook:
    """The code cells of the notebook `content` (read from `path`) that `selection` takes, as one Python
    source; NotebookError says what is wrong with it."""
    try:
        document = json.loads(content.decode("utf-8"), parse_int=_bounded_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"{path}: not a readable notebook ({exc})") from None
    except RecursionError:
        raise NotebookError(f"{path}: not a readable notebook (its JSON is nested too deeply)") from None
    except _Unreadable as exc:
        raise NotebookError(f"{path}: not a readable notebook ({exc})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError(f"{path}: not a notebook: no 'cells' list at the top (nbformat 4 expected)")
    lines: list[str] = []
    spans: list[CellSpan] = []
    left_out = code_cells = 0
    declared = Scope()  # by the cells kept so far: what a constant may alias, a base may be
    refused: list[str] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_cells += 1
        text = cell.get("source", "")
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "".join(text)
        if not isinstance(text, str):
            raise NotebookError(f"{path}: cell {index + 1}: 'source' is neither text nor a list of lines")
        if selection.cells == "tagged" and selection.tag not in _tags(cell):
            left_out += 1
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # JSON's "\ud800" escapes a lone surrogate, which no file holds
            raise NotebookError(
                f"{path}: cell {index + 1}: character {exc.start + 1} is a lone surrogate, no text: remove it"
            ) from None
        cell_lines = _python_lines(text)
        origin: tuple[int, ...] = ()
        if selection.cells == "definitions":
            cell_lines, origin, dropped = _definitions(cell_lines, index + 1, declared, refused)
            left_out += dropped
            if not cell_lines:
                continue
        spans.append(CellSpan(index + 1, len(lines) + 1, len(cell_lines), origin))
        lines += [*cell_lines, ""]  # a blank line between cells, as between a file's blocks
    return ConvertedNotebook(
        "\n".join(lines) + "\n",
        tuple(spans),
        selection,
        left_out=left_out,
        refused=tuple(refused),
        code_cells=code_cells,
    )


def _tags(cell: dict[str, object]) -> list[str]:
    """The cell's tags as JupyterLab, nbgrader and Otter write them (`metadata.tags`); none when that is
    not a list of strings."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


class _Unreadable(ValueError):
    pass


def _bounded_int(text: str) -> int:
    # Python refuses to convert integers of more than 4300 digits (a ValueError deep in json); no
    # notebook field needs a hundredth of that.
    if len(text) > _MAX_INT_DIGITS:
        raise _Unreadable(f"an integer of {len(text)} digits")
    return int(text)


def _python_lines(text: str) -> list[str]:
    lines = text.splitlines() or [""]
    first = lines[0].strip()
    if first.startswith("%%"):  # a cell magic owns the whole cell
        magic = first.split()[0]
        head = _SKIPPED.format(what=f"cell magic {magic}")
        if magic not in _PYTHON_CELL_MAGICS:  # %%bash, %%writefile, %%html: not Python
            return [head] + ["" for _ in lines[1:]]
        lines = [head, *lines[1:]]  # %%time and the like run the cell: run it once
    converted = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            indent = line[: len(line) - len(stripped)]
            kind = "magic" if stripped.startswith("%") else "shell command"
            skipped = _SKIPPED_IN_BLOCK if indent else _SKIPPED
            converted.append(indent + skipped.format(what=f"{kind} {stripped.split()[0]}"))
        else:
            converted.append(line)
    return converted


def _definitions(
    lines: list[str], cell: int, scope: Scope, refused: list[str]
) -> tuple[list[str], tuple[int, ...], int]:
    """The cell's top-level definitions, as lines; the cell's line each comes from; how many top-level
    statements were left out. `scope`, what the cells above declared, gains this cell's; a definition
    whose defining would run code is told in `refused` and left out (defining.runs_code).

    A cell that does not parse is kept whole: its SyntaxError, told by cell and line, is the student's to
    see, as in `all`. Each kept import is guarded (_guarded).
    """
    try:
        tree = ast.parse("\n".join(lines) + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return lines, (), 0
    encoded = [line.encode("utf-8") for line in lines]  # ast's columns count UTF-8 bytes
    kept: list[str] = []
    origin: list[int] = []
    left_out = 0
    for node in tree.body:
        if not declares(node, scope.names):
            left_out += 1
            continue
        why = runs_code(node, scope)
        if why is not None:
            left_out += 1
            refused.append(refused_definition(cell, _first_line(node), node, why))
            continue
        scope.add(node)
        text = _statement_lines(node, encoded)
        first = _first_line(node)
        origin += [first + k for k in range(len(text))]
        if _guardable(node):
            text = _guarded(node, text, cell, first)
            origin.append(first)  # the guard's `except` line
        kept += text
    return kept, tuple(origin), left_out


def definition_lines(statements: list[ast.stmt]) -> frozenset[int]:
    """The first lines of the top-level `statements` (a notebook's, in order) that `definitions` keeps:
    under `all`, a cell failing in any other statement is a note, not the notebook's failure."""
    bound: set[str] = set()
    kept: set[int] = set()
    for node in statements:
        if declares(node, bound):
            bound |= bound_names(node)
            kept.add(node.lineno)
    return frozenset(kept)


def _first_line(node: ast.stmt) -> int:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return node.lineno


def _statement_lines(node: ast.stmt, encoded: list[bytes]) -> list[str]:
    """The statement's own text, line by line: without what shares its first or last line (`x = f();
    import a`, a trailing comment). A decorated definition starts at its first decorator's line."""
    first, last = _first_line(node), node.end_lineno or node.lineno
    start = 0 if first < node.lineno else node.col_offset  # a decorator starts its line
    end = node.end_col_offset if node.end_col_offset is not None else len(encoded[last - 1])
    chunk = encoded[first - 1 : last]
    if len(chunk) == 1:
        return [chunk[0][start:end].decode("utf-8")]
    return [
        chunk[0][start:].decode("utf-8"),
        *(line.decode("utf-8") for line in chunk[1:-1]),
        chunk[-1][:end].decode("utf-8"),
    ]


def _guardable(node: ast.stmt) -> bool:
    # `from __future__` must stay a bare statement, and a relative import fails in a notebook anyway.
    return isinstance(node, ast.Import) or (
        isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__"
    )


def _guarded(node: ast.stmt, text: list[str], cell: int, line: int) -> list[str]:
    """The import, where a module the sandbox lacks leaves its names undefined and is listed for the
    report, instead of stopping the grading.

    Notebooks import what only Jupyter or the course's machines have: `google.colab`, a course's
    `coutils` helpers, `matplotlib` for plots. What `definitions` keeps rarely needs them when called;
    where it does, the call fails on the undefined name, by its line, and the report names the import
    it skipped. Only a missing module is forgiven: any other failure of an import is the student's to
    see, as in `all`. The `except` line is the guard's own; it maps to the import's first line.
    """
    shown = ast.unparse(node)
    if len(shown) > _SHOWN_IMPORT:
        shown = shown[: _SHOWN_IMPORT - 3] + "..."
    note = repr(f"{shown} (cell {cell}, line {line})")
    # A module the machine has but the course does not declare is refused by a subclass
    # (worker/imports.py) whose message says how the instructor adds it: that message goes with the note.
    why = f"('' if type({_MISSING}) is ModuleNotFoundError else ': ' + str({_MISSING}))"
    record = f"globals().setdefault({SKIPPED_IMPORTS!r}, []).append({note} + {why})"
    return ["try: " + text[0], *text[1:], f"except ModuleNotFoundError as {_MISSING}: {record}"]


_NAME = r'[^"\s]+\.ipynb'  # a notebook's name as a traceback's text shows it, relocated
_LOCATION = re.compile(rf'(?P<file>{_NAME})\.py", line (?P<line>\d+)')


def relocate(text: str, notebooks: Mapping[str, ConvertedNotebook]) -> str:
    """Rewrite 'File "nb.ipynb.py", line 14' in tracebacks as 'File "nb.ipynb", cell 3, line 2'."""

    def replace(match: re.Match[str]) -> str:
        notebook = notebooks.get(match["file"])
        place = notebook.locate(int(match["line"])) if notebook is not None else None
        if place is None:
            return match.group(0)
        return f'{match["file"]}", cell {place[0]}, line {place[1]}'

    return _LOCATION.sub(replace, text) if notebooks else text


def relocate_location(location: Location, notebooks: Mapping[str, ConvertedNotebook]) -> Location:
    """A failure's location in a converted notebook as `relocate` tells its traceback's: the notebook's
    own name, cell and line."""
    name = location.file.removesuffix(CONVERTED)
    notebook = notebooks.get(name) if re.fullmatch(_NAME + re.escape(CONVERTED), location.file) else None
    place = notebook.locate(location.line) if notebook is not None else None
    if place is None:
        return location
    return replace(location, file=name, cell=place[0], line=place[1])
