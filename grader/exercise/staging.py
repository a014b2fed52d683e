"""Copying exercises out of the instructor's library, for Gradescope's zip or a student's handout.

Each source (a folder of exercises, or one exercise) keeps its name and layout below the target, with the
shared folders its exercises use (`support: [../_support/cs231n]`) where they were beside it, and the
course's `course.yaml` files found at or above its exercises: exercises/cs231n/a2 is staged as
TARGET/a2/affine/..., TARGET/a2/_support/cs231n, and exercises/mac0460/graph2 as TARGET/graph2,
TARGET/_support. What of each exercise is copied is the caller's choice (`pick`): Gradescope's zip keeps
what grading reads (gradescope/stage_exercises.py), a handout what a student may see (grader/handout.py).
"""

from __future__ import annotations

import filecmp
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.exercise.spec import SPEC_FILE, Exercise, discover_exercises, load_exercise

COURSE_FILE = "course.yaml"  # a course's settings, beside or above its exercise folders

Pick = Callable[[Exercise], Sequence[Path]]  # the files and folders of an exercise to copy, absolute
Render = Callable[[Exercise, Path], bytes | None]  # a picked file's bytes as staged; None: copied as it is


@dataclass(frozen=True)
class StagedExercise:
    exercise: Exercise
    folder: Path  # the exercise's folder's copy, relative to the target
    copies: tuple[Path, ...]  # where its picked items went, relative to the folder holding the exercise's


def stage(
    sources: Sequence[Path], target: Path, pick: Pick, render: Render | None = None
) -> list[StagedExercise]:
    """Copy what `pick` names of every exercise under `sources` into `target`; a broken exercise stops it."""
    staged: dict[Path, Path] = {}  # each copy in the target, by what it is a copy of
    done: list[StagedExercise] = []
    for source in sources:
        exercises = [load_exercise(f) for f in discover_exercises(source)]
        if not exercises:
            raise UsageError(f"{source}: no exercises here (an exercise is a folder holding {SPEC_FILE})")
        items = {e.id: [Path(p) for p in pick(e)] for e in exercises}
        courses = sorted({c for e in exercises for c in course_files(e.root)})
        # A course's stand-ins (its `support:`) are what its exercises import, wherever they go.
        course_support = sorted({p for e in exercises if e.course is not None for p in e.course.support})
        # The deepest folder holding the source (named as it is), the shared folders its exercises use
        # and its course files.
        # A course file above the source keeps its folder's name (cs231n/course.yaml, mac0460/course.yaml):
        # two sources of two courses staged side by side must not land on one course.yaml.
        inside = source.resolve()
        above = [c.parent.parent if not c.parent.is_relative_to(inside) else c.parent for c in courses]
        holders = [inside.parent, *(e.root.parent for e in exercises), *above]
        picked = [p.parent for i in items.values() for p in i] + [p.parent for p in course_support]
        base = Path(os.path.commonpath([*holders, *picked]))
        for course in [*courses, *course_support]:
            _copy(course, target / course.relative_to(base), staged, None)
        for exercise in exercises:
            for item in items[exercise.id]:
                rendered = render(exercise, item) if render is not None else None
                _copy(item, target / item.relative_to(base), staged, rendered)
            copies = tuple(item.relative_to(exercise.root.parent) for item in items[exercise.id])
            done.append(StagedExercise(exercise, exercise.root.relative_to(base), copies))
    return done


def course_files(folder: Path) -> list[Path]:
    """The course.yaml files at `folder` and above it, nearest first."""
    start = folder.resolve()
    return [p / COURSE_FILE for p in (start, *start.parents) if (p / COURSE_FILE).is_file()]


def _copy(item: Path, copy: Path, staged: dict[Path, Path], rendered: bytes | None) -> None:
    """Copy a file or folder once; what two sources both stage at one place must be one same file."""
    if copy in staged:
        same = staged[copy] == item or (item.is_file() and filecmp.cmp(item, staged[copy], shallow=False))
        if not same:
            raise UsageError(f"{item} and {staged[copy]} would both be staged as {copy}: stage them apart")
        return
    staged[copy] = item
    copy.parent.mkdir(parents=True, exist_ok=True)
    if rendered is not None:
        copy.write_bytes(rendered)
    elif item.is_dir():
        shutil.copytree(item, copy, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copyfile(item, copy)
