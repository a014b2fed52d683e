"""Copy what grading reads of each exercise (its spec, support files and reference) for the Gradescope zip.

Usage: python gradescope/stage_exercises.py EXERCISES_DIR... TARGET_DIR (build.sh calls it). Each source
(a folder of exercises, or one exercise) keeps its name and layout below TARGET_DIR, with the shared
folders its exercises use (`support: [../_support/cs231n]`) where they were beside it, so the staged
copy grades as the original does: exercises/cs231n/a2 is staged as TARGET_DIR/a2/affine/...,
TARGET_DIR/a2/_support/cs231n, and exercises/mac0460/graph2 as TARGET_DIR/graph2, TARGET_DIR/_support.
The reference solution, the starter and the known-wrong files stay behind:
whatever the isolation on Gradescope's machine, a submission finds nothing there to copy.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

from grader.exercise.spec import SPEC_FILE, Exercise, discover_exercises, load_exercise


def main(sources: list[Path], target: Path) -> None:
    staged: dict[Path, Path] = {}  # each copy in the target, by what it is a copy of
    for source in sources:
        exercises = [load_exercise(f) for f in discover_exercises(source)]  # a broken one is not shipped
        if not exercises:
            raise SystemExit(f"{source}: no exercises here (an exercise is a folder holding {SPEC_FILE})")
        items = {e.id: _read(e) for e in exercises}
        # The deepest folder holding the source (named as it is) and the shared folders its exercises use.
        holders = [source.resolve().parent, *(e.root.parent for e in exercises)]
        base = Path(os.path.commonpath([*holders, *(p.parent for i in items.values() for p in i)]))
        for exercise in exercises:
            for item in items[exercise.id]:
                _copy(item, target / item.relative_to(base), staged)
            shown = ", ".join(str(p.relative_to(exercise.root.parent)) for p in items[exercise.id])
            print(f"  {exercise.id}: {shown}")


def _read(exercise: Exercise) -> list[Path]:
    """What grading the exercise reads: its spec, its reference's file, its support files and folders.

    The reference's file ships even where the image's pool holds every reference (prepare_pool.sh): the
    spec does not load without it, a failing return's diagnosis evaluates the exercise's variants through
    it (dropout's declared misconceptions, the standard mistakes), and the references' key hashes it.
    """
    spec = exercise.spec
    named = [SPEC_FILE, *([spec.reference_file] if spec.reference_file else []), *spec.support]
    return [(exercise.root / relative).resolve() for relative in named]


def _copy(item: Path, copy: Path, staged: dict[Path, Path]) -> None:
    """Copy a file or folder once; what two sources both stage at one place must be one same file."""
    if copy in staged:
        same = staged[copy] == item or (item.is_file() and filecmp.cmp(item, staged[copy], shallow=False))
        if not same:
            raise SystemExit(f"{item} and {staged[copy]} would both be staged as {copy}: stage them apart")
        return
    staged[copy] = item
    copy.parent.mkdir(parents=True, exist_ok=True)
    if item.is_dir():
        shutil.copytree(item, copy, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copyfile(item, copy)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python gradescope/stage_exercises.py EXERCISES_DIR... TARGET_DIR")
    main([Path(a) for a in sys.argv[1:-1]], Path(sys.argv[-1]))
