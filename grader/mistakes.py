"""The standard mistakes of hand-derived gradients, as changes to an exercise's expected returns.

Two families. Output mistakes change a correct result directly: transposed, sign flipped, off by a factor
2 or 1/2, a 1/N too many or missing for each size N. Graph mistakes recompute the return from a changed
exercise, in float64: the gradient with respect to another input of the same shape, or the graph with one
term of a sum dropped (a forgotten regularisation term), halved or doubled (a lost or extra factor 2).
`grader validate` uses them to check that an exercise's test points can tell each mistake from rounding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np

from grader.graph import Assignment, Program
from grader.reference import reference_returns
from grader.spec import Exercise, GradSpec, ReturnSpec, VjpSpec
from grader.trials import Trial

Expected = Mapping[int, Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Mistake:
    name: str
    outputs: dict[int, np.ndarray]  # trial index -> what the mistaken code would return


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
                yield ret, Mistake(name, outputs)
        for name, variant in _wrong_inputs(exercise, ret):
            computed = _evaluated(variant, trials)
            if computed is not None:
                yield ret, Mistake(name, {t.index: computed[t.index][ret.name] for t in trials})
    for name, variant in _changed_terms(exercise):
        computed = _evaluated(variant, trials)
        if computed is not None:
            for ret in exercise.spec.returns:
                yield ret, Mistake(name, {t.index: computed[t.index][ret.name] for t in trials})


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
        ("twice the value (gradient accumulated twice)", lambda _, e: 2 * e),
        ("half the value", lambda _, e: e / 2),
    ]
    for size in exercise.spec.sizes:
        changes.append((f"a factor 1/{size} missing", _scaled_by(size, 1)))
        changes.append((f"an extra factor 1/{size}", _scaled_by(size, -1)))
    return changes


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


def _changed_terms(exercise: Exercise) -> Iterator[tuple[str, Exercise]]:
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
                assignments = list(exercise.program.assignments)
                assignments[position] = Assignment(assignment.target, _rebuild(changed), assignment.line)
                yield f"{assignment.target} {how}", replace(exercise, program=Program(tuple(assignments)))


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
