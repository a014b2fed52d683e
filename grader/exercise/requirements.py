"""The pip requirements of the courses whose exercises lie below some folders: what scripts/setup.sh and
the Gradescope image install beside the grader. `python -m grader.exercise.requirements DIR...` prints
them one a line."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.errors import GraderError, SpecError
from grader.exercise.course import COURSE_FILE, course_of, find_course_file, hidden
from grader.exercise.spec import discover_exercises


def requirements(folders: Iterable[Path]) -> list[str]:
    """The pip requirements of the courses governing the exercises below `folders` (and of the course
    files there), each once, in the order found."""
    found: list[str] = []
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            raise SpecError(folder, None, "", "no such folder of exercises")
        paths = [find_course_file(f) for f in discover_exercises(folder)]
        paths += sorted(p for p in folder.rglob(COURSE_FILE) if not hidden(p.relative_to(folder)))
        for path in paths:
            if path is None or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            found += [p.requirement for p in course_of(path.parent).packages]
    return list(dict.fromkeys(found))


_USAGE = "usage: python -m grader.exercise.requirements DIR...\n"


def main(argv: Sequence[str]) -> int:
    if not argv:
        sys.stderr.write(_USAGE)
        return 2
    try:
        lines = requirements(Path(a) for a in argv)
    except (GraderError, OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
