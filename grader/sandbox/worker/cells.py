"""A notebook graded whole (`cells: all`), run cell by cell as Jupyter would: a cell that fails in a
statement other than a definition (a try-out call, a plot, a leftover `print(W.grad)`) stops there and
is noted, and the next cell runs; a failing definition (an import, a function, a constant) fails the
notebook as before. A later cell that needs what the failed one would have made fails in turn, by its
own line, and is told the same way.
"""

from __future__ import annotations
import __future__

import ast
import bisect
from pathlib import Path
from types import CodeType, ModuleType

from grader.handin.notebooks import definition_lines
from grader.sandbox.worker.tracebacks import clip, exception_line

_NOTED = 20  # failed cells told
_ERROR_SHOWN = 900  # characters of what each raised (the grader takes 1000)


def run(
    module: ModuleType, path: Path, relative: str, starts: list[int], submission_dir: Path
) -> list[dict[str, object]]:
    """Run the converted notebook at `path` into `module`, cell by cell (`starts`: each cell's first line);
    the failed cells' notes. Raises what a definition raised, and what is not an Exception."""
    source = path.read_bytes()
    tree = ast.parse(source, filename=str(path))  # a SyntaxError fails the notebook, as an import would
    definitions = definition_lines(tree.body)
    flags = _future_flags(tree.body)
    groups: dict[int, list[ast.stmt]] = {}
    for statement in tree.body:
        groups.setdefault(bisect.bisect_right(starts, statement.lineno), []).append(statement)
    notes: list[dict[str, object]] = []
    for statements in groups.values():
        code = compile(
            ast.Module(body=statements, type_ignores=[]), str(path), "exec", flags, dont_inherit=True
        )
        try:
            exec(code, vars(module))
        except MemoryError:
            raise  # the process is near its limit: nothing after it is to be trusted
        except Exception as exc:
            line = _failing_line(exc, code)
            failed = _statement_at(statements, line)
            if failed is None or failed.lineno in definitions:
                raise
            if len(notes) < _NOTED:
                error = clip(exception_line(exc, submission_dir), _ERROR_SHOWN)
                notes.append({"file": relative, "line": line, "error": error})
    return notes


def _future_flags(statements: list[ast.stmt]) -> int:
    """The `from __future__` imports of the first cell apply to every cell, as to one module."""
    flags = 0
    for statement in statements:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for alias in statement.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _failing_line(exc: BaseException, code: CodeType) -> int:
    """The line of the cell's top-level statement that was running when `exc` was raised."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return tb.tb_lineno
        tb = tb.tb_next
    return 0


def _statement_at(statements: list[ast.stmt], line: int) -> ast.stmt | None:
    for statement in statements:
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            return statement
    return None
