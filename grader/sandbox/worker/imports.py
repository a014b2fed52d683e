"""Which modules student code may import: the stdlib, torch, numpy, the exercise's support modules, the
hand-in's own files, and the packages its course declares (course.yaml's `packages:`).

A package installed on the grading machine for another course, or for the grader itself, must not make a
notebook pass here that fails in the course's environment, nor the reverse go unexplained: student code
that imports an undeclared package gets a ModuleNotFoundError saying how the instructor adds it. Only
imports made by student code are checked: torch, numpy and the allowed packages import what they need.

A finder first on sys.meta_path, consulted only for a module not imported yet: nothing per trial, since
trials call what the import loaded. It tells the student, in plain words; it is not the wall. The wall is
what the sandbox shows (sandbox/course_view.py, sandbox/walls.py): of the installed packages, only the
course's, torch's and numpy's exist for the worker (bubblewrap) or can be read by it (Landlock), so code
that removes this finder, loads a file by its path or a `.pyc` gets nothing more. Where neither holds
(the isolation line says "imports advisory"), this finder is all there is. The packages the view hides
are known here by name only (`hidden`): a student's import of one is refused with the course's message,
and a library's optional import of one (`try: import pandas`) fails as a missing module would, where the
wall would otherwise answer it with a PermissionError (_ViewFinder).
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Iterable, Sequence
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    ModuleSpec,
    PathFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from pathlib import Path
from types import FrameType, ModuleType

# Beyond the stdlib: what every exercise's code may import. `past` is the Python 2 names' stand-in
# (loading.python2_names); IPython is the Jupyter kernel itself, present wherever a notebook runs.
ALWAYS = frozenset({"torch", "numpy", "past", "IPython"})
_IMPORT_MACHINERY = ("<frozen importlib._bootstrap", "<frozen importlib._bootstrap_external")
_IMPORTLIB = os.path.dirname(os.__file__) + os.sep + "importlib" + os.sep
_FRAMES_SEARCHED = 64  # deeper than any chain of import calls


def refusal(module: str) -> str:
    return (
        f"your code imports {module}, which this course's environment does not provide: the instructor "
        f"adds it under `packages:` in course.yaml (beside the exercises) and reruns setup"
    )


# torch out of the worker's view: nothing of the hand-in named it (sandbox/torch_use.py). What student code
# gets where it imports torch all the same; the grader then runs it again with torch (torch_wanted).
UNNAMED_TORCH = (
    "your code imports torch, but the word torch appears nowhere in your files, so this run has no torch: "
    "the grader runs your code again with torch"
)


# Set where a worker without torch refused it: the worker then tells the grader (`torch_wanted`) instead of
# a failure, and the grader runs the hand-in again in a worker with torch (sandbox/torch_use.py).
_torch_refused = False


def torch_wanted() -> dict[str, str] | None:
    """The message that asks the grader for a worker with torch, once this one refused it; else None.
    Student code may clear the mark: it then keeps the ImportError it was given, as it chose."""
    if not _torch_refused:
        return None
    return {"type": "torch-wanted"}


class NotInCourse(ModuleNotFoundError):
    """A module the machine may have, refused: the course does not declare it. Told as the
    ModuleNotFoundError it is to student code (tracebacks name a class by its module and qualname):
    the grader's module path would mean nothing to a student."""


NotInCourse.__module__ = "builtins"
NotInCourse.__qualname__ = "ModuleNotFoundError"


class _CourseImports(importlib.abc.MetaPathFinder):
    """The meta path finder: finds nothing itself, refuses what student code may not import."""

    def __init__(
        self,
        allowed: frozenset[str],
        student_dirs: tuple[str, ...],
        own_dirs: tuple[str, ...],
        hidden: frozenset[str],
    ) -> None:
        self._allowed = allowed
        self._student_dirs = student_dirs  # where student code's files are
        # What student code may import from, whatever it is named: the hand-in's files, the support's.
        self._own_dirs = own_dirs
        self._hidden = hidden  # installed, out of the sandbox's view

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None:  # a submodule: its package was allowed
            return None
        top = name.partition(".")[0]
        if top == "torch" and top in self._hidden:  # whoever imports it: a library's optional import too
            global _torch_refused
            _torch_refused = True
            raise NotInCourse(UNNAMED_TORCH, name=top)
        if top in self._allowed or top in sys.stdlib_module_names:
            return None
        if not _importer_file(sys._getframe(1)).startswith(self._student_dirs):
            return None
        # Only what is installed is refused: a module missing here (google.colab) stays the
        # ModuleNotFoundError Python says, by its name; one found among the hand-in's or the support's
        # files (a folder the student put on sys.path) is their own.
        origin = _found_at(top)
        if origin is not None and origin.startswith(self._own_dirs):
            return None
        if origin is not None or top in self._hidden:
            raise NotInCourse(refusal(top), name=top)
        return None


