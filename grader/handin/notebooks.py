"""Jupyter notebooks as submissions: the Python file made of their code cells.

IPython magics (`%time`, `%%capture`) and shell lines (`!pip install ...`) mean nothing outside Jupyter:
they become a comment on the same line (`pass` inside a block), so every other line keeps its number and
an error in the converted file can be told as "cell 3, line 2" of the notebook.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError

SUFFIX = ".ipynb"
CONVERTED = ".py"  # appended: graph2.ipynb is run as graph2.ipynb.py
_SKIPPED = "# skipped by the grader: {what}"
# Inside a block the line must stay a statement; at the top a comment, which may precede
# `from __future__ import ...` where a statement may not.
_SKIPPED_IN_BLOCK = "pass  " + _SKIPPED
_PYTHON_CELL_MAGICS = {"%%time", "%%timeit", "%%capture", "%%prun"}
_MAX_INT_DIGITS = 40  # execution counts, nbformat versions: a few digits


class NotebookError(UsageError):
    pass


@dataclass(frozen=True)
class CellSpan:
    cell: int  # 1-based position among all the notebook's cells, markdown included: as a reader counts
    first_line: int  # 1-based line of the converted file where the cell starts
    lines: int


@dataclass(frozen=True)
class ConvertedNotebook:
    source: str
    cells: tuple[CellSpan, ...]

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, line within the cell) of a line of the converted file; None between cells."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.lines:
                return span.cell, line - span.first_line + 1
        return None


def convert(content: bytes, path: Path) -> ConvertedNotebook:
    """The code cells of the notebook `content` (read from `path`) as one Python source; NotebookError
    says what is wrong with it."""
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
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "".join(text)
        if not isinstance(text, str):
            raise NotebookError(f"{path}: cell {index + 1}: 'source' is neither text nor a list of lines")
        cell_lines = _python_lines(text)
        spans.append(CellSpan(index + 1, len(lines) + 1, len(cell_lines)))
        lines += [*cell_lines, ""]  # a blank line between cells, as between a file's blocks
    return ConvertedNotebook("\n".join(lines) + "\n", tuple(spans))


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


_LOCATION = re.compile(r'(?P<file>[^"\s]+\.ipynb)\.py", line (?P<line>\d+)')


def relocate(text: str, notebooks: Mapping[str, ConvertedNotebook]) -> str:
    """Rewrite 'File "nb.ipynb.py", line 14' in tracebacks as 'File "nb.ipynb", cell 3, line 2'."""

    def replace(match: re.Match[str]) -> str:
        notebook = notebooks.get(match["file"])
        place = notebook.locate(int(match["line"])) if notebook is not None else None
        if place is None:
            return match.group(0)
        return f'{match["file"]}", cell {place[0]}, line {place[1]}'

    return _LOCATION.sub(replace, text) if notebooks else text
