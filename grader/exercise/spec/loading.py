"""Finding and loading exercises: `exercise.yaml` parsed once (values and lines), validated, cross-checked;
folders of exercises discovered; the exercise a command line names looked up by folder or id.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import yaml
from pydantic import (
    ValidationError,
)

from grader.errors import SpecError, UsageError
from grader.exercise import course as courses  # a module: course.py reads YAML lines through this package
from grader.exercise.spec.checks import cross_check
from grader.exercise.spec.exercise import Exercise
from grader.exercise.spec.locations import (
    clean_location,
    describe,
    field_name,
    first_error,
    line_for,
    line_index,
)
from grader.exercise.spec.models import SPEC_FILE, ExerciseSpec

# libyaml's parser where PyYAML was built with it: a library of exercises loads in a fraction of the time
# (the pure-Python parser's was a second for the bundled 46 each time a class was graded).
_SpecLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_exercise(folder: Path, authoring: bool = True) -> Exercise:
    """Load `folder/exercise.yaml` (or a direct path to the YAML file).

    With `authoring` (validation), the reference solution, starter and known-wrong files the spec names
    must be there; grading needs none of them, and an exercise folder handed to students or shipped to
    Gradescope leaves them out.
    """
    path = folder if folder.suffix in (".yaml", ".yml") else folder / SPEC_FILE
    if not path.is_file():
        raise SpecError(path, None, "", "no such file: an exercise is a folder holding exercise.yaml")
    text = path.read_text(encoding="utf-8")
    loader = _SpecLoader(text)
    try:  # one parse for both the values and their lines
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(path, line, "", f"YAML syntax error: {problem}") from None
    finally:
        loader.dispose()
    lines = line_index(node)
    if not isinstance(data, dict):
        raise SpecError(path, 1, "", f"expected a mapping of fields at the top, got {type(data).__name__}")
    try:
        spec = ExerciseSpec.model_validate(data)
    except ValidationError as exc:
        first = first_error(exc.errors())
        location = tuple(first["loc"])
        raise SpecError(
            path,
            line_for(lines, clean_location(location)),
            field_name(location),
            describe(first, location),
        ) from None
    program = cross_check(spec, path, lines, authoring)
    course = courses.course_of(path.parent)
    return Exercise(spec=spec, root=path.parent.resolve(), program=program, course=course)


def discover_exercises(folder: Path) -> list[Path]:
    """Exercise folders at any depth below `folder` (or `folder` itself), sorted by path: a library groups
    them by course and assignment (exercises/cs231n/a2/...). Nothing below an exercise folder is searched
    (its wrong/ files are its own), nor hidden or underscore folders."""
    if (folder / SPEC_FILE).is_file():
        return [folder]
    found: list[Path] = []
    for current, subfolders, names in os.walk(folder):
        if SPEC_FILE in names and Path(current) != folder:
            found.append(Path(current))
            subfolders.clear()
        else:
            subfolders[:] = [d for d in subfolders if not d.startswith((".", "_"))]
    return sorted(found)


EXERCISES_ENV = "GRADER_EXERCISES"  # folders to look exercise ids up in too, separated by os.pathsep
_IDS_LISTED = 20


def exercise_argument(name: Path, library: bool = False) -> Path:
    """The exercise a command line names: a folder holding exercise.yaml (or the YAML file); with
    `library`, a folder with exercises below it; else, for a bare name, the exercise with that id below
    the current folder or a folder GRADER_EXERCISES lists, as a course hands exercises out
    (./graph2/exercise.yaml, ./exercises/cs231n/a2/affine): what a replay command printed by Gradescope,
    `grader repro graph2 graph2.py ...`, needs. A path that names nothing is returned as it is, for
    loading it to say what is missing."""
    if name.suffix in (".yaml", ".yml") or (name / SPEC_FILE).is_file():
        return name
    if library and name.is_dir() and discover_exercises(name):
        return name
    wanted = str(name)
    if name.is_absolute() or len(name.parts) != 1:
        return name
    places = [Path.cwd(), *(Path(p) for p in os.environ.get(EXERCISES_ENV, "").split(os.pathsep) if p)]
    found: dict[str, list[Path]] = {}
    for place in places:
        for folder in discover_exercises(place):
            declared = _declared_id(folder)
            if declared is not None and folder.resolve() not in found.get(declared, []):
                found.setdefault(declared, []).append(folder.resolve())
    matches = found.get(wanted, [])
    if len(matches) == 1:
        return matches[0]
    where = " and ".join(str(p) for p in places)
    if matches:
        listing = ", ".join(str(m) for m in matches)
        raise UsageError(
            f"'{wanted}' is the id of {len(matches)} exercises below {where} ({listing}): name the folder"
        )
    nothing = f"'{wanted}': no exercise folder of that name (one holding {SPEC_FILE}), nor an exercise"
    raise UsageError(f"{nothing} with that id below {where}{_suggestions(wanted, sorted(found))}")


def _suggestions(wanted: str, ids: list[str]) -> str:
    """What to say after an unknown id: the ids it may mean, and those there are."""
    if not ids:
        return (
            f" (no exercises there: run the command in the folder that holds the exercise's folder, or set "
            f"{EXERCISES_ENV} to the folder of exercises)"
        )
    close = difflib.get_close_matches(wanted, ids, n=3)
    close += [i for i in ids if i.rpartition(".")[2] == wanted and i not in close]  # cs231n.a2.affine
    shown = ", ".join(ids[:_IDS_LISTED]) + (
        f" and {len(ids) - _IDS_LISTED} more" if len(ids) > _IDS_LISTED else ""
    )
    mean = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"{mean} (ids found: {shown})"


def _declared_id(folder: Path) -> str | None:
    """The id an exercise's YAML declares, without validating the rest; None where it cannot be read."""
    try:
        data = yaml.safe_load((folder / SPEC_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    declared = data.get("id") if isinstance(data, dict) else None
    return declared if isinstance(declared, str) else None
