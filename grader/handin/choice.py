"""Which file of a hand-in is graded when several define the exercise's entry.

The rule, in this order:

1. the file the exercise pins (`handin: {file: layers.py}` in exercise.yaml): that file alone; a
   hand-in folder without it is unusable, and the error names it;
2. a file named after the exercise: its stem is the entry's name, the last part of the exercise's id,
   the exercise's folder or the assignment's (the folder holding the exercise), as `graph2.py` or
   `graph2.ipynb` for graph2;
3. a notebook (.ipynb);
4. the rest.

Within a step, by path, alphabetically. Every other file that defines the entry is named in the result
("also defined in a_draft.py: not graded"), so that a student whose scratch copy was graded learns it.
A hand-in that is one file has nothing to choose: it is graded, whatever its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from grader.errors import UsageError
from grader.handin import notebooks
from grader.outcomes import _Word


class ChosenBy(_Word):
    """Which step of the rule chose the graded file. The values are stable: JSON output, gradebook."""

    PINNED = "pinned"  # the exercise's handin.file
    NAMED = "named"  # named after the exercise or its assignment
    NOTEBOOK = "notebook"
    FIRST = "first"  # alphabetically first of the rest

    @property
    def reason(self) -> str:
        return _REASONS[self]


_REASONS = {
    ChosenBy.PINNED: "the file this exercise grades (exercise.yaml handin.file)",
    ChosenBy.NAMED: "named after the exercise",
    ChosenBy.NOTEBOOK: "a notebook, before the other files",
    ChosenBy.FIRST: "alphabetically first",
}


@dataclass(frozen=True)
class FileRule:
    """What the rule needs of an exercise: the stems a file named after it has, and the pinned file."""

    names: frozenset[str] = frozenset()
    pinned: str | None = None  # a path relative to the hand-in's folder, or a file name found in it


NO_RULE = FileRule()  # alphabetical, nothing pinned: an exercise that names no file


@dataclass(frozen=True)
class FileChoice:
    """The file graded among several that define the entry, why, and the others (not graded)."""

    graded: str
    chosen_by: ChosenBy
    also_defined: tuple[str, ...] = ()


def choose(files: Sequence[str], defining: Sequence[str], rule: FileRule, where: str) -> FileChoice | None:
    """The graded file among `defining` (those of `files` that define the entry; paths relative to the
    hand-in's folder), by the rule; None where none does. `where` names the hand-in in errors."""
    if rule.pinned is not None:
        pinned = _pinned(files, rule.pinned)
        if pinned is None:
            if not defining:
                return None  # not handed in, as any exercise no file attempts
            shown = ", ".join(defining)
            raise UsageError(
                f"{where}: this exercise grades the file {rule.pinned} (exercise.yaml handin.file), and the "
                f"hand-in has no file of that name; the function is defined in {shown}. Fix: rename that "
                f"file {PurePosixPath(rule.pinned).name}"
            )
        others = tuple(f for f in defining if f != pinned)
        if pinned not in defining and others:
            listed = ", ".join(others)
            raise UsageError(
                f"{where}: {pinned} does not define the function this exercise grades, and {listed} "
                f"{'does' if len(others) == 1 else 'do'}: this exercise grades {pinned} alone "
                "(exercise.yaml handin.file). Fix: move the function into "
                f"{pinned}"
            )
        return FileChoice(pinned, ChosenBy.PINNED, others)
    if not defining:
        return None
    ranked = sorted(defining, key=lambda f: sort_key(f, rule))
    graded = ranked[0]
    return FileChoice(graded, _step(graded, rule), tuple(ranked[1:]))


def _step(relative: str, rule: FileRule) -> ChosenBy:
    path = PurePosixPath(relative)
    if path.stem in rule.names:
        return ChosenBy.NAMED
    if path.suffix == notebooks.SUFFIX:
        return ChosenBy.NOTEBOOK
    return ChosenBy.FIRST


_ORDER = {ChosenBy.PINNED: 0, ChosenBy.NAMED: 1, ChosenBy.NOTEBOOK: 2, ChosenBy.FIRST: 3}


def _pinned(files: Sequence[str], pinned: str) -> str | None:
    """The hand-in's file the exercise pins: that path, else the one file of that name in a sub-folder."""
    if pinned in files:
        return pinned
    name = PurePosixPath(pinned).name
    found = sorted((f for f in files if PurePosixPath(f).name == name), key=lambda f: (f.count("/"), f))
    return found[0] if found else None


def sort_key(relative: str, rule: FileRule) -> tuple[int, str]:
    """Files in the rule's order: for the worker's imports after the graded file."""
    return _ORDER[_step(relative, rule)], relative
