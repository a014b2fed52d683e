"""Find students' submissions and the file in each that defines an exercise's entry function.

Each file of a hand-in is read once, here, without following links (files.py); everything after this
(the gradebook's hash, the search for the entry, what the worker is given) uses those bytes.
"""

from __future__ import annotations

import ast
import hashlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.handin import files, notebooks
from grader.handin.choice import NO_RULE, FileRule, choose, sort_key
from grader.handin.prepare import Submission

SUFFIXES = (".py", notebooks.SUFFIX)


def submission_from_path(
    path: Path,
    entry: str,
    name: str | None = None,
    notebook: notebooks.Selection = notebooks.ALL,
    rule: FileRule = NO_RULE,
) -> Submission:
    """A file is a submission on its own; a folder's .py and .ipynb files are, the one graded first (of
    those defining `entry`, the one `rule` chooses: choice.py).

    Notebooks are read as the exercise's `notebook` selection makes them: the entry is looked for, and
    code at import found, in what will run.
    What cannot be graded is a UsageError naming it, before anything runs: a link or special file, a file
    too large, a notebook that is not one (NotebookError).
    """
    return submission_of(read_handin(path), entry, name, notebook, rule)


@dataclass(frozen=True)
class HandIn:
    """A hand-in's files as read, before any exercise looks for its entry in them: what a class run reads
    once per student for every exercise of its library."""

    root: Path
    files: tuple[str, ...]  # relative to root
    contents: tuple[bytes, ...]
    name: str  # the student's, from the folder or file name
    folder: bool = True  # False: one file handed in, graded whatever its name


def read_handin(path: Path) -> HandIn:
    """The files of a hand-in (a file, or a folder's .py and .ipynb files), read without following links;
    a UsageError where there is nothing that could be graded."""
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
    contents = tuple(files.read(root, relative) for relative in relatives)
    return HandIn(root, tuple(relatives), contents, default_name, stat.S_ISDIR(os.lstat(path).st_mode))


def submission_of(
    handin: HandIn,
    entry: str,
    name: str | None = None,
    notebook: notebooks.Selection = notebooks.ALL,
    rule: FileRule = NO_RULE,
) -> Submission:
    """The hand-in as a submission of the exercise whose entry is `entry` (submission_from_path): the
    file `rule` chooses among those defining it first, then the others that do, then the rest."""
    root, relatives = handin.root, handin.files
    contents = dict(zip(relatives, handin.contents, strict=True))
    outlines = {relative: _outline(root / relative, contents[relative], notebook) for relative in relatives}
    rule = rule if handin.folder else NO_RULE  # one file handed in: graded, whatever its name
    defining = sorted((f for f in relatives if entry in outlines[f].binds), key=lambda f: sort_key(f, rule))
    choice = choose(relatives, defining, rule, str(handin.root))
    if choice is not None:
        defining = [choice.graded, *(f for f in defining if f != choice.graded)]
    ordered = defining + [f for f in relatives if f not in defining]
    converted = {f: o.converted for f, o in outlines.items() if o.converted is not None}
    return Submission(
        name=name or handin.name,
        root=root,
        files=tuple(ordered),
        contents=tuple(contents[f] for f in ordered),
        runs_at_import=_runs_at_import([(f, outlines[f]) for f in ordered], entry),
        notebook=notebook,
        left_out=sum(c.left_out for c in converted.values()),
        refused=tuple(r for c in converted.values() for r in c.refused),
        choice=choice if choice is not None and (choice.also_defined or rule.pinned is not None) else None,
    )


def may_define(submission: Submission, name: str) -> bool:
    """Whether any of the files could define `name`: it binds it, star-imports, or does not even parse
    (then running it says what is wrong). False means the exercise was not handed in."""
    for relative, content in zip(submission.files, submission.contents, strict=True):
        outline = _outline(submission.root / relative, content, submission.notebook)
        if not outline.parses or outline.star_imports or name in outline.binds:
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
        if name in _outline(submission.root / relative, content, notebooks.ALL).binds:
            return (
                f"{relative} defines {name}() in a cell without the tag '{selection.tag}', and this exercise "
                f"grades only the cells tagged '{selection.tag}': add the tag to that cell (JupyterLab: the "
                "property inspector's cell tags; Notebook 7: View > Right Sidebar > Property Inspector)"
            )
    return ""


@dataclass(frozen=True)
class _Outline:
    """What the search for an entry needs of a file's top level: kept in place of its syntax tree, which
    is many times larger, so that a class's files are parsed once for every exercise of a library."""

    parses: bool
    star_imports: bool
    binds: frozenset[str]  # the names its top level defines, assigns or imports
    works: tuple[int, ...]  # the lines where a top-level statement does work (_does_work)
    converted: notebooks.ConvertedNotebook | None  # the notebook as Python, if it is one


_OUTLINES_KEPT = 4096  # files: a class of a few hundred students, each handing in a few
_outlines: OrderedDict[tuple[Path, bytes, notebooks.Selection], _Outline] = OrderedDict()
_outlines_lock = threading.Lock()


def _outline(path: Path, content: bytes, notebook: notebooks.Selection) -> _Outline:
    """The file's outline (of a notebook, of the Python of the cells `notebook` selects), from the last
    few thousand files asked about where it is one of them. Keyed by the content's digest, not by it.

    A notebook that is not one raises NotebookError: it cannot be graded at all.
    """
    key = (path, hashlib.sha256(content).digest(), notebook)
    with _outlines_lock:
        if key in _outlines:
            _outlines.move_to_end(key)
            return _outlines[key]
    tree, converted = _parsed(path, content, notebook)
    body = tree.body if tree is not None else []
    outline = _Outline(
        parses=tree is not None,
        star_imports=tree is not None and _star_imports(tree),
        binds=frozenset(_bound(tree)) if tree is not None else frozenset(),
        works=tuple(node.lineno for node in body if _does_work(node)),
        converted=converted,
    )
    with _outlines_lock:
        _outlines[key] = outline
        if len(_outlines) > _OUTLINES_KEPT:
            _outlines.popitem(last=False)
    return outline


def _parsed(
    path: Path, content: bytes, notebook: notebooks.Selection
) -> tuple[ast.Module | None, notebooks.ConvertedNotebook | None]:
    """The file's syntax tree (of a notebook, the Python of the cells `notebook` selects), or None when
    it does not parse; the converted notebook, if it is one."""
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


def _runs_at_import(outlines: list[tuple[str, _Outline]], entry: str, shown: int = 3) -> tuple[str, ...]:
    """Where the files the worker imports, in its order (up to the one defining `entry`), run code at
    their top level (a check loop, a call, a print), as "hw.py line 12" or "hw.ipynb cell 3 line 2": it
    runs once, before the trials. At most `shown` places."""
    places: list[str] = []
    for relative, outline in outlines:
        for line in outline.works[: shown - len(places)]:
            notebook = outline.converted
            cell = notebook.locate(line) if notebook is not None else None
            where = f"line {line}" if cell is None else f"cell {cell[0]} line {cell[1]}"
            places.append(f"{relative} {where}")
        if entry in outline.binds:
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


def _bound(tree: ast.Module | ast.Try) -> Iterator[str]:
    """The names a top level binds: functions, plain assignments, imports, and those of a guarded import."""
    for node in tree.body:
        if isinstance(node, ast.Try):  # a guarded import of it
            yield from _bound(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from (alias.asname or alias.name.split(".")[0] for alias in node.names)


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
