"""`grader handout EXERCISES... OUT`: the exercises as students get them, to check their work at home.

OUT holds, laid out as in the instructor's library (grader/exercise/staging.py), each exercise's spec
without the instructor's fields, its starter, its support files and the course's course.yaml files, and
a README.md for students, and the references of the trials `grader check` uses by default
(shipped_references.py: a student's first check reads them, and never imports torch for them). Never the
reference solution, the known-wrong files or the reference code:
after writing, every file of OUT is compared (by name and by content) with those, and a match empties
OUT and fails. An exercise whose expected values come from `reference.py` cannot be checked without that
code: its starter is handed out, its spec is not, and the README says it is graded by the course only.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from grader.errors import GraderError, UsageError
from grader.exercise.settings import ReferenceCache
from grader.exercise.spec import SPEC_FILE, Exercise, ExerciseSpec, discover_exercises, load_exercise
from grader.exercise.staging import StagedExercise, stage
from grader.exercise.trials import DEFAULT_SEED

README = "README.md"
# Spec fields only the instructor's tools read (`grader validate`): the reference solution's file, and the
# known-wrong files with the mistake each makes, which tells the right formula beside the wrong one.
INSTRUCTOR_FIELDS = ("solution", "wrong")
_SPEC_HEADER = (
    "# Written by `grader handout`: the exercise as `grader check` grades it. The instructor's reference\n"
    "# solution and known-wrong files are not part of the handout.\n"
)


class HandoutError(GraderError):
    """The handout would show students something of the instructor's: nothing of it is left."""


@dataclass(frozen=True)
class HandedExercise:
    id: str
    title: str
    entries: tuple[str, ...]  # the functions a student writes, in the order they are called
    folder: Path  # relative to OUT
    starter: Path | None  # relative to OUT
    checkable: bool  # False: its expected values come from the instructor's reference code
    references: Path | None = None  # relative to OUT: the default check's, shipped; None: not handed out


@dataclass(frozen=True)
class Handout:
    folder: Path
    exercises: tuple[HandedExercise, ...]
    files: int


