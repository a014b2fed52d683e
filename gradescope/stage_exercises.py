"""Copy what grading reads of each exercise (its spec and support files) for the Gradescope zip.

Usage: python gradescope/stage_exercises.py EXERCISES_DIR TARGET_DIR (called by build.sh). The reference
solution, the starter and the known-wrong files stay behind: whatever the isolation on Gradescope's
machine, a submission finds nothing there to copy.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader.exercise.spec import SPEC_FILE, discover_exercises, load_exercise


def main(source: Path, target: Path) -> None:
    for folder in discover_exercises(source):
        exercise = load_exercise(folder)  # the full exercise must load: a broken one is not shipped
        out = target / folder.name
        out.mkdir(parents=True)
        shutil.copyfile(folder / SPEC_FILE, out / SPEC_FILE)
        for relative in exercise.spec.support:
            item, copy = exercise.path_of(relative), out / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            if item.is_dir():
                shutil.copytree(item, copy, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copyfile(item, copy)
        print(f"  {exercise.id}: {', '.join([SPEC_FILE, *exercise.spec.support])}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
