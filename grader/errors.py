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


class GraderError(Exception):
    """Base of errors the grader reports in words instead of a traceback."""

    exit_code: ExitCode = ExitCode.USAGE_OR_SPEC


class UsageError(GraderError):
    """The command line names something that is not there or not usable."""


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
