"""What a mistake is, as the diagnosis compares it: its values on the trials (Mistake), or the exercise as
the mistaken code computes it (GraphSlip), evaluated in float64 by the reference's graph. Shared by the
standard mistakes (mistakes.py) and the families derived from the graph (families.py, backward_slips.py),
which build on the same helpers to take a graph's expressions apart."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from grader.exercise.reference import reference_returns
from grader.exercise.spec import Exercise, ReturnSpec
from grader.exercise.trials import Trial
from grader.outcomes import MistakeFamily

Expected = Mapping[int, Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Mistake:
    name: str
    family: MistakeFamily
    outputs: dict[int, np.ndarray]  # trial index -> what the mistaken code would return
    feedback: str = ""  # what to tell a student whose values match it
    # Trial index -> each entry's rounding sensitivity of the mistaken formula itself, measured as the
    # references' is; None where it was not (the standard mistakes and mutants, too many to measure).
    spread: dict[int, np.ndarray] | None = None

    @property
    def declared(self) -> bool:
        """One the exercise declares (a misconception, another year's convention), not one derived."""
        return self.family in (MistakeFamily.DECLARED, MistakeFamily.CONVENTION)


@dataclass(frozen=True)
class GraphSlip:
    """A mistake that changes the computation: the exercise as the mistaken code computes it."""

    name: str
    family: MistakeFamily
    feedback: str
    variant: Exercise


def recomputed(
    exercise: Exercise, trials: list[Trial], slips: Iterator[GraphSlip], only: str | None
) -> Iterator[tuple[ReturnSpec, Mistake]]:
    for slip in slips:
        if only is not None and slip.name != only:
            continue  # named before its graph is evaluated: skipping it costs nothing
        computed = evaluated(slip.variant, trials)
        if computed is not None:
            for ret in exercise.spec.returns:
                outputs = {t.index: computed[t.index][ret.name] for t in trials}
                yield ret, Mistake(slip.name, slip.family, outputs, slip.feedback)


def evaluated(variant: Exercise, trials: list[Trial]) -> dict[int, Mapping[str, np.ndarray]] | None:
    try:
        return reference_returns(variant, trials)
    except Exception:  # a variant the graph cannot evaluate is no mistake to test
        return None


def expression_nodes(expr: ast.expr) -> list[ast.AST]:
    return list(ast.walk(expr))


def sum_terms(node: ast.expr, sign: int = 1) -> list[tuple[int, ast.expr]]:
    """The terms of a sum or difference, each with its sign: a - b + c -> [(+, a), (-, b), (+, c)]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        right_sign = sign if isinstance(node.op, ast.Add) else -sign
        return sum_terms(node.left, sign) + sum_terms(node.right, right_sign)
    return [(sign, node)]


def sum_of(terms: list[tuple[int, ast.expr]]) -> ast.expr:
    first_sign, first = terms[0]
    node: ast.expr = first if first_sign > 0 else ast.UnaryOp(ast.USub(), first)
    for sign, term in terms[1:]:
        node = ast.BinOp(node, ast.Add() if sign > 0 else ast.Sub(), term)
    return ast.fix_missing_locations(node)
