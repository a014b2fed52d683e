"""The YAML's shape: pydantic models of `exercise.yaml`, each field checked as it is read.

What the models alone cannot check (names that refer to each other, the graph, the files) is checks.py's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

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
    # The shape rule is one for every return (grader/judging/shapes.py): axes of length 1 added or dropped
    # are graded, with a note. `loose` is what that rule was called when a return had to ask for it: still
    # read, changing nothing; `strict` is refused (no return may differ).
    shape: Literal["loose"] | None = None
    visibility: Visibility | None = None  # on Gradescope; None: the exercise's `gradescope.visibility`

    @field_validator("shape", mode="before")
    @classmethod
    def _one_shape_rule(cls, value: object) -> object:
        if value == "strict":
            raise ValueError(
                "shape 'strict' is no more: every return is graded by the same shape rule (axes of length 1 "
                "added or dropped are accepted, with a note; grader/judging/shapes.py). Remove `shape:`"
            )
        return value

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

    `definitions` (the default) keeps only the imports, functions, classes and constants of each cell, for
    notebooks full of try-out calls, downloads, plots and scratch; `all` runs every code cell at import, as
    Jupyter would, a cell that fails outside its definitions skipped with a note on the result; `tagged`
    keeps only the code cells whose metadata tags hold `tag` ("grade" by default), whole.
    """

    cells: notebooks.Cells = "definitions"
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


class HandinSpec(_Model):
    """Which file of a student's folder is graded (grader/handin/choice.py has the rule). `file` pins it:
    `layers.py` is that path in the folder, or the one file of that name in a sub-folder; without it, of
    the files that define the entry, the one named after the exercise, then a notebook, then the first
    alphabetically."""

    file: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(py|ipynb)$")

    @field_validator("file")
    @classmethod
    def _inside(cls, file: str | None) -> str | None:
        if file is not None and ".." in file.split("/"):
            raise ValueError(f"'{file}' leaves the hand-in's folder: give a path inside it, as layers.py")
        return file


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


class Convention(_Model):
    """Another course year's convention, which the exercise grades wrong but names: a student whose values
    are those the graph gives under it is told "right under the <name> convention (<rule>)". What changes is
    the computation, so every return it changes follows: `graph` lines that replace the graph's lines of the
    same names (in place: what the graph computes from them follows; for an exercise with a reference
    function, lines computed after its values), or `reference`, another function of its reference file."""

    name: str = Field(min_length=1, max_length=100)  # whose: "2016-17 CS231n"
    rule: str = Field(min_length=1, max_length=200)  # what it says: "p is the probability to DROP a unit"
    graph: str | None = None
    reference: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_./-]+\.py:[A-Za-z_][A-Za-z0-9_]*$")
    feedback: str = ""  # how this course's convention differs, and the fix

    @model_validator(mode="after")
    def _changes_something(self) -> Convention:
        if self.graph is None and self.reference is None:
            raise ValueError(
                "give graph (lines replacing the graph's of the same names, as that year computes them) or "
                "reference (reference.py:function, the reference function under that convention)"
            )
        return self

    @property
    def label(self) -> str:
        """The name a return it matches gets (what a known-wrong file's `misconceptions:` starts with)."""
        return f"right under the {self.name} convention ({self.rule})"

    @property
    def reference_function(self) -> str | None:
        return None if self.reference is None else self.reference.rpartition(":")[2]


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
ARG_KEYS = {
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
        return next((tag for key, tag in ARG_KEYS.items() if key in value), None)
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
    # Other course years' conventions: graded wrong, named as such (tried before any other mistake)
    conventions: tuple[Convention, ...] = ()
    support: tuple[str, ...] = ()  # files or folders beside exercise.yaml that submissions may import
    limits: Limits = Limits()
    notebook: NotebookSpec = NotebookSpec()
    handin: HandinSpec = HandinSpec()
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
