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
import builtins
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from grader.errors import UsageError

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
    declared: set[str] = set()  # by the cells kept so far: what a constant may alias
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


# `definitions` keeps what a notebook declares for later cells to use, and drops what it does: the
# try-out calls, plots, downloads and training loops students leave in. Much as the `ipynb` package's
# `ipynb.fs.defs` (definitions, imports, ALL_CAPS constants), with any name bound to a literal kept as
# a constant: course notebooks write `eps = 1e-5` and `reg = 0.1` in lower case. An assignment from a
# call (`W = np.random.randn(3, 3)`, `data = load_cifar()`) is work and is dropped, so a function that
# reads such a global fails when called, by its name and line: the author who wants it kept tags cells.
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Pass)


def _definitions(
    lines: list[str], cell: int, bound: set[str], refused: list[str]
) -> tuple[list[str], tuple[int, ...], int]:
    """The cell's top-level definitions, as lines; the cell's line each comes from; how many top-level
    statements were left out. `bound`, the names the cells above declared, gains this cell's.

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
        if not _declares(node, bound):
            left_out += 1
            continue
        why = runs_code(node, bound)
        if why is not None:
            left_out += 1
            refused.append(refused_definition(cell, _first_line(node), node, why))
            continue
        bound |= _bound_names(node)
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
        if _declares(node, bound):
            bound |= _bound_names(node)
            kept.add(node.lineno)
    return frozenset(kept)


def _declares(node: ast.stmt, bound: set[str]) -> bool:
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, ast.Expr):  # a docstring; any other expression is a call or a display
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Assign):
        return all(_plain_target(t) for t in node.targets) and _plain_value(node.value, bound)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and (node.value is None or _plain_value(node.value, bound))
    if isinstance(node, ast.Try):  # try: import torch / except ImportError: torch = None
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        inner = set(bound)
        return all(_declares(statement, inner) for block in blocks for statement in block)
    return False


def _plain_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return all(_plain_target(t) for t in target.elts)
    return isinstance(target, ast.Name)


def _plain_value(value: ast.expr, bound: set[str]) -> bool:
    """A literal (`1e-5`, `(3, 4)`, `-1`, `2 ** 10`), a lambda, or a name already declared above and its
    attributes (`torch.float64`): nothing that calls, indexes, reads a value left out or runs an operator
    the notebook may have defined."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        return value.id in bound
    if isinstance(value, ast.Attribute):
        return _plain_value(value.value, bound)
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_plain_value(e, bound) for e in value.elts)
    if isinstance(value, ast.Dict):  # a key is hashed: a literal's hash is Python's own
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _plain_value(v, bound) for v in value.values
        )
    if isinstance(value, ast.UnaryOp | ast.BinOp):
        # Operators on literals alone: on a name they may be a notebook class's own (an Enum's __or__)
        return _literal(value)
    if isinstance(value, ast.Lambda):  # its body runs when called; its defaults now
        defaults = [*value.args.defaults, *(d for d in value.args.kw_defaults if d is not None)]
        return all(_plain_value(d, bound) for d in defaults)
    return False


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*"}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, ast.Try):
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        return {name for block in blocks for statement in block for name in _bound_names(statement)}
    return set()


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


# Defining a function or a class runs code of the notebook's before anything is called: its decorators,
# its default values (and, without `from __future__ import annotations`, its annotations), a class's
# bases, keywords (metaclass=) and body, and a base class's __init_subclass__. Under `definitions` that
# code would run at import, where a try-out cell's would not: so a definition whose parts call anything,
# or read more than a name or a module's attribute, is refused, said, and skipped. The decorators every
# class body uses (staticmethod, classmethod, property and its setters) are the builtins themselves.
_BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_PROPERTY_PARTS = frozenset({"setter", "getter", "deleter"})
_BUILTINS = frozenset(dir(builtins))
_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__class_getitem__", "__prepare__"})


