"""Errors that stop the grader before grading: whose fault they are decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    ALL_PASS = 0
    SOME_FAILED = 1
    USAGE_OR_SPEC = 2
    INTERNAL = 3
    INTERRUPTED = 130  # Ctrl-C, as a shell reports a process ended by SIGINT (128 + 2)


class GraderError(Exception):
    """Base of errors the grader reports in words instead of a traceback."""

    exit_code: ExitCode = ExitCode.USAGE_OR_SPEC

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: a Jupyter kernel shows these lines in place of the traceback. The message is
        the user's to act on; the grader's own frames around it (api.py, the spec loader) would bury it
        under code the student never wrote."""
        return [f"{type(self).__name__}: {self}"]


class UsageError(GraderError):
    """The command line names something that is not there or not usable."""


class WorkerStartError(GraderError):
    """The sandboxed worker process could not even start: the grader's installation, not the student."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, log: str) -> None:
        last = log.strip().splitlines()[-1:] or ["it printed nothing"]
        super().__init__(f"the sandboxed worker could not start: {last[0]}")
        self.log = log


@dataclass
class SpecError(GraderError):
    """An exercise author's mistake, located in the exercise's YAML file."""

    path: Path
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"