def write_handout(sources: Sequence[Path], out: Path, references: ReferenceCache | None = None) -> Handout:
    """Write the handout of every exercise under `sources` into `out` (a new or empty folder), with the
    default check's references of each checkable exercise where `references` (the cache they are looked
    up in, and kept in where computed here) is given."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: not an empty folder; name a new folder for the handout, or empty this one")
    exercises = [load_exercise(f) for s in sources for f in discover_exercises(s)]
    out.mkdir(parents=True, exist_ok=True)
    try:
        staged = stage(sources, out, _student_files, _render)
        handed = tuple(_handed(done) for done in staged)
        if references is not None:
            handed = tuple(_with_references(out, h, references) for h in handed)
        (out / README).write_text(student_readme(handed), encoding="utf-8")
        check_no_secrets(out, exercises)
    except BaseException:
        _empty(out)
        raise
    return Handout(out, handed, sum(1 for p in out.rglob("*") if p.is_file()))


def _student_files(exercise: Exercise) -> list[Path]:
    spec = exercise.spec
    # An exercise graded by reference code does not load without that code: its spec stays behind too.
    named = [] if spec.reference is not None else [SPEC_FILE]
    if spec.starter is not None and exercise.path_of(spec.starter).is_file():
        named.append(spec.starter)
    named += spec.support
    return [(exercise.root / relative).resolve() for relative in named]


def _render(exercise: Exercise, item: Path) -> bytes | None:
    if item != (exercise.root / SPEC_FILE).resolve():
        return None
    return student_spec(exercise).encode("utf-8")


def student_spec(exercise: Exercise) -> str:
    """The exercise's YAML without the instructor's fields (and without its comments, the author's notes):
    what it grades is unchanged, which loading it back checks."""
    data = yaml.safe_load((exercise.root / SPEC_FILE).read_text(encoding="utf-8"))
    kept = {key: value for key, value in data.items() if key not in INSTRUCTOR_FIELDS}
    text = _SPEC_HEADER + yaml.dump(
        kept, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110, default_flow_style=None
    )
    loaded = yaml.safe_load(text)
    mine, theirs = (
        ExerciseSpec.model_validate(d).model_dump(exclude=set(INSTRUCTOR_FIELDS)) for d in (loaded, data)
    )
    if mine != theirs:  # the YAML round trip changed a value: a grader bug, never the author's
        raise RuntimeError(f"{exercise.root / SPEC_FILE}: the handout's copy would grade differently")
    return text


class _Dumper(yaml.SafeDumper):
    """Block style for text of several lines (descriptions, graphs), as authors write them."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _handed(done: StagedExercise) -> HandedExercise:
    exercise = done.exercise
    spec = exercise.spec
    folder = done.folder
    starter = (
        folder / spec.starter
        if spec.starter is not None and exercise.path_of(spec.starter).is_file()
        else None
    )
    entries = (spec.entry, *(call.entry for call in spec.then))
    return HandedExercise(exercise.id, spec.title, entries, folder, starter, spec.reference is None)


def _with_references(out: Path, handed: HandedExercise, cache: ReferenceCache) -> HandedExercise:
    """The exercise with its default check's references written beside its spec in OUT: computed from the
    handout's own copy of the exercise, which is what students' checks key them by. One whose references
    cannot be computed (its graph fails on its own inputs: `grader validate` says why) goes without."""
    if not handed.checkable:
        return handed
    from grader.exercise import shipped_references
    from grader.exercise.preparation import public_references

    exercise = load_exercise(out / handed.folder / SPEC_FILE, authoring=False)
    try:
        computed = public_references(exercise, cache)
    except GraderError:
        return handed
    written = shipped_references.ship(exercise, DEFAULT_SEED, computed)
    return replace(handed, references=written.relative_to(out.resolve()))


def check_no_secrets(out: Path, exercises: Iterable[Exercise]) -> None:
    """No file of `out` is named as, or holds the bytes of, an exercise's solution, known-wrong file or
    reference code; on a match OUT is emptied and the error names both files."""
    secrets: dict[str, Path] = {}  # sha256 -> the instructor's file
    names: dict[str, Path] = {}
    for exercise in exercises:
        for path in instructor_files(exercise):
            names.setdefault(path.name, path)
            data = path.read_bytes()
            if data.strip():  # an empty file reveals nothing (and equals every empty __init__.py)
                secrets.setdefault(hashlib.sha256(data).hexdigest(), path)
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        found = names.get(path.name) or secrets.get(hashlib.sha256(path.read_bytes()).hexdigest())
        if found is not None:
            shown = path.relative_to(out)
            _empty(out)
            raise HandoutError(
                f"{out}: the handout held {shown}, {'named as' if path.name == found.name else 'a copy of'} "
                f"the instructor's {found}; nothing was handed out (the folder is emptied). Likely cause: "
                "it is in a support file or folder of the spec, or beside a course.yaml. Fix: move it out "
                "of what the spec's `support` names, then run grader handout again"
            )


def instructor_files(exercise: Exercise) -> list[Path]:
    """The files of an exercise students must never see: its solution, known-wrong files (those the spec
    lists and whatever else its wrong/ folder holds) and reference code."""
    spec = exercise.spec
    named = [spec.solution, spec.reference_file, *(w.file for w in spec.wrong)]
    paths = [exercise.path_of(n) for n in named if n is not None]
    wrong = exercise.root / "wrong"
    if wrong.is_dir():
        paths += [p for p in wrong.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sorted({p.resolve() for p in paths if p.is_file()})


def _empty(out: Path) -> None:
    for child in out.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def student_readme(exercises: Sequence[HandedExercise]) -> str:
    checkable = [e for e in exercises if e.checkable]
    first = checkable[0] if checkable else None
    rows = "\n".join(_row(e) for e in exercises)
    example = (
        f"    grader check {first.id} {first.entries[0]}.py\n"
        if first is not None
        else "    grader check EXERCISE_ID my_file.py\n"
    )
    not_here = [e for e in exercises if not e.checkable]
    only_course = (
        "\nExercises marked *graded by the course only* compute their expected values with the "
        "instructor's own code, which is not handed out: their starter is here, and your hand-in is "
        "checked when you submit it.\n"
        if not_here
        else ""
    )
    first_id, first_entry = (first.id, ", ".join(first.entries)) if first is not None else ("EXERCISE", "f")
    return _README.format(
        example=example, first_id=first_id, first_entry=first_entry, rows=rows, only_course=only_course
    )


def _row(exercise: HandedExercise) -> str:
    entries = ", ".join(f"`{e}`" for e in exercise.entries)
    starter = f"`{exercise.starter.as_posix()}`" if exercise.starter is not None else "—"
    where = f"`{exercise.folder.as_posix()}`" if exercise.checkable else "*graded by the course only*"
    return f"| `{exercise.id}` | {exercise.title} | {entries} | {starter} | {where} |"


_README = """\
# Exercises

Each exercise asks you to write a function (or a few) that computes a value and its gradients. Check
your work here, as often as you like, with the same grader and the same rules as your final grade.

## Install

    pip install gradient-grader

(Python 3.10 or later; it brings PyTorch and numpy.) Then, in this folder:

{example}
`grader check EXERCISE FILE`: EXERCISE is an exercise's id or its folder (or a folder of exercises:
every exercise your file defines a function for); FILE is your .py file, a notebook (.ipynb), or a
folder of them. Each failure prints the command that replays it: `grader repro ...`.

In a notebook, after defining your function:

    import grader
    grader.check("{first_id}", {first_entry})   # the exercise's id (or folder), your function(s)
    grader.check("EXERCISE", forward, backward)   # an exercise of two functions: both, in order

`grader.check(exercise, *functions, seed=0, trials=None, trial=None)` grades the functions of your
notebook, in your kernel, exactly as `grader check` grades the same code in a file.

## What the verdicts mean

Every return your function gives is compared with the expected value, entry by entry, on many random
inputs (trials):

- **pass**: right on every trial, within rounding.
- **precision**: right formula, but computed with too little precision (float32 where float64 is
  asked, for example): the error is larger than rounding allows, yet small. Partial credit.
- **instability**: right formula on most inputs, but it overflows or loses all its digits on some
  (exp of a large number, a difference of nearly equal numbers): rewrite it in a stable form.
- **logic**: a real mistake: wrong values on some trials (a transposed matrix, a missing factor, a
  wrong sign). The report shows which entries are wrong and, often, the likely mistake.
- **autograd**: a value meant to be derived by hand came from autograd.
- **error**: nothing to compare: your code raised, timed out, or returned the wrong shape or type.

## Exercises

| id | title | your function(s) | starter | folder |
|---|---|---|---|---|
{rows}
{only_course}"""