def _found_at(top: str) -> str | None:
    """Where the module would be imported from ("" for one without a file); None where it is not there."""
    try:
        spec = PathFinder.find_spec(top)
    except (ImportError, ValueError, OSError):
        return None
    if spec is None:
        return None
    if spec.origin is not None and spec.has_location:
        return spec.origin
    locations = list(spec.submodule_search_locations or ())  # a namespace package: its folders
    return locations[0] if locations else ""


def _importer_file(frame: FrameType | None) -> str:
    """The file of the code that asked for the import: the first frame outside the import machinery."""
    for _ in range(_FRAMES_SEARCHED):
        if frame is None:
            return ""
        filename = frame.f_code.co_filename
        if not (filename.startswith(_IMPORT_MACHINERY) or filename.startswith(_IMPORTLIB)):
            return filename
        frame = frame.f_back
    return ""


class _ViewFinder(FileFinder):
    """The path entry finder of a folder of installed packages: it does not find what the sandbox's view
    hides there. Under bubblewrap those entries do not exist; under Landlock they are listed but
    unreadable, and a library's optional import (`try: import pandas`, torch._dynamo's
    importlib.util.find_spec("hypothesis")) would meet a PermissionError where it expects a missing module."""

    folders: frozenset[str] = frozenset()
    hidden: frozenset[str] = frozenset()

    def _fill_cache(self) -> None:  # CPython's FileFinder lists its folder here (3.3 on)
        super()._fill_cache()  # type: ignore[misc]
        if os.path.realpath(self.path) in self.folders:
            cache: set[str] = getattr(self, "_path_cache", set())
            self._path_cache = {e for e in cache if e.partition(".")[0] not in self.hidden}


# Each folder of sys.path_importer_cache resolved, by the zygote before it forks (remember_folders): torch
# and numpy leave ~160 there, whose realpath every worker paid again (3.5 ms of a graph2 worker's CPU under
# bubblewrap, 2026-12-05; the view's mounts leave the paths themselves as they were).
_REAL_FOLDERS: dict[str, str] = {}


def remember_folders() -> None:
    """Resolve the folders imports were found in so far, once, in the zygote."""
    for folder in list(sys.path_importer_cache):
        _REAL_FOLDERS[folder] = os.path.realpath(folder)


def _real(folder: str) -> str:
    real = _REAL_FOLDERS.get(folder)
    return real if real is not None else os.path.realpath(folder)


def _hide(folders: Iterable[str], hidden: frozenset[str]) -> None:
    _ViewFinder.folders = frozenset(os.path.realpath(f) for f in folders)
    _ViewFinder.hidden = hidden
    loaders = [
        (ExtensionFileLoader, EXTENSION_SUFFIXES),
        (SourceFileLoader, SOURCE_SUFFIXES),
        (SourcelessFileLoader, BYTECODE_SUFFIXES),
    ]
    sys.path_hooks.insert(0, _ViewFinder.path_hook(*loaders))
    for folder in list(sys.path_importer_cache):  # made again by the hook, when next asked
        if _real(folder) in _ViewFinder.folders:
            del sys.path_importer_cache[folder]


def install(
    declared: Iterable[str],
    submission_dir: Path,
    support_dir: Path,
    folders: Iterable[str] = (),
    hidden: Iterable[str] = (),
) -> None:
    """Refuse, from now on, student code's imports of what is neither allowed nor its own: `declared`
    (the course's packages), the modules of `support_dir` and of `submission_dir`. `hidden`: what the
    sandbox's view leaves out of the packages `folders`, by name, found by no import."""
    # The files there by name, without a search of sys.path; one the student reaches otherwise is found
    # in those folders when it is imported.
    named = {_module_name(entry) for folder in (submission_dir, support_dir) for entry in _listing(folder)}
    allowed = frozenset(ALWAYS | {str(d) for d in declared} | named)
    student = (str(submission_dir) + os.sep,)
    own = (str(submission_dir) + os.sep, str(support_dir) + os.sep)
    # torch among them: a worker without torch (sandbox/torch_use.py)
    out_of_view = frozenset(hidden) - (allowed - {"torch"}) - named
    _hide(folders, out_of_view)
    sys.meta_path.insert(0, _CourseImports(allowed, student, own, out_of_view))


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _module_name(entry: str) -> str:
    return entry.removesuffix(".py")
