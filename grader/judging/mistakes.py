"""The standard mistakes of hand-derived gradients, as changes to an exercise's expected returns.

Two families. Output mistakes change a correct result directly: transposed, sign flipped, off by a factor
2 or 1/2, a 1/N too many or missing for each size N. Graph mistakes recompute the return from a changed
exercise, in float64: the gradient with respect to another input of the same shape, the graph with one
term of a sum dropped (a forgotten regularisation term), halved or doubled (a lost or extra factor 2), and
graph mutants (an elementwise product for a matrix product, a function left out so that its derivative is
missing, an operand of a matrix product transposed). `grader validate` uses them to check that an
exercise's test points can tell each mistake from rounding; grading uses them to name a student's mistake.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np

from grader.exercise.graph import Assignment, Program
from grader.exercise.reference import reference_returns
from grader.exercise.spec import Exercise, GradSpec, ReturnSpec, VjpSpec
from grader.exercise.trials import Trial

Expected = Mapping[int, Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Mistake:
    name: str
    outputs: dict[int, np.ndarray]  # trial index -> what the mistaken code would return
    feedback: str = ""  # what to tell a student whose values match it


_FEEDBACK = {
    "transposed": "your values are the right ones transposed: check the order of the factors of each "
    "matrix product and where a .T belongs (the gradient has the shape of what it is taken with respect to)",
    "sign flipped": "your values have the opposite sign of the right ones: look for a minus sign lost or "
    "added in a derivative (of 1 - s, of -x, of a subtraction)",
    "twice the value (accumulated gradient or extra factor 2)": "your values are twice the right ones: with "
    "autograd, backward() ran twice and the gradients added up (zero .grad, or call backward once); by "
    "hand, a factor 2 too many",
    "half the value": "your values are half the right ones: a factor 2 is missing (the derivative of x**2 "
    "is 2*x; a term that appears twice)",
}
_ELEMENTWISE = frozenset("exp log log1p expm1 sqrt square abs sin cos sigmoid tanh relu softplus".split())


def standard_mistakes(
    exercise: Exercise, trials: list[Trial], expected: Expected
) -> Iterator[tuple[ReturnSpec, Mistake]]:
    """Every standard mistake with the return it changes and its outputs on `trials`; a changed graph
    is evaluated once for all the returns it changes."""
    for ret in exercise.spec.returns:
        for name, change in _output_changes(exercise):
            outputs = {}
            for trial in trials:
                changed = change(trial, expected[trial.index][ret.name])
                if changed is not None:
                    outputs[trial.index] = changed
            if outputs:
                yield ret, Mistake(name, outputs, _feedback(name))
        for name, variant in _wrong_inputs(exercise, ret):
            computed = _evaluated(variant, trials)
            if computed is not None:
                outputs = {t.index: computed[t.index][ret.name] for t in trials}
                feedback = f"your values are {name}: check which input you differentiate with respect to"
                yield ret, Mistake(name, outputs, feedback)
    yield from _recomputed(exercise, trials, _changed_terms(exercise))


def mutant_mistakes(exercise: Exercise, trials: list[Trial]) -> Iterator[tuple[ReturnSpec, Mistake]]:
    """The graph mutants' returns on `trials` (see graph_mutants)."""
    yield from _recomputed(exercise, trials, graph_mutants(exercise))


def _recomputed(
    exercise: Exercise, trials: list[Trial], variants: Iterator[tuple[str, str, Exercise]]
) -> Iterator[tuple[ReturnSpec, Mistake]]:
    for name, feedback, variant in variants:
        computed = _evaluated(variant, trials)
        if computed is not None:
            for ret in exercise.spec.returns:
                yield ret, Mistake(name, {t.index: computed[t.index][ret.name] for t in trials}, feedback)


def _evaluated(variant: Exercise, trials: list[Trial]) -> dict[int, Mapping[str, np.ndarray]] | None:
    try:
        return reference_returns(variant, trials)
    except Exception:  # a variant the graph cannot evaluate is no mistake to test
        return None


Change = Callable[[Trial, np.ndarray], np.ndarray | None]


def _output_changes(exercise: Exercise) -> list[tuple[str, Change]]:
    changes: list[tuple[str, Change]] = [
        ("transposed", lambda _, e: np.swapaxes(e, -1, -2) if e.ndim >= 2 else None),
        ("sign flipped", lambda _, e: -e),
        ("twice the value (accumulated gradient or extra factor 2)", lambda _, e: 2 * e),
        ("half the value", lambda _, e: e / 2),
    ]
    for size in exercise.spec.sizes:
        changes.append((f"a factor 1/{size} missing", _scaled_by(size, 1)))
        changes.append((f"an extra factor 1/{size}", _scaled_by(size, -1)))
    return changes


def _feedback(name: str) -> str:
    if name in _FEEDBACK:
        return _FEEDBACK[name]
    if name.startswith("a factor 1/"):
        factor = name[2:].removesuffix(" missing")
        return f"your values lack {factor}: a mean taken as a sum, or a loss not averaged"
    if name.startswith("an extra factor 1/"):
        return f"your values carry {name}: a sum taken as a mean, or an average applied twice"
    return ""


def _scaled_by(size: str, power: int) -> Change:
    def change(trial: Trial, expected: np.ndarray) -> np.ndarray:
        return expected * float(trial.sizes[size]) ** power

    return change


