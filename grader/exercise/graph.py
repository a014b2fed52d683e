"""The exercise's graph language: Python syntax, checked against an allow-list, evaluated over torch.

A graph is a sequence of assignments (`u = W @ x + b`). Only the node types and functions listed here
are accepted; nothing is ever handed to `eval`, so a spec cannot run arbitrary Python.
"""

from __future__ import annotations

import ast
import difflib
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

Value = Any  # a torch.Tensor, or a Python int/float (sizes and constants)


class GraphError(Exception):
    """A graph that does not parse or uses something outside the language; `line` is 1-based in the graph."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Assignment:
    target: str
    expr: ast.expr
    line: int


@dataclass(frozen=True)
class Program:
    assignments: tuple[Assignment, ...]

    @property
    def defined(self) -> tuple[str, ...]:
        return tuple(a.target for a in self.assignments)

    def with_lines(self, lines: Program) -> Program:
        """This program with each of `lines` in place of its assignment of the same name (what is computed
        from it follows), and the lines it has no assignment of appended."""
        by_target = {line.target: line for line in lines.assignments}
        kept = tuple(by_target.pop(a.target, a) for a in self.assignments)
        return Program(kept + tuple(line for line in lines.assignments if line.target in by_target))


@dataclass(frozen=True)
class Signature:
    keywords: frozenset[str] = frozenset()
    doc: str = ""
    positional: tuple[int, int | None] = (1, 1)  # how many positional arguments: at least, at most


def _sig(*keywords: str, doc: str = "", positional: tuple[int, int | None] = (1, 1)) -> Signature:
    return Signature(frozenset(keywords), doc, positional)


_REDUCTION = ("dim", "keepdim")
_UNARY_FUNCTIONS = "exp log log1p expm1 sqrt square abs sin cos sigmoid tanh relu softplus arange zeros_like"
_BINARY_FUNCTIONS = "matmul outer dot pow maximum minimum"
FUNCTIONS: Mapping[str, Signature] = {
    "sum": _sig(*_REDUCTION, doc="sum(x, dim=None, keepdim=False)"),
    "mean": _sig(*_REDUCTION, doc="mean(x, dim=None, keepdim=False)"),
    "max": _sig(*_REDUCTION, doc="max(x, dim=None, keepdim=False), a reduction; elementwise: maximum(a, b)"),
    "min": _sig(*_REDUCTION, doc="min(x, dim=None, keepdim=False), a reduction; elementwise: minimum(a, b)"),
    **{name: _sig(doc=f"{name}(x)") for name in (*_UNARY_FUNCTIONS.split(), "ones_like")},
    **{name: _sig(doc=f"{name}(a, b)", positional=(2, 2)) for name in _BINARY_FUNCTIONS.split()},
    # x's value through which no gradient flows: an author's misconception, or a mistake family, that
    # treats an intermediate as a constant (a backward pass that forgets a path of the graph)
    "detach": _sig(doc="detach(x)"),
    "softmax": _sig("dim", doc="softmax(x, dim=-1)"),
    "log_softmax": _sig("dim", doc="log_softmax(x, dim=-1)"),
    "logsumexp": _sig("dim", "keepdim", doc="logsumexp(x, dim=-1, keepdim=False)"),
    "transpose": _sig(doc="transpose(x, dim0=-2, dim1=-1)", positional=(1, 3)),
    "reshape": _sig(doc="reshape(x, shape): reshape(x, (N, 1)) or reshape(x, N, 1)", positional=(2, None)),
    "where": _sig(doc="where(condition, a, b)", positional=(3, 3)),
    "clamp": _sig("min", "max", doc="clamp(x, min=None, max=None)"),
    "one_hot": _sig(doc="one_hot(labels, classes): float64 rows, one_hot(y, C)", positional=(2, 2)),
    "var": _sig(
        *_REDUCTION, "unbiased", doc="var(x, dim=None, keepdim=False, unbiased=False): biased by default"
    ),
    "std": _sig(
        *_REDUCTION, "unbiased", doc="std(x, dim=None, keepdim=False, unbiased=False): biased by default"
    ),
    "cumsum": _sig("dim", doc="cumsum(x, dim=0)"),
    "permute": _sig(
        doc="permute(x, dims): permute(x, (0, 2, 1)) or permute(x, 0, 2, 1)", positional=(2, None)
    ),
    "conv1d": _sig(
        "b",
        "stride",
        "padding",
        doc="conv1d(x, w, b=None, stride=1, padding=0): x (N, C, L), w (F, C, K), b (F,); a "
        "cross-correlation as F.conv1d's, out (N, F, (L + 2 * padding - K) // stride + 1)",
        positional=(2, 5),
    ),
    "conv2d": _sig(
        "b",
        "stride",
        "padding",
        doc="conv2d(x, w, b=None, stride=1, padding=0): x (N, C, H, W), w (F, C, HH, WW), b (F,); stride and "
        "padding an int or a pair (rows, columns); a cross-correlation as F.conv2d's",
        positional=(2, 5),
    ),
    **{
        f"{kind}_pool{d}d": _sig(
            "stride",
            doc=f"{kind}_pool{d}d(x, kernel, stride=None): x (N, C, {'L' if d == 1 else 'H, W'}), kernel "
            f"{'an int' if d == 1 else 'an int or a pair'}, stride the kernel's unless given; no padding",
            positional=(2, 3),
        )
        for kind in ("max", "avg")
        for d in (1, 2)
    },
    "einsum": _sig(
        doc="einsum(equation, a, b, ...): the equation a string constant, einsum('nij,njk->nik', a, b)",
        positional=(2, None),
    ),
    "gather": _sig(
        doc="gather(x, dim, index): index an integer tensor; out[i][j] = x[index[i][j]][j] for dim=0",
        positional=(3, 3),
    ),
    "index_select": _sig(
        doc="index_select(x, dim, index): the slices of x along dim at an integer vector index",
        positional=(3, 3),
    ),
    "embedding": _sig(
        doc="embedding(index, weight): rows of weight (V, D) picked by an integer tensor index of any shape, "
        "out index.shape + (D,); repeated indices add up in weight's gradient",
        positional=(2, 2),
    ),
    "layer_norm": _sig(
        "dims",
        "eps",
        doc="layer_norm(x, dims=1, eps=1e-5): (x - mean) / sqrt(var + eps) over the last `dims` axes, var "
        "biased (dividing by their size); no gamma or beta: write gamma * layer_norm(x) + beta",
        positional=(1, 2),
    ),
}

# Characters of an einsum equation: subscripts, the operands' commas, the arrow and the ellipsis.
_EINSUM_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,.-> ")


# Functions added after graphs used their names for values (batch normalisation's `var = mean(xc * xc)`):
# a graph may still assign them, and a call still means the function.
_NAMES_TOO = frozenset({"var", "std"})


@cache
def _implementations() -> Mapping[str, Callable[..., Value]]:
    # torch is imported here, not at module level: loading a spec must stay fast, since the grader starts
    # the sandboxed worker (which imports torch itself) before it evaluates anything.
    import torch
    import torch.nn.functional as F

    def reduce(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def reduced(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
            if dim is None:
                return fn(x, dim=tuple(range(x.dim())), keepdim=keepdim) if x.dim() else x
            return fn(x, dim=dim, keepdim=keepdim)

        return reduced

    def spread(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def spread_of(x: torch.Tensor, dim: Any = None, keepdim: bool = False, unbiased: bool = False) -> Any:
            dims = tuple(range(x.dim())) if dim is None else dim
            return fn(x, dim=dims, keepdim=keepdim, correction=1 if unbiased else 0)

        return spread_of

    def like(x: Value, other: Value) -> Value:
        if isinstance(x, torch.Tensor) or not isinstance(other, torch.Tensor):
            return x
        return torch.as_tensor(x, dtype=other.dtype)

    def as_index(index: Value, function: str) -> torch.Tensor:
        if isinstance(index, torch.Tensor) and index.is_floating_point():
            raise TypeError(
                f"{function}()'s index is a {str(index.dtype).removeprefix('torch.')} tensor, but indices "
                "must be integers: an input with dist: integer, arange(n), or a tuple of ints"
            )
        return torch.as_tensor(index, dtype=torch.int64)

    def layer_norm(x: torch.Tensor, dims: int = 1, eps: Value = 1e-5) -> torch.Tensor:
        if not isinstance(dims, int) or not 1 <= dims <= x.dim():
            raise ValueError(
                f"layer_norm(x, dims={dims!r}): dims counts the last axes to normalise over, from 1 to "
                f"x's {x.dim()} axes"
            )
        # Written out rather than F.layer_norm: the Monte Carlo rounding then perturbs the mean, the
        # centring and the variance one by one, as a student's float32 (x - mu) / sqrt(var + eps) rounds
        # them; native_layer_norm would be one opaque result, its cancellation x - mu unseen.
        axes = tuple(range(-dims, 0))
        centred = x - x.mean(dim=axes, keepdim=True)
        variance = (centred * centred).mean(dim=axes, keepdim=True)
        return centred / torch.sqrt(variance + eps)

    table: dict[str, Callable[..., Value]] = {
        "sum": reduce(torch.sum),
        "mean": reduce(torch.mean),
        "max": reduce(torch.amax),
        "min": reduce(torch.amin),
        # exact in float64 (F.softplus returns x itself above 20, off by up to 2e-9 there)
        "softplus": lambda x: torch.logaddexp(x, torch.zeros_like(x)),
        "softmax": lambda x, dim=-1: torch.softmax(x, dim=dim),
        "log_softmax": lambda x, dim=-1: torch.log_softmax(x, dim=dim),
        "logsumexp": lambda x, dim=-1, keepdim=False: torch.logsumexp(x, dim=dim, keepdim=keepdim),
        "transpose": lambda x, dim0=-2, dim1=-1: x.transpose(dim0, dim1),
        "reshape": lambda x, *shape: x.reshape(*shape),
        "where": lambda cond, a, b: torch.where(cond, like(a, b), like(b, a)),
        "clamp": lambda x, min=None, max=None: torch.clamp(x, min=min, max=max),
        "maximum": lambda a, b: torch.maximum(a, like(b, a)),
        "minimum": lambda a, b: torch.minimum(a, like(b, a)),
        "arange": lambda n: torch.arange(n),
        "one_hot": lambda labels, classes: F.one_hot(labels.long(), classes).to(torch.float64),
        # biased by default, as batch normalisation and np.var; unbiased=True divides by n - 1
        "var": spread(torch.var),
        "std": spread(torch.std),
        "cumsum": lambda x, dim=0: torch.cumsum(x, dim=dim),
        "permute": lambda x, *dims: x.permute(*dims),
        "conv1d": lambda x, w, b=None, stride=1, padding=0: F.conv1d(x, w, b, stride=stride, padding=padding),
        "conv2d": lambda x, w, b=None, stride=1, padding=0: F.conv2d(x, w, b, stride=stride, padding=padding),
        "max_pool1d": lambda x, kernel, stride=None: F.max_pool1d(x, kernel, stride),
        "max_pool2d": lambda x, kernel, stride=None: F.max_pool2d(x, kernel, stride),
        "avg_pool1d": lambda x, kernel, stride=None: F.avg_pool1d(x, kernel, stride),
        "avg_pool2d": lambda x, kernel, stride=None: F.avg_pool2d(x, kernel, stride),
        "einsum": lambda equation, *operands: torch.einsum(equation, *operands),
        "gather": lambda x, dim, index: torch.gather(x, dim, as_index(index, "gather")),
        "index_select": lambda x, dim, index: torch.index_select(x, dim, as_index(index, "index_select")),
        "embedding": lambda index, weight: F.embedding(as_index(index, "embedding"), weight),
        "layer_norm": layer_norm,
    }
    for name in FUNCTIONS:
        if name not in table:
            table[name] = getattr(torch, name)
    # The mistake families' operations (a backward written by hand, with its slip): never parsed from a
    # spec, since FUNCTIONS does not list them; only a changed copy of a graph calls them.
    from grader.exercise.backward_ops import INTERNAL

    table.update(INTERNAL)
    return table


def _transpose_last(x: Any) -> Any:
    return x if x.dim() < 2 else x.transpose(-2, -1)


_BINARY: Mapping[type[ast.operator], Callable[[Value, Value], Value]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: Mapping[type[ast.unaryop], Callable[[Value], Value]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_COMPARE: Mapping[type[ast.cmpop], Callable[[Value, Value], Value]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ATTRIBUTES = {"T"}


def parse(source: str, known: Iterable[str]) -> Program:
    """Parse and check a graph; `known` are the names it may read before assigning (inputs and sizes)."""
    try:
        module = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise GraphError(exc.lineno or 1, f"not valid Python syntax: {exc.msg}") from None
    names = set(known)
    assignments = []
    for statement in module.body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            raise GraphError(
                statement.lineno,
                "each line must be one assignment `name = expression` "
                f"(found {type(statement).__name__.lower()})",
            )
        target = statement.targets[0].id
        if target in FUNCTIONS and target not in _NAMES_TOO:
            raise GraphError(statement.lineno, f"'{target}' is a function of the language; pick another name")
        _check(statement.value, names)
        names.add(target)
        assignments.append(Assignment(target, statement.value, statement.lineno))
    if not assignments:
        raise GraphError(1, "the graph is empty: write at least one assignment, such as `f = sum(x)`")
    return Program(tuple(assignments))


def _check(node: ast.AST, names: set[str]) -> None:
    line = getattr(node, "lineno", 1)
    match node:
        case ast.Constant(value=value):
            if not isinstance(value, int | float):  # bool is an int: keepdim=True
                where = " (a string only as einsum's equation)" if isinstance(value, str) else ""
                raise GraphError(
                    line, f"only numeric constants and True/False are allowed{where}, not {value!r}"
                )
        case ast.Name(id=name):
            if name not in names:
                hint = " (functions must be called)" if name in FUNCTIONS else _did_you_mean(name, names)
                raise GraphError(line, f"'{name}' is not defined: not an input, size or earlier result{hint}")
        case ast.BinOp(left=left, op=op, right=right):
            if type(op) not in _BINARY:
                raise GraphError(line, f"operator {type(op).__name__} is not allowed")
            _check(left, names)
            _check(right, names)
        case ast.UnaryOp(op=op, operand=operand):
            if type(op) not in _UNARY:
                raise GraphError(line, f"operator {type(op).__name__} is not allowed")
            _check(operand, names)
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            if len(ops) != 1 or type(ops[0]) not in _COMPARE:
                raise GraphError(line, "only single comparisons (a < b) are allowed")
            _check(left, names)
            _check(comparators[0], names)
        case ast.Attribute(value=value, attr=attr):
            if attr not in _ATTRIBUTES:
                raise GraphError(line, f"attribute .{attr} is not allowed (only .T)")
            _check(value, names)
        case ast.Subscript(value=value, slice=index):
            _check(value, names)
            _check_index(index, names)
        case ast.Tuple(elts=elements):
            for element in elements:
                _check(element, names)
        case ast.Call(func=func, args=args, keywords=keywords):
            if not isinstance(func, ast.Name) or func.id not in FUNCTIONS:
                shown = ast.unparse(func)
                suggestion = _did_you_mean(shown, FUNCTIONS)
                listing = f"allowed: {', '.join(sorted(FUNCTIONS))}"
                raise GraphError(line, f"'{shown}' is not an allowed function{suggestion}; {listing}")
            allowed = FUNCTIONS[func.id].keywords
            for keyword in keywords:
                if keyword.arg is None or keyword.arg not in allowed:
                    raise GraphError(
                        line,
                        f"{func.id}() takes no keyword '{keyword.arg}'"
                        + (f"; it takes {', '.join(sorted(allowed))}" if allowed else ""),
                    )
                _check(keyword.value, names)
            least, most = FUNCTIONS[func.id].positional
            if len(args) < least or (most is not None and len(args) > most):
                wanted = f"{least}" if least == most else f"{least}-{most}" if most else f"at least {least}"
                usage, given = FUNCTIONS[func.id].doc, len(args)
                raise GraphError(line, f"{func.id}() takes {wanted} arguments, not {given}: {usage}")
            if any(isinstance(arg, ast.Starred) for arg in args):
                raise GraphError(line, "*args is not allowed")
            if func.id == "einsum":
                _check_einsum(args[0], len(args) - 1, line)
                args = args[1:]
            for arg in args:
                _check(arg, names)
        case _:
            raise GraphError(line, f"{type(node).__name__} expressions are not part of the graph language")


def _check_einsum(equation: ast.expr, operands: int, line: int) -> None:
    example = "such as einsum('ij,jk->ik', a, b)"
    if not (isinstance(equation, ast.Constant) and isinstance(equation.value, str)):
        raise GraphError(
            line,
            f"einsum()'s first argument must be its equation as a string constant, not "
            f"`{ast.unparse(equation)}`: {example}",
        )
    text = equation.value
    odd = sorted(set(text) - _EINSUM_CHARACTERS)
    inputs, _, output = text.partition("->")
    if odd or any(c in part for c in "->" for part in (inputs, output)):
        found = f" ({', '.join(map(repr, odd))} not allowed)" if odd else ""
        raise GraphError(
            line,
            f"einsum equation {text!r} is not one{found}: letters for the axes, a comma between operands, "
            f"at most one '->' before the output's letters, '...' for the remaining axes; {example}",
        )
    if any(part.replace("...", "").count(".") for part in (inputs, output)):
        raise GraphError(line, f"einsum equation {text!r}: a '.' must be part of an ellipsis '...'")
    terms = inputs.count(",") + 1
    if terms != operands:
        raise GraphError(
            line,
            f"einsum equation {text!r} names {terms} operand{'s' * (terms != 1)}, but {operands} "
            f"{'is' if operands == 1 else 'are'} given; give one tensor per comma-separated term",
        )


def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_index(node: ast.AST, names: set[str]) -> None:
    match node:
        case ast.Slice(lower=lower, upper=upper, step=step):
            for part in (lower, upper, step):
                if part is not None:
                    _check(part, names)
        case ast.Tuple(elts=elements):
            for element in elements:
                _check_index(element, names)
        case _:
            _check(node, names)


def evaluate(program: Program, env: Mapping[str, Value]) -> dict[str, Value]:
    """Run the graph; returns the environment extended with every assigned name."""
    values = dict(env)
    for assignment in program.assignments:
        try:
            values[assignment.target] = _eval(assignment.expr, values)
        except GraphError:
            raise
        except Exception as exc:  # the author's graph fails on these inputs: say which line
            statement = f"{assignment.target} = {ast.unparse(assignment.expr)}"
            raise GraphError(assignment.line, f"`{statement}` fails: {exc}") from exc
    return values


def _eval(node: ast.AST, values: Mapping[str, Value]) -> Value:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            return values[name]
        case ast.BinOp(left=left, op=op, right=right):
            return _BINARY[type(op)](_eval(left, values), _eval(right, values))
        case ast.UnaryOp(op=op, operand=operand):
            return _UNARY[type(op)](_eval(operand, values))
        case ast.Compare(left=left, ops=[op], comparators=[right]):
            return _COMPARE[type(op)](_eval(left, values), _eval(right, values))
        case ast.Attribute(value=value):
            return _transpose_last(_eval(value, values))
        case ast.Subscript(value=value, slice=index):
            return _eval(value, values)[_eval_index(index, values)]
        case ast.Tuple(elts=elements):
            return tuple(_eval(element, values) for element in elements)
        case ast.Call(func=ast.Name(id=name), args=args, keywords=keywords):
            kwargs = {k.arg: _eval(k.value, values) for k in keywords if k.arg is not None}
            return _implementations()[name](*(_eval(a, values) for a in args), **kwargs)
    raise AssertionError(f"unchecked node {ast.dump(node)}")  # parse() rejects everything else


def _eval_index(node: ast.AST, values: Mapping[str, Value]) -> Any:
    match node:
        case ast.Slice(lower=lower, upper=upper, step=step):
            return slice(*(None if part is None else _eval(part, values) for part in (lower, upper, step)))
        case ast.Tuple(elts=elements):
            return tuple(_eval_index(element, values) for element in elements)
    return _eval(node, values)


def evaluate_size_expression(text: str | int, sizes: Mapping[str, int]) -> int:
    """Evaluate a shape entry or bound such as `d`, `3` or `N - 1` over the drawn sizes."""
    if isinstance(text, int):
        return text
    if text in sizes:  # a size's name, as most shape entries are: what _eval gives it, without the walk
        return int(sizes[text])
    value = _eval(_parse_size_expression(text, sizes.keys()), sizes)
    return int(value)


def size_expression_names(text: str | int, known: Iterable[str]) -> None:
    """Check a size expression; raises GraphError naming the problem."""
    if not isinstance(text, int):
        _parse_size_expression(text, known)


def _parse_size_expression(text: str, known: Iterable[str]) -> ast.expr:
    return _parsed_size_expression(text, frozenset(known))


# Every trial's shapes evaluate the same few expressions, and every library load checks them: parsed once.
@lru_cache(maxsize=1024)
def _parsed_size_expression(text: str, known: frozenset[str]) -> ast.expr:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise GraphError(1, f"'{text}' is not an expression: {exc.msg}") from None
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call | ast.Attribute | ast.Subscript | ast.Compare):
            raise GraphError(1, f"'{text}' may only use sizes, integers and + - * // %")
    _check(tree, set(known))
    return tree
