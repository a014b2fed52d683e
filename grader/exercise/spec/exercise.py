"""A loaded, cross-checked exercise: the spec, its folder and its parsed graph, and what is derived from
them (the calls as the worker makes them, sizes, points, the hash of what grading reads).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.exercise.graph import Program, evaluate_size_expression
from grader.exercise.spec.models import (
    SPEC_FILE,
    Arg,
    DictArg,
    ExerciseSpec,
    IndexOfArg,
    LiteralArg,
    SamplerObject,
    Scalar,
    TokensArg,
    Visibility,
)
from grader.handin.choice import FileRule

if TYPE_CHECKING:  # course.py reads YAML locations through this package: imported at run time by loading.py
    from grader.exercise.course import Course


@dataclass(frozen=True)
class Exercise:
    """A loaded, cross-checked exercise. `root` is its folder; paths in the spec are relative to it."""

    spec: ExerciseSpec
    root: Path
    program: Program
    course: Course | None = None  # its course.yaml's environment; None: no course file governs it

    @property
    def file_rule(self) -> FileRule:
        """Which of a hand-in's files is graded (handin/choice.py): the pinned one, else one named after
        the entry, the id's last part, this folder or the assignment's (the folder holding it)."""
        spec = self.spec
        names = {spec.entry, spec.id.rsplit(".", 1)[-1], self.root.name, self.root.parent.name}
        return FileRule(frozenset(names), spec.handin.file)

    @property
    def id(self) -> str:
        return self.spec.id

    def wire_calls(self) -> list[dict[str, Any]]:
        """The calls as the worker makes them, in order: entry, args (as `_wire_args`), binds (None: the
        call returns the exercise's returns)."""
        spec = self.spec
        calls = [(spec.entry, spec.args, spec.binds), *((c.entry, c.args, c.binds) for c in spec.then)]
        known = set(spec.inputs) | set(self.sizes_handed) | {n for c in spec.then for n in c.binds}
        known |= set(spec.binds or ())
        return [
            {"entry": entry, "args": _wire_args(args, known), "binds": None if binds is None else list(binds)}
            for entry, args, binds in calls
        ]

    @cached_property
    def sizes_handed(self) -> tuple[str, ...]:
        """Sizes the calls hand the student as Python ints (a padding in CS231n's conv_param): each trial
        carries them as inputs."""
        named: set[str] = set()
        for args in (self.spec.args, *(c.args for c in self.spec.then)):
            for arg in args:
                if isinstance(arg, DictArg):
                    named.update(v for v in arg.entries.values() if isinstance(v, str))
                elif isinstance(arg, str):
                    named.add(arg)
                elif isinstance(arg, tuple):
                    named.update(arg)
        return tuple(sorted(named & set(self.spec.sizes)))

    @cached_property
    def return_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.spec.returns)

    def points(self, name: str) -> float:
        return self.spec.points.get(name, 1.0)

    def visibility(self, name: str) -> Visibility:
        """When Gradescope shows the return's test to students: its own setting, else the exercise's."""
        own = next(r.visibility for r in self.spec.returns if r.name == name)
        return own or self.spec.gradescope.visibility

    @property
    def max_score(self) -> float:
        return sum(self.points(n) for n in self.return_names)

    def size_range(self, name: str) -> tuple[int, int]:
        """The range a drawn (or fixed) size is drawn from; derived sizes have none."""
        size = self.spec.sizes[name]
        assert not isinstance(size, str), f"size {name} is derived"
        return (size, size) if isinstance(size, int) else (size.min, size.max)

    @cached_property
    def derived_sizes(self) -> tuple[tuple[str, str], ...]:
        """(name, expression) of the sizes computed from others, in the spec's order."""
        return tuple((name, size) for name, size in self.spec.sizes.items() if isinstance(size, str))

    def shape(self, input_name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(evaluate_size_expression(d, sizes) for d in self.spec.inputs[input_name].shape)

    @property
    def computed(self) -> tuple[str, ...]:
        """The names of the values the exercise computes (its graph's, or its reference function's)."""
        return computed_names(self.spec, self.program)

    def path_of(self, relative: str) -> Path:
        return self.root / relative

    @cached_property
    def support_paths(self) -> tuple[Path, ...]:
        """The support files and folders the worker stages beside the hand-in: the exercise's own, then its
        course's whose names the exercise's do not take (its own util.py stands in for the course's)."""
        own = [self.path_of(relative) for relative in self.spec.support]
        names = {p.name for p in own}
        course = [p for p in (self.course.support if self.course is not None else ()) if p.name not in names]
        return (*own, *course)

    @property
    def allowed_modules(self) -> tuple[str, ...]:
        """The top-level modules beyond the stdlib, torch and numpy its course lets student code import."""
        return self.course.modules if self.course is not None else ()

    @property
    def allowed_distributions(self) -> tuple[str, ...]:
        """The distributions its course declares (pip names): what the sandbox shows beyond torch's and
        numpy's (sandbox/course_view.py)."""
        return self.course.distributions if self.course is not None else ()

    @property
    def allows_subprocesses(self) -> bool:
        """Whether its course lets hand-ins start processes (course.yaml `subprocesses: true`)."""
        return self.course is not None and self.course.subprocesses

    @property
    def refuses_numerical_derivatives(self) -> bool:
        """Whether its course refuses numerical derivatives for what is to be derived by hand (course.yaml
        `numerical_derivatives: refuse`)."""
        return self.course is not None and self.course.refuses_numerical


def _wire_args(args: tuple[Arg, ...], known: set[str]) -> list[Any]:
    """Arguments as the worker builds them: a name (an input, or what an earlier call bound), a list of
    names (a tuple), {"value": literal}, {"dict": {key: {"input": name} or {"value": literal}}},
    {"tokens": name, "vocab": [word, ...]}, {"index_of": [word, ...]}, or
    {"object": kind, "methods": {method: {"draws": name} or {"value": literal}}}."""

    def entry(value: Scalar) -> dict[str, Scalar]:
        return {"input": value} if isinstance(value, str) and value in known else {"value": value}

    wired: list[Any] = []
    for arg in args:
        if isinstance(arg, LiteralArg):
            wired.append({"value": arg.value})
        elif isinstance(arg, DictArg):
            wired.append({"dict": {key: entry(value) for key, value in arg.entries.items()}})
        elif isinstance(arg, TokensArg):
            wired.append({"tokens": arg.tokens, "vocab": list(arg.vocab)})
        elif isinstance(arg, IndexOfArg):
            wired.append({"index_of": list(arg.index_of)})
        elif isinstance(arg, SamplerObject):
            methods = {
                name: {"draws": method} if isinstance(method, str) else {"value": method.value}
                for name, method in arg.methods.items()
            }
            wired.append({"object": arg.object, "methods": methods})
        else:
            wired.append(arg if isinstance(arg, str) else list(arg))
    return wired


def computed_names(spec: ExerciseSpec, program: Program) -> tuple[str, ...]:
    """The names the exercise computes: its graph's, or those its returns take from the reference's
    function (which says what it computes only when it runs: reference.py checks them then)."""
    if spec.graph is not None:
        return program.defined
    named = [ret.value if ret.value is not None else (ret.grad or ret.vjp).of for ret in spec.returns]  # type: ignore[union-attr]
    # Names the program assigns are computed from the function's values, not by it: a declared
    # misconception's expression (`out * p`), evaluated over what the function returned.
    return tuple(dict.fromkeys(n for n in named if n not in spec.inputs and n not in program.defined))


# Spec fields that only change how results are shown or exported, or that grading a student never
# reads: left out of exercise_hash, so that editing them regrades nobody (a class of hundreds re-run
# for a Gradescope visibility switch). Each stored result is the same whatever their values:
#   title, description        shown by `grader show` and the reports, read from the spec when shown
#   gradescope                visibility and visible_trials: applied when results.json is written; the
#                             preview's own trial count is in the gradebook's settings key
#   returns[].visibility      the same, per return
#   solution, starter, wrong  the author's files and their expected verdicts: `grader validate` alone
PRESENTATION_FIELDS: dict[str, Any] = {
    "title": True,
    "description": True,
    "gradescope": True,
    "solution": True,
    "starter": True,
    "wrong": True,
    "returns": {"__all__": {"visibility"}},
}


def grading_spec(spec: ExerciseSpec) -> bytes:
    """The spec as grading reads it: every field but the PRESENTATION_FIELDS, in a canonical form (YAML
    comments, order and layout do not count either)."""
    fields = spec.model_dump(mode="json", by_alias=True, exclude=PRESENTATION_FIELDS)
    if not fields["conventions"]:  # a field added since: the results stored for exercises without any stand
        del fields["conventions"]
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def exercise_hash(exercise: Exercise) -> str:
    """sha256 over what grading reads: the spec's grading fields (grading_spec), the reference and support
    files, and the packages its course lets student code import (what the gradebook keys results by)."""
    digest = hashlib.sha256()
    digest.update(SPEC_FILE.encode() + b"\0" + grading_spec(exercise.spec) + b"\0")
    paths: list[Path] = []
    if exercise.spec.reference_file is not None:
        paths.append(exercise.path_of(exercise.spec.reference_file))
    for source in exercise.support_paths:
        paths += sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
    for path in paths:
        # relpath, not relative_to: a support folder shared by an assignment lies beside the exercise
        digest.update(os.path.relpath(path, exercise.root).encode() + b"\0" + path.read_bytes() + b"\0")
    if exercise.allowed_modules:  # a package declared since: the hand-ins that imported it grade again
        digest.update(b"modules\0" + "\0".join(exercise.allowed_modules).encode())
    return digest.hexdigest()
