"""Importing the hand-in."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from grader.handin.notebooks import SKIPPED_IMPORTS
from grader.outcomes import FailureKind
from grader.sandbox.worker import cells
from grader.sandbox.worker.channel import Channel
from grader.sandbox.worker.imports import torch_wanted
from grader.sandbox.worker.tracebacks import exception_line, student_location, student_traceback

_SKIPPED_SHOWN = 20  # imports a notebook skipped, named in the report
_SKIPPED_NOTE = 400  # characters of each: the import, and why an undeclared module is refused


class Importer:
    """The hand-in's files, imported in order as its exercises need them, each once: a file that defines
    every exercise's functions is imported for the first and graded on all.

    An exercise imports files until its functions are found, as it would alone: the files after them are
    imported only when a later exercise needs them.
    """

    def __init__(self, submission_dir: Path, files: list[str], cells: dict[str, list[int]]) -> None:
        self._dir = submission_dir
        self._files = files
        self._cells = cells  # for a notebook run whole: the line where each code cell starts
        self._modules: list[ModuleType] = []
        self.seconds = 0.0  # how long the imports took so far
        # Cells of a notebook run whole that failed outside its definitions, skipped: {file, line (of the
        # converted file: the grader tells it as the notebook's cell and line), error}
        self.failed_cells: list[dict[str, object]] = []

    def functions(
        self, channel: Channel, wanted: list[str]
    ) -> tuple[list[Callable[..., Any]], list[str]] | None:
        """The functions `wanted`, from the files imported so far and then the next ones in order, with
        the imports a `definitions` notebook skipped for a missing module (notebooks.py's guard); None
        once the failure is sent (an import that failed, a function no file defines): the worker then
        serves no more exercises, its modules being half imported."""
        found: dict[str, Callable[..., Any]] = {}
        for module in self._modules:
            _look_up(module, wanted, found)
        while len(found) < len(wanted) and len(self._modules) < len(self._files):
            started = time.perf_counter()
            imported = self._import(channel, self._files[len(self._modules)])
            self.seconds += time.perf_counter() - started
            if imported is None:
                return None
            self._modules.append(imported)
            _look_up(imported, wanted, found)
        if len(found) == len(wanted):
            return [found[n] for n in wanted], _skipped_imports(self._modules)
        modules = self._modules
        defined = sorted(
            {n for m in modules for n, v in vars(m).items() if callable(v) and not n.startswith("_")}
        )
        missing = next(n for n in wanted if n not in found)
        channel.send(
            torch_wanted()
            or {
                "type": "fatal",
                "kind": FailureKind.MISSING_FUNCTION.value,
                "file": self._files[0] if self._files else "",
                "message": missing,
                "defined": defined[:50],
            }
        )
        return None

    def _import(self, channel: Channel, relative: str) -> ModuleType | None:
        path = self._dir / relative
        name = re.sub(r"\W", "_", path.stem) or "submission"
        if name[0].isdigit():
            name = f"_{name}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return ModuleType(name)  # nothing to import: a module that defines nothing
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            if relative in self._cells:
                self.failed_cells += cells.run(module, path, relative, self._cells[relative], self._dir)
            else:
                spec.loader.exec_module(module)
        except BaseException as exc:
            kind = FailureKind.EXIT if isinstance(exc, SystemExit) else FailureKind.IMPORT
            channel.send(
                torch_wanted()
                or {
                    "type": "fatal",
                    "kind": kind.value,
                    "file": relative,
                    "message": exception_line(exc, self._dir),
                    "traceback": student_traceback(exc, self._dir),
                    "location": student_location(exc, self._dir),
                }
            )
            return None
        return module


def _look_up(module: ModuleType, wanted: list[str], found: dict[str, Callable[..., Any]]) -> None:
    for function_name in wanted:
        function = getattr(module, function_name, None)
        if function_name not in found and callable(function):
            found[function_name] = function


def _skipped_imports(modules: list[ModuleType]) -> list[str]:
    # The list is in the student's module, which may have changed it: only text goes back, a little.
    notes = [vars(m).get(SKIPPED_IMPORTS) for m in modules]
    found = [n for listed in notes if isinstance(listed, list) for n in listed if isinstance(n, str)]
    return [n[:_SKIPPED_NOTE] for n in found[:_SKIPPED_SHOWN]]


def python2_names() -> None:
    """CS231n's starters (2017 to 2020) begin with `from past.builtins import xrange`, from the `future`
    package, which a grading machine need not have: where it is missing, a module holding Python 2's
    renamed builtins stands in, so that a course file imports as handed out."""
    if importlib.util.find_spec("past") is not None:
        return
    past, names = ModuleType("past"), ModuleType("past.builtins")
    names.__dict__.update(
        xrange=range,
        basestring=str,
        unicode=str,
        long=int,
        unichr=chr,
        raw_input=input,
        reduce=functools.reduce,
    )
    past.__path__ = []  # a package, so that `import past.builtins` finds its submodule in sys.modules
    past.builtins = names  # type: ignore[attr-defined]
    sys.modules.update({"past": past, "past.builtins": names})
