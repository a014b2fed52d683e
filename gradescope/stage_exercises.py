"""Copy what grading reads of each exercise (its spec, support files and reference) for the Gradescope zip.

Usage: python gradescope/stage_exercises.py EXERCISES_DIR... TARGET_DIR (build.sh calls it). Each source
keeps its name and layout below TARGET_DIR, with its shared folders and course.yaml files
(grader/exercise/staging.py), so the staged copy grades as the original does. The reference solution,
the starter and the known-wrong files stay behind: whatever the isolation on Gradescope's machine, a
submission finds nothing there to copy.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.errors import GraderError
from grader.exercise.spec import SPEC_FILE, Exercise
from grader.exercise.staging import stage


def main(sources: list[Path], target: Path) -> None:
    try:
        staged = stage(sources, target, _read)
    except GraderError as exc:
        raise SystemExit(str(exc)) from None
    for done in staged:
        print(f"  {done.exercise.id}: {', '.join(str(p) for p in done.copies)}")


def _read(exercise: Exercise) -> list[Path]:
    """What grading the exercise reads: its spec, its reference's file, its support files and folders.

    The reference's file ships even where the image's pool holds every reference (prepare_pool.sh): the
    spec does not load without it, a failing return's diagnosis evaluates the exercise's variants through
    it (dropout's declared misconceptions, the standard mistakes), and the references' key hashes it.
    """
    spec = exercise.spec
    named = [SPEC_FILE, *([spec.reference_file] if spec.reference_file else []), *spec.support]
    return [(exercise.root / relative).resolve() for relative in named]


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python gradescope/stage_exercises.py EXERCISES_DIR... TARGET_DIR")
    main([Path(a) for a in sys.argv[1:-1]], Path(sys.argv[-1]))
