"""Exercise specs: `exercises/<id>/exercise.yaml` → validated, immutable `Exercise`.

Every problem is reported as a SpecError naming the file, the line and the field, so an exercise author
never has to read a pydantic traceback.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from grader.errors import SpecError, UsageError
from grader.exercise.graph import GraphError, Program, evaluate_size_expression, parse, size_expression_names
from grader.handin import notebooks
from grader.outcomes import Verdict

SPEC_FILE = "exercise.yaml"
MISCONCEPTION = "__misconception"  # the name a declared misconception's expression is assigned to

SizeExpr = int | str
# The first call's CPU deadline unless an exercise sets one: `torch.func.grad` costs ~1.2 s of CPU on its
# first use (lazy imports; issue 15), torch.compile or scipy more; 30 s leaves room for several of them.
FIRST_CALL_SECONDS = 30.0
# A call's wall time is capped at this many times its CPU deadline. Eight gradings at once on two cores
# (issue 15) share each core four ways, so a call just within its CPU deadline takes up to four times as
# long on the clock; beyond that, a timeout is confirmed by a second run before it counts. A call that
# sleeps or waits still ends.
WALL_CAP_FACTOR = 4.0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeRange(_Model):
    min: int = Field(ge=0)
    max: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self


class InputSpec(_Model):
    shape: tuple[SizeExpr, ...] = ()
    dist: Literal["uniform", "normal", "integer", "constant", "bernoulli", "rejection"] = "uniform"
    low: float | str | None = None
    high: float | str | None = None
    mean: float = 0.0
    std: float = Field(default=1.0, gt=0)
    value: float | None = None
    p: float | None = Field(default=None, gt=0, le=1)  # bernoulli: the chance of each entry being 1
    # rejection: the first shape[0] entries of the integer input `of` that differ from the integer `reject`,
    # in order: what a loop that redraws any sample equal to `reject` keeps (CS224n's getNegativeSamples).
    # Not drawn, derived: the graph can index with it, where no graph expression could run that loop.
    of: str | None = None
    reject: str | None = None
    # How the student's function receives it: a numpy array (as most courses), a torch tensor on the cpu
    # (EECS498), or for a shape [] input a Python number (a float, or an int for dist integer).
    type: Literal["numpy", "torch", "python"] = "numpy"
    # The float dtype it is handed out in; its values are drawn in float64 and rounded to it, so the
    # grader's float64 reference sees exactly what the student gets. `bool` hands a bernoulli mask out as
    # booleans (CS231n's temporal_softmax_loss mask), the reference computing with its 0/1 values.
    dtype: Literal["float64", "float32", "bool"] = "float64"

    @model_validator(mode="after")
    def _fields_fit_dist(self) -> InputSpec:
        if self.dist == "constant" and self.value is None:
            raise ValueError("dist 'constant' needs a value")
        if self.dist == "integer" and (self.low is None or self.high is None):
            raise ValueError("dist 'integer' needs low and high (both inclusive)")
        if (self.dist == "bernoulli") != (self.p is not None):
            raise ValueError("dist 'bernoulli' needs p (the chance of a 1), and only it takes p")
        if self.dist != "constant" and self.value is not None:
            raise ValueError(f"'value' only goes with dist 'constant', not '{self.dist}'")
        if (self.dist == "rejection") != (self.of is not None and self.reject is not None):
            raise ValueError(
                "dist 'rejection' needs of (the integer input it keeps entries of) and reject (the integer "
                "input whose value it skips), and only it takes them"
            )
        if self.dist == "rejection" and len(self.shape) != 1:
            shape = list(self.shape)
            raise ValueError(f"dist 'rejection' has shape [count] (how many it keeps), not {shape}")
        if self.type == "python" and self.shape:
            raise ValueError(f"type 'python' is for shape [] (a number), not shape {list(self.shape)}")
        if self.dtype == "bool" and (self.dist != "bernoulli" or self.type == "python"):
            raise ValueError("dtype 'bool' is for a bernoulli mask handed out as an array or tensor")
        if self.dtype == "float32" and (self.is_integer or self.type == "python"):
            raise ValueError(f"dtype '{self.dtype}' is for float arrays and tensors, not this input")
        return self

    @property
    def is_integer(self) -> bool:
        return self.dist in ("integer", "rejection")


class GradSpec(_Model):
    of: str
    wrt: str


class VjpSpec(_Model):
    of: str
    wrt: str
    upstream: str


# When Gradescope shows a test to students (its results.json `visibility`): always, after the due date
# (the late due date where late hand-ins are allowed), once grades are published, or never.
Visibility = Literal["visible", "after_due_date", "after_published", "hidden"]


class ReturnSpec(_Model):
    name: str
    value: str | None = None
    grad: GradSpec | None = None
    vjp: VjpSpec | None = None
    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)
    # Derived by hand: the grader checks that it does not come from torch's autograd (judging/provenance.py).
    by_hand: bool = False
    # loose: an extra or missing axis of length 1 is accepted ((1, d) for (d,), as CS224n's checks do).
    shape: Literal["strict", "loose"] = "strict"
    visibility: Visibility | None = None  # on Gradescope; None: the exercise's `gradescope.visibility`

    @model_validator(mode="after")
    def _one_kind(self) -> ReturnSpec:
        kinds = [k for k in ("value", "grad", "vjp") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"give exactly one of value, grad, vjp (found {kinds or 'none'})")
        return self

    @property
    def explicit_tolerance(self) -> bool:
        return self.atol is not None or self.rtol is not None


class Limits(_Model):
    """Per-submission resource limits; documented defaults, raised per exercise where it needs more.

    A trial's deadline counts the worker's CPU time, so that a loaded machine does not make correct code
    late; its wall time is capped at WALL_CAP_FACTOR times it, so that code that sleeps or waits still
    ends. The first call after the import has a deadline of its own (`first_call_seconds`): it pays the
    lazy imports and set-up of what the code uses first (`torch.func`, scipy), over a second of CPU.
    A trial past its deadline is run again in a fresh worker before it counts as a timeout.
    """

    trial_seconds: float = Field(default=5.0, gt=0)  # CPU seconds per call, after the first
    # CPU seconds for the first call after import; by default FIRST_CALL_SECONDS or trial_seconds if more
    first_call_seconds: float | None = Field(default=None, gt=0)
    submission_seconds: float = Field(default=120.0, gt=0)  # wall seconds for all trials together
    import_seconds: float = Field(default=60.0, gt=0)  # wall seconds to start and import the hand-in
    memory_mb: int = Field(default=4096, ge=256)
    output_kb: int = Field(default=64, ge=1)
    file_mb: int = Field(default=64, ge=1)
    open_files: int = Field(default=256, ge=32)
    processes: int = Field(default=64, ge=16)  # processes and threads at once, the worker's own included

    @model_validator(mode="after")
    def _first_call_covers_a_trial(self) -> Limits:
        # The first call does a trial's work and pays the lazy imports on top: it never has less.
        if self.first_call_seconds is not None and self.first_call_seconds < self.trial_seconds:
            raise ValueError(
                f"first_call_seconds ({self.first_call_seconds:g}) is less than trial_seconds "
                f"({self.trial_seconds:g}): the first call does a trial's work, and its lazy imports too"
            )
        return self

    @property
    def first_call_cpu_seconds(self) -> float:
        """The CPU seconds the first call after import may use."""
        if self.first_call_seconds is not None:
            return self.first_call_seconds
        return max(FIRST_CALL_SECONDS, self.trial_seconds)


class NotebookSpec(_Model):
    """What of a notebook hand-in is graded (grader/handin/notebooks.py); a .py hand-in is graded whole.

    `all` (the default) runs every code cell at import, as Jupyter would; `definitions` keeps only the
    imports, functions, classes and constants of each cell, for notebooks full of try-out calls,
    downloads and plots; `tagged` keeps only the code cells whose metadata tags hold `tag` ("grade" by
    default), whole.
    """

    cells: notebooks.Cells = "all"
    tag: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _tag_goes_with_tagged(self) -> NotebookSpec:
        if self.tag is not None and self.cells != "tagged":
            raise ValueError(
                f"'tag' only goes with cells 'tagged', not '{self.cells}': remove tag, or set cells: tagged"
            )
        return self

    @property
    def selection(self) -> notebooks.Selection:
        return notebooks.Selection(self.cells, self.tag or notebooks.DEFAULT_TAG)


class GradescopeSpec(_Model):
    """How Gradescope shows the exercise's tests (report/gradescope.py). `visible_trials: N` adds, for
    grading that students do not see yet, a preview graded on the first N trials (the same trials as
    the first N of the full grading: trials derive from the seed and their index), visible at once."""

    visibility: Visibility = "visible"
    visible_trials: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _preview_of_something_unseen(self) -> GradescopeSpec:
        if self.visible_trials is not None and self.visibility not in ("after_due_date", "after_published"):
            raise ValueError(
                f"visible_trials previews a grading students do not see yet; with visibility "
                f"'{self.visibility}' there is none: set visibility after_due_date or after_published"
            )
        return self


class WrongSolution(_Model):
    file: str
    mistake: str
    expect: dict[str, Verdict]
    misconceptions: dict[str, str] = {}  # return -> the start of the name its diagnosis must have


class Misconception(_Model):
    """A mistake the author expects, as what it makes a return be: one or more graph expressions."""

    name: str = Field(min_length=1, max_length=200)
    return_: str = Field(alias="return")
    expr: tuple[str, ...] = Field(min_length=1)  # any of these forms (a YAML string or list of strings)
    feedback: str = ""

    @field_validator("expr", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value


Scalar = bool | int | float | str | None  # a literal in an argument: True, 3, 1e-5, 'train', None


def _literal(value: Any, depth: int = 0) -> Any:
    if isinstance(value, list) and depth < 2:
        for item in value:
            _literal(item, depth + 1)
    elif not isinstance(value, bool | int | float | str | None):
        shown = "a mapping (a dict argument is {dict: {...}})" if isinstance(value, dict) else repr(value)
        raise ValueError(
            f"a literal is a number, a string, true/false, null or a list of them (two levels at most), "
            f"not {shown}"
        )
    return value


# And lists of them: [1, 2], [[0, 1], [2, 3]]. Checked first, so that a wrong literal says what a
# literal is rather than every way it fails to be each of them.
LiteralValue = Annotated[Scalar | list[Scalar] | list[list[Scalar]], BeforeValidator(_literal)]


class LiteralArg(_Model):
    """An argument that is the same in every trial: `{value: None}`, `{value: 'train'}`, `{value: [1, 2]}`
    (a list, a fresh copy at every call)."""

    value: LiteralValue


class DictArg(_Model):
    """A dict argument, as CS231n's `bn_param = {'mode': 'train', 'eps': eps}`: each entry an input's name
    (that input, drawn per trial) or a literal."""

    entries: dict[str, Scalar] = Field(alias="dict")


def _distinct(words: tuple[str, ...]) -> tuple[str, ...]:
    seen: set[str] = set()
    for word in words:
        if word in seen:
            raise ValueError(f"'{word}' is in the vocabulary twice; each word has one index")
        seen.add(word)
    return words


Vocabulary = Annotated[tuple[str, ...], Field(min_length=1), AfterValidator(_distinct)]


class TokensArg(_Model):
    """An integer input handed out as words, as CS224n's `currentCenterWord` and `outsideWords`: vocab[c]
    (a str) for a shape [] input, a list of str for a shape [n] one. The graph sees the indices."""

    tokens: str
    vocab: Vocabulary


class IndexOfArg(_Model):
    """A dict from each word of a vocabulary to its index, as CS224n's `word2Ind`: `{index_of: [a, b]}`
    gives {'a': 0, 'b': 1}. A YAML anchor shares the list with a tokens argument (`vocab: &v [...]`)."""

    index_of: Vocabulary


MethodSpec = str | LiteralArg  # an integer input's entries, one per call; or the same value at every call


class SamplerObject(_Model):
    """An object whose methods draw, as CS224n's `dataset.sampleTokenIdx()`: a method that names an integer
    input of shape [M] returns that trial's next entry at each call (a Python int); `{value: ...}`, the
    same value at every call (`tokens()`). A fresh object each call and each rerun, so that a trial always
    sees the same draws; past its M draws a method raises an error that says so."""

    object: Literal["sampler"]
    methods: dict[str, MethodSpec] = Field(min_length=1)

    @field_validator("methods")
    @classmethod
    def _method_names(cls, methods: dict[str, MethodSpec]) -> dict[str, MethodSpec]:
        for name in methods:
            # A name starting with _ would shadow the object's own attributes (__class__, __repr__).
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"method name '{name}' is not an identifier that starts with a letter")
        return methods


def _object_kind(value: Any) -> str | None:
    kind = value.get("object") if isinstance(value, dict) else getattr(value, "object", None)
    return {"sampler": "SamplerObject"}.get(kind) if isinstance(kind, str) else None


OBJECT_KINDS = ("sampler",)
# Object kinds by their `object:` name; a new kind is a model here and a class in the worker.
ObjectArg = Annotated[
    Annotated[SamplerObject, Tag("SamplerObject")],
    Discriminator(
        _object_kind,
        custom_error_type="object_kind",
        custom_error_message=f"'object' names the kind of object: one of {', '.join(OBJECT_KINDS)}",
    ),
]

# Each kind of argument by the key that marks it, so that a mistake in one is reported as that kind's,
# not as a failure to be every kind at once.
_ARG_KEYS = {
    "value": "LiteralArg",
    "dict": "DictArg",
    "tokens": "TokensArg",
    "index_of": "IndexOfArg",
    "object": "ObjectArg",
}


def _arg_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "InputName"
    if isinstance(value, list | tuple):
        return "InputNames"
    if isinstance(value, dict):
        return next((tag for key, tag in _ARG_KEYS.items() if key in value), None)
    if isinstance(value, BaseModel):  # a model built in code (model_copy, tests)
        return "ObjectArg" if isinstance(value, SamplerObject) else type(value).__name__
    return None


_ARG_KINDS = (
    "an argument is an input's name, a list of names (a tuple), {value: LITERAL}, {dict: {...}}, "
    "{tokens: NAME, vocab: [...]}, {index_of: [...]} or {object: sampler, methods: {...}}"
)
Arg = Annotated[
    Annotated[str, Tag("InputName")]
    | Annotated[tuple[str, ...], Tag("InputNames")]
    | Annotated[LiteralArg, Tag("LiteralArg")]
    | Annotated[DictArg, Tag("DictArg")]
    | Annotated[TokensArg, Tag("TokensArg")]
    | Annotated[IndexOfArg, Tag("IndexOfArg")]
    | Annotated[ObjectArg, Tag("ObjectArg")],
    Discriminator(_arg_kind, custom_error_type="arg_kind", custom_error_message=_ARG_KINDS),
]


class CallSpec(_Model):
    """A call after the entry's, as CS231n's `layer_backward(dout, cache)` after `layer_forward`: its args
    may name what earlier calls bound (the student's own cache, passed on unseen), and `binds` names what
    it returns."""

    entry: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    args: tuple[Arg, ...]
    binds: tuple[str, ...] = Field(min_length=1)


class ExerciseSpec(_Model):
    id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    title: str
    description: str = ""
    entry: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    args: tuple[Arg, ...]
    # Names for what the entry returns, where later calls (`then`) take some of them: the graded returns
    # are then named among all the calls' binds, and the rest (a cache) is the student's, never compared.
    binds: tuple[str, ...] | None = None
    then: tuple[CallSpec, ...] = ()
    # A size is drawn from a range, fixed, or derived from the sizes before it ("L - K + 1").
    sizes: dict[str, SizeRange | int | str] = {}
    inputs: dict[str, InputSpec]
    # The expected values: a graph in the exercise's language, or (the escape hatch for what it cannot say)
    # `reference.py:function`, the instructor's torch code beside the spec, run in float64 like a graph.
    graph: str | None = None
    reference: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_./-]+\.py:[A-Za-z_][A-Za-z0-9_]*$")
    returns: tuple[ReturnSpec, ...] = Field(min_length=1)
    trials: int = Field(default=1000, ge=1)
    points: dict[str, float] = {}
    precision_credit: float = Field(default=0.5, ge=0, le=1)
    instability_credit: float = Field(default=0.0, ge=0, le=1)
    solution: str | None = "solution.py"
    starter: str | None = "starter.py"
    wrong: tuple[WrongSolution, ...] = ()
    misconceptions: tuple[Misconception, ...] = ()
    support: tuple[str, ...] = ()  # files or folders beside exercise.yaml that submissions may import
    limits: Limits = Limits()
    notebook: NotebookSpec = NotebookSpec()
    gradescope: GradescopeSpec = GradescopeSpec()

    @model_validator(mode="after")
    def _graph_or_reference(self) -> ExerciseSpec:
        if (self.graph is None) == (self.reference is None):
            raise ValueError(
                "give exactly one of graph (the computation in the exercise's language) and reference "
                "(reference.py:function, torch code for what the language cannot say)"
            )
        return self

    @property
    def reference_file(self) -> str | None:
        return None if self.reference is None else self.reference.rpartition(":")[0]

    @property
    def reference_function(self) -> str | None:
        return None if self.reference is None else self.reference.rpartition(":")[2]

    @field_validator("sizes")
    @classmethod
    def _size_names(cls, sizes: dict[str, SizeRange | int | str]) -> dict[str, SizeRange | int | str]:
        for name in sizes:
            if not name.isidentifier():
                raise ValueError(f"size name '{name}' is not an identifier")
        return sizes


@dataclass(frozen=True)
class Exercise:
    """A loaded, cross-checked exercise. `root` is its folder; paths in the spec are relative to it."""

    spec: ExerciseSpec
    root: Path
    program: Program

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
        return _computed(self.spec, self.program)

    def path_of(self, relative: str) -> Path:
        return self.root / relative


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
    lines = _line_index(node)
    if not isinstance(data, dict):
        raise SpecError(path, 1, "", f"expected a mapping of fields at the top, got {type(data).__name__}")
    try:
        spec = ExerciseSpec.model_validate(data)
    except ValidationError as exc:
        first = _first_error(exc.errors())
        location = tuple(first["loc"])
        raise SpecError(
            path,
            _line_for(lines, _clean_location(location)),
            _field_name(location),
            _describe(first, location),
        ) from None
    program = _cross_check(spec, path, lines, authoring)
    return Exercise(spec=spec, root=path.parent.resolve(), program=program)


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


@dataclass(frozen=True)
class _Where:
    """Turns a location in the YAML (a path of keys and indices) into a SpecError naming file and line."""

    path: Path
    lines: Mapping[tuple[Any, ...], int]

    def error(self, location: tuple[Any, ...], message: str) -> SpecError:
        return SpecError(self.path, _line_for(self.lines, location), _field_name(location), message)


def _cross_check(
    spec: ExerciseSpec, path: Path, lines: Mapping[tuple[Any, ...], int], authoring: bool
) -> Program:
    """What the models alone cannot check: names that refer to each other, the graph, the files."""
    where = _Where(path, lines)
    _check_sizes(spec, where)
    _check_inputs(spec, where)
    _check_args(spec, where)
    program = _parsed_graph(spec, where)
    returns = _check_returns(spec, program, where)
    _check_references_to_returns(spec, program, returns, where)
    _check_files(spec, where, authoring)
    return program


def _drawn_corners(spec: ExerciseSpec) -> list[dict[str, int]]:
    """The drawn (and fixed) sizes at every corner of their ranges."""
    drawn = {
        n: (s, s) if isinstance(s, int) else (s.min, s.max)
        for n, s in spec.sizes.items()
        if not isinstance(s, str)
    }
    return [dict(zip(drawn, ends, strict=True)) for ends in itertools.product(*drawn.values())]


def _check_sizes(spec: ExerciseSpec, where: _Where) -> None:
    """A derived size names only sizes drawn or derived before it, and is at least 1 at every corner of
    the drawn sizes' ranges (where a linear expression such as L - K + 1 takes its extremes)."""
    corners = _drawn_corners(spec)
    known = [n for n, s in spec.sizes.items() if not isinstance(s, str)]
    for name, size in spec.sizes.items():
        if not isinstance(size, str):
            continue
        try:
            size_expression_names(size, known)
            for corner in corners:
                corner[name] = evaluate_size_expression(size, corner)
        except GraphError as exc:
            message = f"{exc.message} (sizes before it: {_listing(known)})"
            raise where.error(("sizes", name), message) from None
        least = min(corner[name] for corner in corners)
        if least < 1:
            message = f"'{size}' is {least} at the extremes of the sizes it uses; a size must be at least 1"
            raise where.error(("sizes", name), message)
        known.append(name)


def _check_inputs(spec: ExerciseSpec, where: _Where) -> None:
    sizes = set(spec.sizes)
    for name, input_spec in spec.inputs.items():
        if not name.isidentifier():
            raise where.error(("inputs", name), f"input name '{name}' is not an identifier")
        for field in ("shape", "low", "high"):
            raw = getattr(input_spec, field)
            for i, item in enumerate(raw if field == "shape" else [raw]):
                if item is None or isinstance(item, float):
                    continue
                location = ("inputs", name, field, i) if field == "shape" else ("inputs", name, field)
                try:
                    size_expression_names(item, sizes)
                except GraphError as exc:
                    raise where.error(location, f"{exc.message} (sizes: {_listing(sizes)})") from None
        if name in sizes:
            raise where.error(("inputs", name), f"'{name}' is both a size and an input")
    for name, input_spec in spec.inputs.items():
        if input_spec.dist == "rejection":
            _check_rejection(spec, name, input_spec, where)


def _size_corners(spec: ExerciseSpec) -> list[dict[str, int]]:
    """The sizes at every corner of the drawn sizes' ranges, derived sizes included: where a bound or
    shape that is linear in them takes its extremes. Only after _check_sizes has passed."""
    corners = _drawn_corners(spec)
    for corner in corners:
        for name, size in spec.sizes.items():
            if isinstance(size, str):
                corner[name] = evaluate_size_expression(size, corner)
    return corners


def _integer_range(spec: InputSpec, sizes: Mapping[str, int]) -> tuple[int, int]:
    """An integer input's inclusive bounds at these sizes."""

    def end(bound: float | str | None) -> int:
        if bound is None or isinstance(bound, float | int):
            return int(bound or 0)
        return evaluate_size_expression(bound, sizes)

    return end(spec.low), end(spec.high)


def _integer_input(spec: ExerciseSpec, name: str, dims: int | None, what: str) -> str | None:
    """Why `name` cannot be `what` (an integer input with `dims` dimensions, any if None), or None."""
    found = spec.inputs.get(name)
    if found is None:
        return f"'{name}' is not an input (inputs: {_listing(spec.inputs)})"
    if not found.is_integer:
        return f"'{name}' is a dist {found.dist} input; {what} is an integer input (dist integer)"
    if dims is not None and len(found.shape) != dims:
        wanted = "shape []" if dims == 0 else f"a shape of {dims} dimension" + ("s" if dims > 1 else "")
        shape = ", ".join(str(d) for d in found.shape)
        return f"'{name}' has shape [{shape}]; {what} has {wanted}"
    return None


def _check_rejection(spec: ExerciseSpec, name: str, input_spec: InputSpec, where: _Where) -> None:
    """`of` is a drawn integer sequence with at least two values to draw from, long enough at every size to
    hold the count kept; `reject` an integer scalar."""
    assert input_spec.of is not None and input_spec.reject is not None  # the model guarantees them
    location = ("inputs", name)
    for field, other, dims, what in (
        ("of", input_spec.of, 1, "the sequence a rejection keeps entries of"),
        ("reject", input_spec.reject, 0, "the value a rejection skips"),
    ):
        problem = _integer_input(spec, other, dims, what)
        if problem is None and spec.inputs[other].dist == "rejection":
            problem = f"'{other}' is itself derived by rejection; {what} is drawn (dist integer)"
        if problem is not None:
            raise where.error((*location, field), f"{problem}: name one")
    source = spec.inputs[input_spec.of]
    for corner in _size_corners(spec):
        at = ", ".join(f"{k}={v}" for k, v in sorted(corner.items())) or "its fixed sizes"
        count = evaluate_size_expression(input_spec.shape[0], corner)
        length = evaluate_size_expression(source.shape[0], corner)
        low, high = _integer_range(source, corner)
        if count > length:
            message = (
                f"keeps {count} entries of '{input_spec.of}', which has only {length} at {at}: "
                f"make '{input_spec.of}' longer than the count kept (rejected draws need room)"
            )
            raise where.error((*location, "shape"), message)
        if high <= low:
            message = (
                f"'{input_spec.of}' draws from [{low}, {high}] at {at}: with one value, every draw may be "
                "the rejected one; give it at least two values"
            )
            raise where.error((*location, "of"), message)


def _check_args(spec: ExerciseSpec, where: _Where) -> None:
    """Every argument names an input or what an earlier call bound; binds are new names, and with them
    the graded returns are among them."""
    if spec.then and spec.binds is None:
        raise where.error(("then",), "later calls take what the entry returns: name it with binds")
    known = set(spec.inputs) | set(spec.sizes)  # a size is handed out as a Python int
    calls = [((), spec.args, spec.binds), *((("then", k), c.args, c.binds) for k, c in enumerate(spec.then))]
    bound: list[str] = []
    for at, args, binds in calls:
        for i, arg in enumerate(args):
            if isinstance(arg, LiteralArg | DictArg | IndexOfArg):
                continue  # a dict's strings that name inputs are those inputs, the rest literals
            if isinstance(arg, TokensArg):
                _check_tokens(spec, arg, where, (*at, "args", i))
                continue
            if isinstance(arg, SamplerObject):
                for method, source in arg.methods.items():
                    what = f"the draws of {method}()"
                    problem = None if not isinstance(source, str) else _integer_input(spec, source, 1, what)
                    if problem is not None:
                        message = f"{problem}: name one of shape [M], M the draws a trial allows"
                        raise where.error((*at, "args", i, "methods", method), message)
                continue
            for name in (arg,) if isinstance(arg, str) else arg:
                if name not in known:
                    listing = _listing(spec.inputs) + (f"; bound before: {_listing(bound)}" if bound else "")
                    message = f"argument '{name}' is neither an input nor a size (inputs: {listing})"
                    raise where.error((*at, "args", i), message)
        for name in binds or ():
            if name in known or name in spec.sizes:
                raise where.error((*at, "binds"), f"bind '{name}' is already an input, size or bind")
            known.add(name)
            bound.append(name)
    if spec.binds is not None:
        for k, ret in enumerate(spec.returns):
            if ret.name not in bound:
                message = f"return '{ret.name}' is not among the calls' binds ({_listing(bound)})"
                raise where.error(("returns", k, "name"), message)


def _check_tokens(spec: ExerciseSpec, arg: TokensArg, where: _Where, location: tuple[Any, ...]) -> None:
    """The input is an integer one whose every value is an index into the vocabulary, at every size."""
    problem = _integer_input(spec, arg.tokens, None, "a tokens argument")
    if problem is not None:
        raise where.error((*location, "tokens"), f"{problem}: name one whose values index the vocabulary")
    source = spec.inputs[arg.tokens]
    if source.dist == "rejection":
        assert source.of is not None  # the model guarantees it
        source = spec.inputs[source.of]  # its values are some of those
    for corner in _size_corners(spec):
        low, high = _integer_range(source, corner)
        if low < 0 or high >= len(arg.vocab):
            message = (
                f"'{arg.tokens}' draws from [{low}, {high}], but the vocabulary's indices are 0 to "
                f"{len(arg.vocab) - 1}: give it low 0 and high at most {len(arg.vocab) - 1}, or more words"
            )
            raise where.error((*location, "tokens"), message)


def _parsed_graph(spec: ExerciseSpec, where: _Where) -> Program:
    if spec.graph is None:  # the reference's function computes the values, when it runs
        return Program(())
    graph_line = where.lines.get(("graph",), 1)
    block_offset = graph_line if _is_block_scalar(where.path, graph_line) else graph_line - 1
    try:
        return parse(spec.graph, [*spec.inputs, *spec.sizes])
    except GraphError as exc:
        raise SpecError(where.path, block_offset + exc.line, "graph", exc.message) from None


def _check_returns(spec: ExerciseSpec, program: Program, where: _Where) -> set[str]:
    """Each return names what the graph computes; the names of the returns."""
    defined = set(_computed(spec, program))
    float_inputs = {n for n, s in spec.inputs.items() if not s.is_integer}
    names_seen: set[str] = set()
    for i, ret in enumerate(spec.returns):
        if ret.name in names_seen:
            raise where.error(("returns", i, "name"), f"return name '{ret.name}' is used twice")
        names_seen.add(ret.name)
        if ret.value is not None and ret.value not in defined | float_inputs:
            message = f"'{ret.value}' is not computed by the graph ({_listing(defined)})"
            raise where.error(("returns", i, "value"), message)
        target = ret.grad or ret.vjp
        if target is None:
            continue
        kind = "grad" if ret.grad is not None else "vjp"
        if target.of not in defined:
            message = f"'{target.of}' is not computed by the graph ({_listing(defined)})"
            raise where.error(("returns", i, kind, "of"), message)
        if target.wrt not in float_inputs:
            message = f"'{target.wrt}' is not a float input; gradients exist w.r.t. {_listing(float_inputs)}"
            raise where.error(("returns", i, kind, "wrt"), message)
        if isinstance(target, VjpSpec) and target.upstream not in float_inputs:
            message = f"'{target.upstream}' is not a float input to use as the upstream gradient"
            raise where.error(("returns", i, kind, "upstream"), message)
    return names_seen


def _check_references_to_returns(
    spec: ExerciseSpec, program: Program, returns: set[str], where: _Where
) -> None:
    """Points, known-wrong files and misconceptions name returns; misconceptions parse as graph code."""

    def unknown(name: str) -> str:
        return f"'{name}' is not a return ({_listing(returns)})"

    for name in spec.points:
        if name not in returns:
            raise where.error(("points", name), unknown(name))
    for i, wrong in enumerate(spec.wrong):
        for field in ("expect", "misconceptions"):
            for name in getattr(wrong, field):
                if name not in returns:
                    raise where.error(("wrong", i, field, name), unknown(name))
    known = [*spec.inputs, *spec.sizes, *_computed(spec, program)]
    for i, misconception in enumerate(spec.misconceptions):
        if misconception.return_ not in returns:
            raise where.error(("misconceptions", i, "return"), unknown(misconception.return_))
        for k, expr in enumerate(misconception.expr):
            try:
                parse(f"{MISCONCEPTION} = {expr}", known)
            except GraphError as exc:
                location: tuple[str | int, ...] = ("misconceptions", i, "expr")
                if len(misconception.expr) > 1:
                    location = (*location, k)
                raise where.error(location, f"{exc.message} (an expression over the graph's names)") from None


def _computed(spec: ExerciseSpec, program: Program) -> tuple[str, ...]:
    """The names the exercise computes: its graph's, or those its returns take from the reference's
    function (which says what it computes only when it runs: reference.py checks them then)."""
    if spec.graph is not None:
        return program.defined
    named = [ret.value if ret.value is not None else (ret.grad or ret.vjp).of for ret in spec.returns]  # type: ignore[union-attr]
    # Names the program assigns are computed from the function's values, not by it: a declared
    # misconception's expression (`out * p`), evaluated over what the function returned.
    return tuple(dict.fromkeys(n for n in named if n not in spec.inputs and n not in program.defined))


def _check_files(spec: ExerciseSpec, where: _Where, authoring: bool) -> None:
    """The files the spec names exist beside it (the author's only when `authoring`); support files stay
    inside the exercise's folder."""
    folder = where.path.parent
    for field in ("solution", "starter") if authoring else ():
        relative = getattr(spec, field)
        if relative is not None and not (folder / relative).is_file():
            raise where.error((field,), f"file '{relative}' does not exist beside {where.path.name}")
    for i, wrong in enumerate(spec.wrong if authoring else ()):
        if not (folder / wrong.file).is_file():
            raise where.error(
                ("wrong", i, "file"), f"file '{wrong.file}' does not exist beside {where.path.name}"
            )
    if spec.reference_file is not None:  # grading needs it too: it computes the expected values
        reference = (folder / spec.reference_file).resolve()
        if not reference.is_relative_to(folder.resolve()):
            raise where.error(("reference",), f"'{spec.reference_file}' is not inside the exercise's folder")
        if not reference.is_file():
            message = f"file '{spec.reference_file}' does not exist beside {where.path.name}"
            raise where.error(("reference",), message)
    support_names: set[str] = set()
    for i, relative in enumerate(spec.support):
        support = (folder / relative).resolve()
        if not _may_support(support, folder.resolve()):
            message = (
                f"'{relative}' is neither inside the exercise's folder nor in a shared folder beside it "
                "whose name starts with _ (such as ../_support/utils, shared by an assignment's exercises)"
            )
            raise where.error(("support", i), message)
        if not (support.is_dir() or (support.is_file() and support.suffix == ".py")):
            message = f"'{relative}' is neither a .py file nor a folder beside {where.path.name}"
            raise where.error(("support", i), message)
        if support.name in support_names:
            raise where.error(("support", i), f"two support entries are named '{support.name}'")
        support_names.add(support.name)


def _may_support(support: Path, folder: Path) -> bool:
    """Inside the exercise's folder, or in a `_` folder beside it (`../_support/utils`, the course's
    helpers that an assignment's exercises share; discovery never takes it for an exercise). Never a
    sibling exercise's folder: its solution would be importable by the submission."""
    if support.is_relative_to(folder):
        return support != folder
    shared = support.relative_to(folder.parent).parts if support.is_relative_to(folder.parent) else ()
    return len(shared) >= 2 and shared[0].startswith("_")


def _is_block_scalar(path: Path, line: int) -> bool:
    try:
        text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    except IndexError:
        return False
    return text.rstrip().endswith(("|", "|-", "|+", ">", ">-"))


def _listing(names: Iterable[str]) -> str:
    items = sorted(names)
    return ", ".join(items) if items else "none"


def _line_index(node: yaml.Node | None) -> dict[tuple[Any, ...], int]:
    """Map each path of keys/indices in the YAML document to its 1-based line."""
    lines: dict[tuple[Any, ...], int] = {}

    def walk(n: yaml.Node, path: tuple[Any, ...]) -> None:
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for key, value in n.value:
                child = (*path, key.value)
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, (*path, i))

    if node is not None:
        walk(node, ())
    return lines


