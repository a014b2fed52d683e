"""What grading can conclude, shared by every stage: verdicts, and why something produced nothing.

A leaf module (stdlib only): the sandboxed worker, the judging modules, the results and the reports all
use these, so none of them defines its own words for the same outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class _Word(str, Enum):
    """An enum whose members read as their values in text, on every Python version (3.11 changed what
    format() gives for a str mix-in)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Verdict(_Word):
    """A return's verdict, ordered from best to worst: the worst trial decides a return's verdict, and the
    worst return a submission's."""

    PASS = "pass"
    PRECISION = "precision"
    INSTABILITY = "instability"
    LOGIC = "logic"
    AUTOGRAD = "autograd"  # a return meant to be derived by hand came from autograd: whatever its values
    # A return meant to be derived by hand computed as a numerical derivative (finite differences, the
    # complex step), where its course refuses them: whatever its values
    NUMERICAL = "numerical"
    ERROR = "error"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def not_by_hand(self) -> bool:
        """Whether it says a return meant to be derived by hand was not (its feedback says how to)."""
        return self in (Verdict.AUTOGRAD, Verdict.NUMERICAL)

    # Ordered by severity, never as the strings they also are (that would put "error" first).
    def __lt__(self, other: object) -> bool:
        return self.severity < _severity_of(other)

    def __le__(self, other: object) -> bool:
        return self.severity <= _severity_of(other)

    def __gt__(self, other: object) -> bool:
        return self.severity > _severity_of(other)

    def __ge__(self, other: object) -> bool:
        return self.severity >= _severity_of(other)


def _severity_of(other: object) -> int:
    if not isinstance(other, Verdict):
        raise TypeError(f"a verdict is ordered against verdicts only, not {type(other).__name__}")
    return other.severity


_SEVERITY = {verdict: rank for rank, verdict in enumerate(Verdict)}


class MistakeFamily(_Word):
    """Which kind of mistake a name was found by: what a corpus and an instructor count and filter on,
    whatever the words of the name itself. The values are stable: they are in the JSON output."""

    DECLARED = "declared"  # a misconception the exercise declares
    CONVENTION = "convention"  # right under another course year's convention the exercise declares
    TRANSPOSED = "transposed"  # the right values transposed
    SIGN = "sign"  # the right values negated
    SCALE = "scale"  # the whole return off by a factor (2, 1/2, 1/N)
    TERM_SCALE = "term-scale"  # one term of a sum off by a factor (1/N, 2, 0.5, N for C)
    TERM_DROPPED = "term-dropped"  # one term of a sum left out
    WRONG_INPUT = "wrong-input"  # the gradient with respect to another input
    DROPPED_PATH = "dropped-path"  # an intermediate treated as a constant: a path of the graph lost
    ELEMENTWISE_PRODUCT = "elementwise-product"  # * where @ belongs
    OPERAND_TRANSPOSED = "operand-transposed"  # an operand of a matrix product transposed
    RESHAPE_FOR_TRANSPOSE = "reshape-for-transpose"  # a reshape where a transpose belongs
    DERIVATIVE_MISSING = "derivative-missing"  # a function's derivative missing from the chain rule
    OVERWRITTEN = "overwritten"  # overlapping windows or indices assigned where they accumulate
    TIME_SHIFT = "time-shift"  # a value of the wrong time step
    GATE_ORDER = "gate-order"  # stacked blocks (gates) in another order
    WRONG_AXES = "wrong-axes"  # a reduction over the wrong axes
    OWN_VALUE = "own-value"  # the right derivative of the student's own, wrong, value
    PATTERN = "pattern"  # no formula: the failing entries' pattern (the diagonal, one row)


class FailureKind(_Word):
    """Why a trial, or a whole submission, produced nothing to compare. The values are stable: they are
    in the JSON output, the gradebook and the worker's messages."""

    IMPORT = "import"  # importing the hand-in raised
    EXIT = "exit"  # sys.exit or os._exit, at import or in a trial
    MISSING_FUNCTION = "missing-function"  # the entry is not defined, or the hand-in cannot be used
    NOT_SUBMITTED = "not-submitted"  # no file of the hand-in attempts this exercise
    EXCEPTION = "exception"  # a trial's call raised
    TIMEOUT = "timeout"  # a deadline or the CPU limit
    MEMORY = "memory"  # past the memory limit
    BAD_RETURN = "bad-return"  # not the tuple of returns the exercise asks for
    CRASH = "crash"  # killed by a signal
    OUTPUT_LIMIT = "output-limit"  # printed too much
    PROTOCOL = "protocol"  # the result channel was corrupted or closed
    INTERNAL = "internal"  # the grader's own failure on this submission


@dataclass(frozen=True)
class Location:
    """The innermost place in the student's files that a failure's traceback shows: their innermost frame,
    or a SyntaxError's own place (in no function). Sent by the worker as fields, never read back out of
    the traceback's text, which the student's own message may imitate."""

    file: str  # relative to the hand-in; a notebook's own name once its cell is known
    line: int  # in `file`, or in `cell`
    function: str = ""  # "" for a SyntaxError's place
    cell: int = 0  # a notebook's code cell, as a reader counts them; 0 outside a notebook

    def __str__(self) -> str:
        """As the traceback's line names it: 'hw.py line 12, in graph2', 'nb.ipynb cell 3, line 2, in f'."""
        cell = f"cell {self.cell}, " if self.cell else ""
        function = f", in {self.function}" if self.function else ""
        return f"{self.file} {cell}line {self.line}{function}"


@dataclass(frozen=True)
class Failure:
    """Why a trial (`trial` set) or the whole submission (`trial` None) produced nothing to compare."""

    kind: FailureKind
    message: str
    traceback: str = ""
    trial: int | None = None
    location: Location | None = None  # where `traceback` ends in the student's files; None: nowhere

    @property
    def where(self) -> str:
        """`location` as shown beside the message; "" where there is none."""
        return "" if self.location is None else str(self.location)


class IsolationLevel(_Word):
    """How far a hand-in was walled in (sandbox/isolation.py). The values are in the gradebook."""

    FULL = "full"  # every wall and bound the grader puts up held
    REDUCED = "reduced"  # a sandbox lacking some of them: its line says which, and why
    NONE = "none"  # graded in the grader's own process (grader.check in a notebook): no sandbox


@dataclass(frozen=True)
class IsolationUsed:
    """The isolation a hand-in was graded under, as every result states it."""

    level: IsolationLevel
    line: str  # what held, whole; for a reduced isolation, what it lacks and why
    # The line for a score line: a full isolation's walls without their details, which would wrap it on
    # every check; any other whole, since what it lacks is the point.
    brief: str


@dataclass(frozen=True)
class FailedCell:
    """A cell of a notebook graded whole that failed outside its definitions: skipped, told, not scored."""

    notebook: str  # the hand-in's notebook file
    cell: int  # as a reader counts them, markdown included; 0 where the place is unknown
    line: int  # within the cell
    error: str  # the exception's last line

    def __str__(self) -> str:
        where = f"{self.notebook} cell {self.cell}, line {self.line}" if self.cell else self.notebook
        return f"{where}: {self.error}"
