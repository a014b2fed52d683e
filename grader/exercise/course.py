"""A course's environment, declared: `course.yaml` in a folder at or above its exercises.

    packages:                     # what student code may import besides the stdlib, torch and numpy
      - matplotlib>=3.7           # a pip requirement; imported by its name
      - {pip: scikit-learn, import: sklearn}
    support: [_support/coutils.py]  # stand-ins for the course's helpers, added to every exercise below
    subprocesses: true            # its hand-ins may start processes (default: one process per hand-in)
    numerical_derivatives: refuse # what is to be derived by hand earns nothing computed with complex
                                  # numbers (the complex step; default: allow, judged as any derivation)

The nearest course.yaml above an exercise governs it, alone: files do not merge, so what an exercise may
import is read in one place (a course split in two copies the shared lines). Paths in `support` are
relative to the course.yaml, inside its folder. `python -m grader.exercise.requirements DIR...`
prints the pip requirements of the courses governing the exercises below DIR, one a line, for the setup
scripts to install; nothing else goes to stdout.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from grader.errors import SpecError
from grader.exercise.spec.locations import (
    clean_location,
    describe,
    field_name,
    first_error,
    line_for,
    line_index,
)

COURSE_FILE = "course.yaml"
_CourseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A PEP 508 requirement without URLs, markers or pip options: the line goes to `pip install`, where
# `--index-url ...` or `-e git+...` would change where packages come from.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_VERSION = r"(?:===|==|~=|!=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+"
_REQUIREMENT = re.compile(
    rf"^({_NAME})(\[{_NAME}(?:\s*,\s*{_NAME})*\])?\s*({_VERSION}(?:\s*,\s*{_VERSION})*)?$"
)
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_TEXT = 200


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PackageSpec(_Model):
    """A package student code may import: its pip requirement, and its import name where that differs
    from the requirement's name (scikit-learn is imported as sklearn). A plain string is the requirement."""

    pip: str = Field(min_length=1, max_length=_MAX_TEXT)
    import_: str | None = Field(default=None, alias="import", min_length=1, max_length=_MAX_TEXT)

    @model_validator(mode="before")
    @classmethod
    def _plain_requirement(cls, value: Any) -> Any:
        return {"pip": value} if isinstance(value, str) else value

    @field_validator("pip")
    @classmethod
    def _a_requirement(cls, value: str) -> str:
        return _checked_requirement(value)

    @field_validator("import_")
    @classmethod
    def _a_module(cls, value: str | None) -> str | None:
        if value is not None and not _MODULE.match(value):
            raise ValueError(
                "expected the top-level module name the package is imported by, such as sklearn "
                "(no dots, no spaces)"
            )
        return value


class CourseSpec(_Model):
    packages: tuple[PackageSpec, ...] = Field(default=(), max_length=200)
    support: tuple[str, ...] = Field(default=(), max_length=50)
    # YAML's true or false only: a course that means to drop the one-process wall says so in so many words
    # ("yes" or 1 are refused, not read as true).
    subprocesses: StrictBool = False
    numerical_derivatives: Literal["allow", "refuse"] = "allow"


def _plain_string(data: dict[str, Any], location: tuple[Any, ...]) -> bool:
    packages = data.get("packages")
    if len(location) != 2 or not isinstance(packages, list) or not isinstance(location[1], int):
        return False
    return location[1] < len(packages) and isinstance(packages[location[1]], str)


def _unknown_field(location: tuple[Any, ...]) -> str:
    known = (
        ["pip", "import"]
        if len(location) > 1
        else ["packages", "support", "subprocesses", "numerical_derivatives"]
    )
    close = difflib.get_close_matches(str(location[-1]), known, n=1)
    what = "a package is {pip: REQUIREMENT, import: MODULE}" if len(location) > 1 else "a course.yaml has"
    hint = f": did you mean '{close[0]}'?" if close else ""
    return f"unknown field '{location[-1]}' ({what} {', '.join(known)}){hint}"


def _checked_requirement(value: str) -> str:
    text = value.strip()
    if not _REQUIREMENT.match(text):
        raise ValueError(
            "expected a pip requirement: a package name with an optional version, such as "
            "'matplotlib' or 'matplotlib>=3.7' (no URLs, markers or pip options)"
        )
    return text