def runs_code(node: ast.stmt, bound: set[str]) -> str | None:
    """Why defining `node` (a statement `definitions` keeps) would run code, in the student's words; None
    where it would not."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _function_runs(node, bound, in_class=False)
    if isinstance(node, ast.ClassDef):
        return _class_runs(node, bound)
    return None


def _function_runs(
    node: ast.FunctionDef | ast.AsyncFunctionDef, bound: set[str], in_class: bool
) -> str | None:
    for decorator in node.decorator_list:
        if not (in_class and _builtin_decorator(decorator)):
            return f"its decorator `@{ast.unparse(decorator)}` runs when the function is defined"
    arguments = node.args
    for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
        if not _inert(default, bound):
            return f"its default value `{ast.unparse(default)}` is computed when the function is defined"
    annotations = [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    annotations += [arguments.vararg.annotation if arguments.vararg else None, node.returns]
    annotations += [arguments.kwarg.annotation if arguments.kwarg else None]
    for annotation in annotations:
        if annotation is not None and not _inert(annotation, bound, subscripts=True):
            return f"its annotation `{ast.unparse(annotation)}` is computed when the function is defined"
    return None


def _class_runs(node: ast.ClassDef, bound: set[str]) -> str | None:
    if node.decorator_list:
        return f"its decorator `@{ast.unparse(node.decorator_list[0])}` runs when the class is defined"
    for base in node.bases:
        if not _inert(base, bound):
            return f"its base `{ast.unparse(base)}` is computed when the class is defined, or was skipped"
    if node.keywords:
        return f"`{ast.unparse(node.keywords[0])}` runs code of its own when the class is defined"
    inner = set(bound)
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if statement.name in _HOOKS:
                return f"its `{statement.name}` runs when classes are defined"
            why = _function_runs(statement, inner, in_class=True)
        elif isinstance(statement, ast.ClassDef):
            why = _class_runs(statement, inner)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.Expr | ast.Pass) and _declares(
            statement, inner
        ):
            why = None
        else:
            why = f"its body runs `{ast.unparse(statement).splitlines()[0]}` when the class is defined"
        if why is not None:
            return why if isinstance(statement, ast.ClassDef) else f"{why} (in class {node.name})"
        inner |= _bound_names(statement)
    return None


def _builtin_decorator(decorator: ast.expr) -> bool:
    if isinstance(decorator, ast.Name):
        return decorator.id in _BUILTIN_DECORATORS
    # @value.setter: the property defined above it in the class body
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr in _PROPERTY_PARTS
        and isinstance(decorator.value, ast.Name)
    )


def _inert(value: ast.expr, bound: set[str], subscripts: bool = False) -> bool:
    """A literal, a tuple or the like of them, arithmetic on literals alone, a name declared above, or a
    dotted one (`np.float64`, `nn.Module`): nothing that calls, or that an operator of the notebook's own
    classes could run. `subscripts`: also `list[int]`, `np.ndarray | None` (annotations)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):  # declared above and kept (else a NameError at import), or a builtin
        return value.id in bound or value.id in _BUILTINS
    if isinstance(value, ast.Attribute):
        return _inert(value.value, bound)
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_inert(e, bound, subscripts) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _literal(v) for v in value.values
        )
    if isinstance(value, ast.UnaryOp | ast.BinOp):
        if subscripts and isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
            return _inert(value.left, bound, True) and _inert(value.right, bound, True)
        return _literal(value)
    if subscripts and isinstance(value, ast.Subscript):
        return _inert(value.value, bound, True) and _inert(value.slice, bound, True)
    return False


def _literal(value: ast.expr) -> bool:
    """Numbers, strings and containers of them, with arithmetic on those alone (`2 ** 10`, `-1e-5`)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_literal(e) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _literal(v) for v in value.values
        )
    if isinstance(value, ast.UnaryOp):
        return _literal(value.operand)
    if isinstance(value, ast.BinOp):
        return _literal(value.left) and _literal(value.right)
    return False


def refused_definition(cell: int, line: int, node: ast.stmt, why: str) -> str:
    name = getattr(node, "name", "")
    kind = "class" if isinstance(node, ast.ClassDef) else "def"
    return (
        f"cell {cell}, line {line}: `{kind} {name}` skipped: {why}, at import (cells: definitions runs no "
        "code of the notebook's): compute it inside the function instead, or ask for `cells: all`"
    )
