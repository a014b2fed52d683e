"""Find students' submissions and the file in each that defines an exercise's entry function.

Each file of a hand-in is read once, here, without following links (files.py); everything after this
(the gradebook's hash, the search for the entry, what the worker is given) uses those bytes.
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from grader.errors import UsageError
from grader.handin import files, notebooks
from grader.handin.prepare import Submission

SUFFIXES = (".py", notebooks.SUFFIX)


def submission_from_path(
    path: Path, entry: str, name: str | None = None, notebook: notebooks.Selection = notebooks.ALL
) -> Submission:
    """A file is a submission on its own; a folder's .py and .ipynb files are, the one defining `entry` first.

    Notebooks are read as the exercise's `notebook` selection makes them: the entry is looked for, and
    code at import found, in what will run.
    What cannot be graded is a UsageError naming it, before anything runs: a link or special file, a file
    too large, a notebook that is not one (NotebookError).
    """
    if not os.path.lexists(path):
        raise UsageError(f"{path}: no such file or folder")
    if stat.S_ISDIR(os.lstat(path).st_mode):
        relatives = files.walk(path, SUFFIXES)
        if not relatives:
            raise UsageError(f"{path}: no .py or .ipynb files in this folder")
        root, default_name = path.resolve(), path.name
    else:
        files.check_regular(path)
        if path.suffix not in SUFFIXES:
            kinds = "a .py file, a notebook (.ipynb) or a folder of them"
            raise UsageError(f"{path}: a submission is {kinds}, not '{path.suffix}'")
        root, relatives, default_name = path.parent.resolve(), [path.name], path.stem
    contents = {relative: files.read(root, relative) for relative in relatives}
    parsed = {relative: _parsed(root / relative, contents[relative], notebook) for relative in relatives}
    trees = {relative: tree for relative, (tree, _) in parsed.items()}
    defining = [f for f in relatives if (tree := trees[f]) is not None and _binds(tree, entry)]
    ordered = defining + [f for f in relatives if f not in defining]
    converted = {f: c for f, (_, c) in parsed.items() if c is not None}
    return Submission(
        name=name or default_name,
        root=root,
        files=tuple(ordered),
        contents=tuple(contents[f] for f in ordered),
        runs_at_import=_runs_at_import([(f, trees[f]) for f in ordered], entry, converted),
        notebook=notebook,
        left_out=sum(c.left_out for c in converted.values()),
    )


def may_define(submission: Submission, name: str) -> bool:
    """Whether any of the files could define `name`: it binds it, star-imports, or does not even parse
    (then running it says what is wrong). False means the exercise was not handed in."""
    for relative, content in zip(submission.files, submission.contents, strict=True):
        tree, _ = _parsed(submission.root / relative, content, submission.notebook)
        if tree is None or _star_imports(tree) or _binds(tree, name):
            return True
    return False


def untagged_hint(submission: Submission, name: str) -> str:
    """Where the exercise grades tagged cells only: a sentence naming the notebook whose untagged cells
    define `name` (the student forgot the tag), else ''."""
    selection = submission.notebook
    if selection.cells != "tagged" or may_define(submission, name):
        return ""
    for relative, content in zip(submission.files, submission.contents, strict=True):
        if not relative.endswith(notebooks.SUFFIX):
            continue
        tree, _ = _parsed(submission.root / relative, content, notebooks.ALL)
        if tree is not None and _binds(tree, name):
            return (
                f"{relative} defines {name}() in a cell without the tag '{selection.tag}', and this exercise "
                f"grades only the cells tagged '{selection.tag}': add the tag to that cell (JupyterLab: the "
                "property inspector's cell tags; Notebook 7: View > Right Sidebar > Property Inspector)"
            )
    return ""


def _parsed(
    path: Path, content: bytes, notebook: notebooks.Selection
) -> tuple[ast.Module | None, notebooks.ConvertedNotebook | None]:
    """The file's syntax tree (of a notebook, the Python of the cells `notebook` selects), or None when
    it does not parse; the converted notebook, if it is one.

    A notebook that is not one raises NotebookError: it cannot be graded at all.
    """
    converted = None
    if path.suffix == notebooks.SUFFIX:
        converted = notebooks.convert(content, path, notebook)
        source = converted.source
    else:
        source = content.decode("utf-8", errors="replace")
    try:
        return ast.parse(source), converted
    # A 200,000-term sum is valid Python that the parser cannot hold: the worker will say so.
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, converted


def _runs_at_import(
    trees: list[tuple[str, ast.Module | None]],
    entry: str,
    converted: Mapping[str, notebooks.ConvertedNotebook],
    shown: int = 3,
) -> tuple[str, ...]:
    """Where the files the worker imports, in its order (up to the one defining `entry`), run code at
    their top level (a check loop, a call, a print), as "hw.py line 12" or "hw.ipynb cell 3 line 2": it
    runs once, before the trials. At most `shown` places."""
    places: list[str] = []
    for relative, tree in trees:
        for node in tree.body if tree is not None else []:
            if _does_work(node) and len(places) < shown:
                notebook = converted.get(relative)
                cell = notebook.locate(node.lineno) if notebook is not None else None
                where = f"line {node.lineno}" if cell is None else f"cell {cell[0]} line {cell[1]}"
                places.append(f"{relative} {where}")
        if tree is not None and _binds(tree, entry):
            break
    return tuple(places)


_DECLARATIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)
_PLAIN_VALUES = (ast.Constant, ast.Name, ast.Attribute, ast.Lambda)


def _does_work(node: ast.stmt) -> bool:
    """Whether a top-level statement does more than declare: imports, definitions, docstrings, constants,
    aliases and `if __name__ == "__main__":` blocks do not."""
    if isinstance(node, _DECLARATIONS):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False
    if isinstance(node, ast.Assign | ast.AnnAssign):
        return node.value is not None and not isinstance(node.value, _PLAIN_VALUES)
    if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
        return False
    if isinstance(node, ast.Try):  # try: import torch / except ImportError: ...
        if _guarded_import(node):
            return False
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        return any(_does_work(statement) for block in blocks for statement in block)
    return True


def _guarded_import(node: ast.Try) -> bool:
    """`try: import x` / `except ModuleNotFoundError: <note it>`, as a `definitions` notebook's imports
    are guarded (notebooks.py): an import, whatever its handler records."""
    caught = [h.type for h in node.handlers]
    return (
        all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body)
        and bool(caught)
        and all(isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError") for t in caught)
        and not node.orelse
        and not node.finalbody
    )


def _star_imports(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body)


def _binds(tree: ast.Module | ast.Try, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Try) and _binds(node, name):  # a guarded import of it
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
    return False


def discover_students(folder: Path) -> list[tuple[str, Path]]:
    """Students in a class folder: each sub-folder is one student, and so is each .py or .ipynb file in it.

    A link in their place is a student too, whose hand-in then says it is a link: nobody is left out
    without a word.
    """
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder of submissions (pass --submissions DIR)")
    students = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith((".", "_")):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False) or (entry.is_symlink() and path.suffix not in SUFFIXES):
            students.append((entry.name, path))
        elif path.suffix in SUFFIXES:
            students.append((path.stem, path))
    return students
