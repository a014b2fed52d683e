"""What the models alone cannot check: sizes, inputs and arguments that name each other, the graph and
the returns it must define, misconceptions, and the files the spec names.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.errors import SpecError
from grader.exercise.graph import GraphError, Program, evaluate_size_expression, parse, size_expression_names
from grader.exercise.spec.exercise import computed_names
from grader.exercise.spec.locations import field_name, line_for
from grader.exercise.spec.models import (
    MISCONCEPTION,
    DictArg,
    ExerciseSpec,
    IndexOfArg,
    InputSpec,
    LiteralArg,
    SamplerObject,
    TokensArg,
    VjpSpec,
)


@dataclass(frozen=True)
class _Where:
    """Turns a location in the YAML (a path of keys and indices) into a SpecError naming file and line."""

    path: Path
    lines: Mapping[tuple[Any, ...], int]

    def error(self, location: tuple[Any, ...], message: str) -> SpecError:
        return SpecError(self.path, line_for(self.lines, location), field_name(location), message)


def cross_check(
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
    _check_conventions(spec, program, where)
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
    defined = set(computed_names(spec, program))
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
    known = [*spec.inputs, *spec.sizes, *computed_names(spec, program)]
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


def _check_conventions(spec: ExerciseSpec, program: Program, where: _Where) -> None:
    """Each convention has its own name; its graph lines parse and replace lines of the graph (whose order
    they keep: a line reads only what the graph computed before it); its reference is a function of the
    exercise's reference file."""
    names: set[str] = set()
    base = [*spec.inputs, *spec.sizes]
    for i, convention in enumerate(spec.conventions):
        if convention.name in names:
            message = f"two conventions are named '{convention.name}': each is told by its name"
            raise where.error(("conventions", i, "name"), message)
        names.add(convention.name)
        if convention.reference is not None and spec.reference_file is None:
            message = (
                "this exercise has a graph, not a reference function: give the convention's computation as "
                "graph lines replacing the graph's of the same names"
            )
            raise where.error(("conventions", i, "reference"), message)
        file, _, function = (convention.reference or "").rpartition(":")
        if convention.reference is not None and file != spec.reference_file:
            message = (
                f"'{convention.reference}' is not in the exercise's reference file: name a function of "
                f"{spec.reference_file}, as {spec.reference_file}:{function}"
            )
            raise where.error(("conventions", i, "reference"), message)
        if convention.graph is None:
            continue
        location = ("conventions", i, "graph")
        line = where.lines.get(location, 1)
        offset = line if _is_block_scalar(where.path, line) else line - 1
        known = [*base, *computed_names(spec, program)]
        try:
            lines = parse(convention.graph, known)
        except GraphError as exc:
            message = f"{exc.message} (graph lines over the graph's names)"
            raise SpecError(where.path, offset + exc.line, field_name(location), message) from None
        if spec.graph is None:
            continue  # computed after the reference function's values: every name it returned is known
        for assignment in lines.assignments:
            if assignment.target not in program.defined:
                message = (
                    f"'{assignment.target}' is not a line of the graph (it assigns "
                    f"{_listing(program.defined)}): a convention's lines replace the graph's of those names"
                )
                raise SpecError(where.path, offset + assignment.line, field_name(location), message)
        variant = program.with_lines(lines)
        try:
            parse(_source(variant), base)
        except GraphError as exc:
            culprit = variant.assignments[exc.line - 1]
            at = offset + culprit.line if culprit in lines.assignments else line
            message = (
                f"in place of the graph's line, {exc.message}: a convention's line reads only what the graph "
                "computes before the line it replaces"
            )
            raise SpecError(where.path, at, field_name(location), message) from None


def _source(program: Program) -> str:
    return "\n".join(f"{a.target} = {ast.unparse(a.expr)}" for a in program.assignments)


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