@dataclass(frozen=True)
class Package:
    requirement: str  # as pip takes it: matplotlib>=3.7
    module: str  # the top-level module student code imports: matplotlib

    @property
    def distribution(self) -> str:
        """The requirement's distribution name: scikit-learn for scikit-learn>=1.3."""
        match = _REQUIREMENT.match(self.requirement)
        return match.group(1) if match is not None else self.requirement


@dataclass(frozen=True)
class Course:
    """The environment a course's exercises run in: `path` is its course.yaml (None: no course file, the
    stdlib, torch and numpy only)."""

    path: Path | None = None
    packages: tuple[Package, ...] = ()
    support: tuple[Path, ...] = ()  # absolute
    # Whether hand-ins may start processes (os.fork, subprocess, multiprocessing): off, one process per
    # hand-in, unless the course needs them (worker/seccomp.py).
    subprocesses: bool = False
    # Whether a return to be derived by hand earns nothing where the checked worker saw complex numbers in
    # the hand-in's calls (the complex step: exact, so no comparison of values can refuse it;
    # worker/numerical_watch.py).
    refuses_numerical: bool = False

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.module for p in self.packages))

    @property
    def distributions(self) -> tuple[str, ...]:
        """What it declares, as installed distributions are named (the sandbox shows those alone)."""
        return tuple(dict.fromkeys(p.distribution for p in self.packages))


NO_COURSE = Course()


def find_course_file(folder: Path) -> Path | None:
    """The course.yaml governing the exercise in `folder`: the nearest at or above it."""
    for candidate in (folder.resolve(), *folder.resolve().parents):
        path = candidate / COURSE_FILE
        if path.is_file():
            return path
    return None


def course_of(folder: Path) -> Course:
    """The course of the exercise in `folder`; SpecError where its course.yaml is wrong."""
    path = find_course_file(folder)
    if path is None:
        return NO_COURSE
    status = path.stat()
    return _load_cached(path, status.st_mtime_ns, status.st_size)


@lru_cache(maxsize=64)
def _load_cached(path: Path, mtime_ns: int, size: int) -> Course:
    # A class run loads every exercise of a course: one read of its course.yaml, unless it changed.
    return load_course(path)


def load_course(path: Path) -> Course:
    text = path.read_text(encoding="utf-8")
    loader = _CourseLoader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(
            path, mark.line + 1 if mark is not None else None, "", f"YAML syntax error: {problem}"
        ) from None
    finally:
        loader.dispose()
    lines = line_index(node)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(
            path,
            1,
            "",
            "expected a mapping of fields (packages, support, subprocesses, numerical_derivatives), got "
            f"{type(data).__name__}",
        )
    try:
        spec = CourseSpec.model_validate(data)
    except ValidationError as exc:
        first = first_error(exc.errors())
        location = clean_location(tuple(first["loc"]))
        if location[-1:] == ("pip",) and _plain_string(data, location[:-1]):
            location = location[:-1]  # `- matplotlib>>3`: the entry is the requirement
        message = (
            _unknown_field(location) if first["type"] == "extra_forbidden" else describe(first, location)
        )
        raise SpecError(path, line_for(lines, location), field_name(location), message) from None
    folder = path.parent.resolve()
    support: list[Path] = []
    for i, relative in enumerate(spec.support):
        resolved = (folder / relative).resolve()
        where = (path, line_for(lines, ("support", i)), f"support[{i}]")
        if not resolved.is_relative_to(folder) or resolved == folder:
            raise SpecError(*where, f"'{relative}' is not inside the course's folder {folder}")
        if not (resolved.is_dir() or (resolved.is_file() and resolved.suffix == ".py")):
            raise SpecError(*where, f"'{relative}' is neither a .py file nor a folder beside {COURSE_FILE}")
        if any(s.name == resolved.name for s in support):
            raise SpecError(*where, f"two support entries are named '{resolved.name}'")
        support.append(resolved)
    packages = tuple(_package(p) for p in spec.packages)
    return Course(
        path=path.resolve(),
        packages=packages,
        support=tuple(support),
        subprocesses=spec.subprocesses,
        refuses_numerical=spec.numerical_derivatives == "refuse",
    )


def _package(declared: PackageSpec) -> Package:
    match = _REQUIREMENT.match(declared.pip)
    assert match is not None  # checked by the model
    # pip's name is not always the module's (scikit-learn, Pillow): the spec says so where it differs.
    guessed = match.group(1).replace("-", "_").replace(".", "_").lower()
    return Package(declared.pip, declared.import_ or guessed)


def hidden(relative: Path) -> bool:
    return any(part.startswith((".", "_")) for part in relative.parts[:-1])
