"""grader: auto-graded gradient exercises in PyTorch and numpy.

Kept import-free on purpose: the sandboxed worker imports this package beside student code, and must not
pay for (or expose) the grader's own dependencies; the command line imports it first. The Python API
(api.py: `grader.check`, `grader.grade`, `grader.grade_file`, `grader.load_exercise`,
`grader.find_exercise`) is imported on first use.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

if TYPE_CHECKING:
    from grader.api import Checked, check, find_exercise, grade, grade_file, load_exercise

__all__ = ["Checked", "__version__", "check", "find_exercise", "grade", "grade_file", "load_exercise"]
_API = frozenset(__all__) - {"__version__"}

# The grader's own arithmetic meets hostile values (a return of 1e308, inf, NaN) by design and judges them;
# numpy's "overflow encountered" warnings it would raise on the way name the grader's install path and
# reach students (the terminal, a notebook, the worker's stderr told as the student's). Every module of the
# package is silenced here, where the CLI, the Python API and the sandboxed worker all start; warnings that
# student code raises are attributed to its own modules and stay shown.
OWN_MODULES = r"grader(\.|$)"
warnings.filterwarnings("ignore", module=OWN_MODULES)


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module("grader.api"), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
