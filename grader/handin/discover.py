"""Find students' submissions and the file in each that defines an exercise's entry function."""

from __future__ import annotations

import ast
from pathlib import Path

from grader.errors import UsageError
from grader.handin import notebooks
from grader.handin.prepare import Submission

_SKIPPED_DIRS = {"__pycache__"}
_SUFFIXES = (".py", notebooks.SUFFIX)


def submission_from_path(path: Path, entry: str, name: str | None = None) -> Submission:
    """A file is a submission on its own; a folder's .py and .ipynb files are, the one defining `entry` first.

    A notebook that is not valid JSON is reported here (NotebookError), before anything runs.
    """
    if path.is_file():
        if path.suffix not in _SUFFIXES:
            kinds = "a .py file, a notebook (.ipynb) or a folder of them"
            raise UsageError(f"{path}: a submission is {kinds}, not '{path.suffix}'")
        _readable(path)
        return Submission(name=name or path.stem, root=path.parent.resolve(), files=(path.name,))
    if not path.is_dir():
        raise UsageError(f"{path}: no such file or folder")
    files = sorted(
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.suffix in _SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") or part in _SKIPPED_DIRS for part in p.relative_to(path).parts)
    )
    if not files:
        raise UsageError(f"{path}: no .py or .ipynb files in this folder")
    for relative in files:
        _readable(path / relative)
    defining = [f for f in files if defines(path / f, entry)]
    ordered = defining + [f for f in files if f not in defining]
    return Submission(name=name or path.name, root=path.resolve(), files=tuple(ordered))


def _readable(path: Path) -> None:
    if path.suffix == notebooks.SUFFIX:
        notebooks.convert(path)


def may_define(submission: Submission, name: str) -> bool:
    """Whether any of the files could define `name`: it binds it, star-imports, or does not even parse
    (then running it says what is wrong). False means the exercise was not handed in."""
    for relative in submission.files:
        tree = _parsed(submission.root / relative)
        if tree is None or _star_imports(tree) or _binds(tree, name):
            return True
    return False


def defines(path: Path, name: str) -> bool:
    """Whether the file binds `name` at its top level (def, assignment or import), read without running it."""
    tree = _parsed(path)
    return tree is not None and _binds(tree, name)


def _parsed(path: Path) -> ast.Module | None:
    """The file's syntax tree (a notebook's code cells), or None when it cannot be read or parsed."""
    try:
        if path.suffix == notebooks.SUFFIX:
            return ast.parse(notebooks.convert(path).source)
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, OSError, notebooks.NotebookError):
        return None


def _star_imports(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body)


def _binds(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
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
    """Students in a class folder: each sub-folder is one student, and so is each .py or .ipynb file in it."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder of submissions (pass --submissions DIR)")
    students = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir() or entry.suffix in _SUFFIXES:
            students.append((entry.stem if entry.is_file() else entry.name, entry))
    return students