def _wrong_inputs(exercise: Exercise, ret: ReturnSpec) -> Iterator[tuple[str, Exercise]]:
    """The exercise reduced to `ret`, taken with respect to each other input of the same shape."""
    target = ret.grad or ret.vjp
    if target is None:
        return
    shape = exercise.spec.inputs[target.wrt].shape
    upstream = ret.vjp.upstream if ret.vjp is not None else None
    kind = "grad" if ret.grad is not None else "vjp"
    for name, spec in exercise.spec.inputs.items():
        if name in (target.wrt, upstream) or spec.is_integer or spec.shape != shape:
            continue
        moved: GradSpec | VjpSpec = target.model_copy(update={"wrt": name})
        returns = (ret.model_copy(update={kind: moved}),)
        variant = replace(exercise, spec=exercise.spec.model_copy(update={"returns": returns}))
        yield f"the gradient with respect to {name} instead of {target.wrt}", variant


def _changed_terms(exercise: Exercise) -> Iterator[tuple[str, str, Exercise]]:
    """The exercise with one term of a sum in its graph dropped, halved or doubled."""
    for position, assignment in enumerate(exercise.program.assignments):
        terms = _terms(assignment.expr)
        if len(terms) < 2:
            continue
        for k, (sign, node) in enumerate(terms):
            term = ast.unparse(node)
            rest = terms[:k] + terms[k + 1 :]
            # A term forgotten, or its factor 2 lost or doubled (reg * W instead of 2 * reg * W).
            for changed, how in (
                (rest, f"without its term `{term}`"),
                ([*rest, (sign, _scaled(node, 0.5))], f"with its term `{term}` halved"),
                ([*rest, (sign, _scaled(node, 2.0))], f"with its term `{term}` doubled"),
            ):
                name = f"{assignment.target} {how}"
                feedback = f"your values are those of {name}: a term forgotten, or its factor lost or doubled"
                yield name, feedback, _with_expression(exercise, position, _rebuild(changed))


def graph_mutants(exercise: Exercise) -> Iterator[tuple[str, str, Exercise]]:
    """The graph with one slip in one operation: an elementwise product where it has a matrix product, a
    function left out (so its derivative is missing from the chain rule), an operand of a matrix product
    transposed."""
    for position, assignment in enumerate(exercise.program.assignments):
        statement = f"`{assignment.target} = {ast.unparse(assignment.expr)}`"
        for k, node in enumerate(_nodes(assignment.expr)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                product = ast.unparse(node)
                elementwise = ast.BinOp(node.left, ast.Mult(), node.right)
                yield (
                    f"an elementwise product where a matrix product belongs ({product} in {statement})",
                    f"you multiplied elementwise (*, with broadcasting) where the graph has the matrix "
                    f"product {product}: use @ (np.matmul), or an outer product (a @ b.T) for the gradient",
                    _with_expression(exercise, position, _replaced(assignment.expr, k, elementwise)),
                )
                transposed_left = ast.BinOp(_transposed(node.left), ast.MatMult(), node.right)
                transposed_right = ast.BinOp(node.left, ast.MatMult(), _transposed(node.right))
                for flipped, changed in ((node.left, transposed_left), (node.right, transposed_right)):
                    operand = ast.unparse(flipped)
                    yield (
                        f"{operand} transposed in {product} ({statement})",
                        f"your values are those of the graph with {operand} transposed in {product}",
                        _with_expression(exercise, position, _replaced(assignment.expr, k, changed)),
                    )
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in _ELEMENTWISE:
                function = ast.unparse(node.func)
                yield (
                    f"the derivative of {function} missing from the chain rule ({statement})",
                    f"your values are what the chain rule gives without the factor {function}'(...): "
                    f"multiply by the derivative of {function} at its input",
                    _with_expression(exercise, position, _replaced(assignment.expr, k, node.args[0])),
                )


def _transposed(node: ast.expr) -> ast.expr:
    return ast.Attribute(node, "T", ast.Load())


def _nodes(expr: ast.expr) -> list[ast.AST]:
    return list(ast.walk(expr))


def _replaced(expr: ast.expr, index: int, replacement: ast.expr) -> ast.expr:
    """A copy of `expr` with its `index`-th node (in ast.walk order) replaced."""
    copy = ast.parse(ast.unparse(expr), mode="eval").body
    target = _nodes(copy)[index]

    class Swap(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            return replacement if node is target else super().visit(node)

    swapped = ast.fix_missing_locations(Swap().visit(copy))
    assert isinstance(swapped, ast.expr)
    return swapped


def _with_expression(exercise: Exercise, position: int, expr: ast.expr) -> Exercise:
    assignments = list(exercise.program.assignments)
    old = assignments[position]
    assignments[position] = Assignment(old.target, expr, old.line)
    return replace(exercise, program=Program(tuple(assignments)))


def _terms(node: ast.expr, sign: int = 1) -> list[tuple[int, ast.expr]]:
    """The terms of a sum or difference, each with its sign: a - b + c -> [(+, a), (-, b), (+, c)]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        right_sign = sign if isinstance(node.op, ast.Add) else -sign
        return _terms(node.left, sign) + _terms(node.right, right_sign)
    return [(sign, node)]


def _scaled(node: ast.expr, factor: float) -> ast.expr:
    return ast.BinOp(ast.Constant(factor), ast.Mult(), node)


def _rebuild(terms: list[tuple[int, ast.expr]]) -> ast.expr:
    first_sign, first = terms[0]
    node: ast.expr = first if first_sign > 0 else ast.UnaryOp(ast.USub(), first)
    for sign, term in terms[1:]:
        node = ast.BinOp(node, ast.Add() if sign > 0 else ast.Sub(), term)
    return ast.fix_missing_locations(node)
