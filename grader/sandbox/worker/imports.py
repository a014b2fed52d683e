"""Which modules student code may import: the stdlib, torch, numpy, the exercise's support modules, the
hand-in's own files, and the packages its course declares (course.yaml's `packages:`).

A package installed on the grading machine for another course, or for the grader itself, must not make a
notebook pass here that fails in the course's environment, nor the reverse go unexplained: student code
that imports an undeclared package gets a ModuleNotFoundError saying how the instructor adds it. Only
imports made by student code are checked: torch, numpy and the allowed packages import what they need.

A finder first on sys.meta_path, consulted only for a module not imported yet: nothing per trial, since
trials call what the import loaded. It keeps the grader's environment faithful to the course's; it is not
a wall (the sandbox is): student code that removes it or disguises its frames gains only an import of a
package the machine has anyway, and the finder holds nothing but names.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
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


class NotInCourse(ModuleNotFoundError):
    """A module the machine may have, refused: the course does not declare it. Told as the
    ModuleNotFoundError it is to student code (tracebacks name a class by its module and qualname):
    the grader's module path would mean nothing to a student."""


NotInCourse.__module__ = "builtins"
NotInCourse.__qualname__ = "ModuleNotFoundError"


class _CourseImports(importlib.abc.MetaPathFinder):
    """The meta path finder: finds nothing itself, refuses what student code may not import."""

    def __init__(
        self, allowed: frozenset[str], student_dirs: tuple[str, ...], own_dirs: tuple[str, ...]
    ) -> None:
        self._allowed = allowed
        self._student_dirs = student_dirs  # where student code's files are
        # What student code may import from, whatever it is named: the hand-in's files, the support's.
        self._own_dirs = own_dirs

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None:  # a submodule: its package was allowed
            return None
        top = name.partition(".")[0]
        if top in self._allowed or top in sys.stdlib_module_names:
            return None
        if not _importer_file(sys._getframe(1)).startswith(self._student_dirs):
            return None
        # Only what is installed is refused: a module missing here (google.colab) stays the
        # ModuleNotFoundError Python says, by its name; one found among the hand-in's or the support's
        # files (a folder the student put on sys.path) is their own.
        origin = _found_at(top)
        if origin is not None and not origin.startswith(self._own_dirs):
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


def install(declared: Iterable[str], submission_dir: Path, support_dir: Path) -> None:
    """Refuse, from now on, student code's imports of what is neither allowed nor its own: `declared`
    (the course's packages), the modules of `support_dir` and of `submission_dir`."""
    # The files there by name, without a search of sys.path; one the student reaches otherwise is found
    # in those folders when it is imported.
    named = {_module_name(entry) for folder in (submission_dir, support_dir) for entry in _listing(folder)}
    allowed = frozenset(ALWAYS | {str(d) for d in declared} | named)
    student = (str(submission_dir) + os.sep,)
    own = (str(submission_dir) + os.sep, str(support_dir) + os.sep)
    sys.meta_path.insert(0, _CourseImports(allowed, student, own))


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _module_name(entry: str) -> str:
    return entry.removesuffix(".py")
