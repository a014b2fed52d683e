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
from functools import cache
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
}


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
    }
    for name in FUNCTIONS:
        if name not in table:
            table[name] = getattr(torch, name)
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
                raise GraphError(line, f"only numeric constants and True/False are allowed, not {value!r}")
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
            for arg in args:
                if isinstance(arg, ast.Starred):
                    raise GraphError(line, "*args is not allowed")
                _check(arg, names)
        case _:
            raise GraphError(line, f"{type(node).__name__} expressions are not part of the graph language")


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
    value = _eval(_parse_size_expression(text, sizes.keys()), sizes)
    return int(value)


def size_expression_names(text: str | int, known: Iterable[str]) -> None:
    """Check a size expression; raises GraphError naming the problem."""
    if not isinstance(text, int):
        _parse_size_expression(text, known)


def _parse_size_expression(text: str, known: Iterable[str]) -> ast.expr:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise GraphError(1, f"'{text}' is not an expression: {exc.msg}") from None
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call | ast.Attribute | ast.Subscript | ast.Compare):
            raise GraphError(1, f"'{text}' may only use sizes, integers and + - * // %")
    _check(tree, set(known))
    return tree