def _line_for(lines: Mapping[tuple[Any, ...], int], location: tuple[Any, ...]) -> int | None:
    for end in range(len(location), -1, -1):
        line = lines.get(tuple(location[:end]))
        if line is not None:
            return line
    return None


_UNION_TAGS = {
    "int",
    "str",
    "float",
    "bool",
    "SizeRange",
    "tuple[str, ...]",
    *_ARG_KEYS.values(),
    "InputName",
    "InputNames",
    "SamplerObject",
}


def _clean_location(location: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-member tags so locations read like the YAML."""
    return tuple(p for p in location if not (isinstance(p, str) and (p in _UNION_TAGS or "[" in p)))


def _field_name(location: tuple[Any, ...]) -> str:
    text = ""
    for part in _clean_location(location):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _first_error(errors: list[Any]) -> Any:
    """The error to report: pydantic lists a required field's absence before the unknown field beside it,
    but a misspelt `retuns:` is both, and its own line and spelling are what the author must see."""
    first = errors[0]
    if first["type"] != "missing":
        return first
    parent = _clean_location(tuple(first["loc"]))[:-1]
    for error in errors:
        if error["type"] == "extra_forbidden" and _clean_location(tuple(error["loc"]))[:-1] == parent:
            return error
    return first


def _describe(error: Any, location: tuple[Any, ...]) -> str:
    kind = error["type"]
    message = str(error["msg"]).removeprefix("Value error, ")
    clean = _clean_location(location)
    if kind == "extra_forbidden":
        known = _model_at(clean[:-1])
        fields = [info.alias or name for name, info in (known.model_fields if known else {}).items()]
        close = difflib.get_close_matches(str(clean[-1]), fields, n=1)
        if close:
            return f"'{clean[-1]}' is not a field: did you mean '{close[0]}'?"
        listing = f"; known fields: {', '.join(fields)}" if fields else ""
        return f"unknown field '{clean[-1]}'{listing}"
    if kind == "missing":
        return f"required field '{clean[-1]}' is missing"
    value = error.get("input")
    if kind == "literal_error" and isinstance(value, str):
        allowed = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        close = difflib.get_close_matches(value, allowed, n=1)
        if close:
            return f"{message} (got {value!r}): did you mean '{close[0]}'?"
    if kind == "object_kind" and isinstance(value, dict):
        return f"{message} (got {value.get('object')!r})"
    if value is not None and not isinstance(value, dict | list):
        return f"{message} (got {value!r})"
    return message


def _model_at(location: tuple[Any, ...]) -> type[BaseModel] | None:
    shape = tuple("#" if isinstance(p, int) else p for p in location)
    models: dict[tuple[Any, ...], type[BaseModel]] = {
        (): ExerciseSpec,
        ("limits",): Limits,
        ("notebook",): NotebookSpec,
        ("gradescope",): GradescopeSpec,
        ("returns", "#"): ReturnSpec,
        ("returns", "#", "grad"): GradSpec,
        ("returns", "#", "vjp"): VjpSpec,
        ("wrong", "#"): WrongSolution,
        ("misconceptions", "#"): Misconception,
    }
    if len(shape) == 2 and shape[0] in ("inputs", "sizes"):
        return InputSpec if shape[0] == "inputs" else SizeRange
    return models.get(shape)
