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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np

from grader.exercise.graph import Assignment, Program
from grader.exercise.spec import Exercise, GradSpec, ReturnSpec, VjpSpec
from grader.exercise.trials import Trial
from grader.judging.naming.backward_slips import backward_slips
from grader.judging.naming.families import graph_families
from grader.judging.naming.slips import (
    Expected,
    GraphSlip,
    Mistake,
    evaluated,
    expression_nodes,
    recomputed,
    sum_of,
    sum_terms,
)
from grader.outcomes import MistakeFamily

_ELEMENTWISE = frozenset("exp log log1p expm1 sqrt square abs sin cos sigmoid tanh relu softplus".split())


def standard_mistakes(
    exercise: Exercise, trials: list[Trial], expected: Expected, only: str | None = None
) -> Iterator[tuple[ReturnSpec, Mistake]]:
    """Every standard mistake with the return it changes and its outputs on `trials` (only the one of
    that name, where `only` names one); a changed graph is evaluated once for all the returns it changes."""
    for ret in exercise.spec.returns:
        for slip in [*_output_slips(exercise), *_mean_for_sum(ret)]:
            if only is not None and slip.name != only:
                continue
            outputs = {}
            for trial in trials:
                changed = slip.change(trial, expected[trial.index][ret.name])
                if changed is not None:
                    outputs[trial.index] = changed
            if outputs:
                yield ret, Mistake(slip.name, slip.family, outputs, slip.feedback)
        for wrong_input in _wrong_inputs(exercise, ret):
            if only is not None and wrong_input.name != only:
                continue
            computed = evaluated(wrong_input.variant, trials)
            if computed is not None:
                outputs = {t.index: computed[t.index][ret.name] for t in trials}
                yield ret, Mistake(wrong_input.name, wrong_input.family, outputs, wrong_input.feedback)
    yield from recomputed(exercise, trials, _changed_terms(exercise), only)


def mutant_mistakes(
    exercise: Exercise, trials: list[Trial], only: str | None = None
) -> Iterator[tuple[ReturnSpec, Mistake]]:
    """The graph mutants' returns on `trials` (see graph_mutants), then the graph's mistake families
    (families.py) and the slips of a backward written by hand (backward_slips.py), or only the one named
    `only`."""
    slips = chain(graph_mutants(exercise), graph_families(exercise), backward_slips(exercise))
    yield from recomputed(exercise, trials, slips, only)


Change = Callable[[Trial, np.ndarray], np.ndarray | None]  # a right result as the mistake makes it; None: n/a


@dataclass(frozen=True)
class OutputSlip:
    """A mistake that changes a right result directly, whatever the graph: its name, the change it makes,
    and what to tell a student whose values show it."""

    name: str
    family: MistakeFamily
    change: Change
    feedback: str


_SLIPS = (
    OutputSlip(
        "transposed",
        MistakeFamily.TRANSPOSED,
        lambda _, e: np.swapaxes(e, -1, -2) if e.ndim >= 2 else None,
        "your values are the right ones transposed: check the order of the factors of each matrix product "
        "and where a .T belongs (the gradient has the shape of what it is taken with respect to)",
    ),
    OutputSlip(
        "the right values computed transposed, then reshaped where a transpose belongs",
        MistakeFamily.RESHAPE_FOR_TRANSPOSE,
        lambda _, e: (
            np.swapaxes(e, -1, -2).reshape(e.shape) if e.ndim >= 2 and e.shape[-1] != e.shape[-2] else None
        ),
        "your values are the right ones computed with their axes swapped (np.outer(a, b) where np.outer(b, "
        "a) belongs, or the factors of a product in the other order), then reshaped to the due shape: a "
        "reshape keeps the entries in their order and does not swap the axes; use .T, or swap the factors",
    ),
    OutputSlip(
        "sign flipped",
        MistakeFamily.SIGN,
        lambda _, e: -e,
        "your values have the opposite sign of the right ones: look for a minus sign lost or added in a "
        "derivative (of 1 - s, of -x, of a subtraction)",
    ),
    OutputSlip(
        "twice the value (accumulated gradient or extra factor 2)",
        MistakeFamily.SCALE,
        lambda _, e: 2 * e,
        "your values are twice the right ones: with autograd, backward() ran twice and the gradients added "
        "up (zero .grad, or call backward once); by hand, a factor 2 too many",
    ),
    OutputSlip(
        "half the value",
        MistakeFamily.SCALE,
        lambda _, e: e / 2,
        "your values are half the right ones: a factor 2 is missing (the derivative of x**2 is 2*x; a term "
        "that appears twice)",
    ),
)


def _output_slips(exercise: Exercise) -> list[OutputSlip]:
    """The slips that apply to every exercise, and a 1/N missing or extra for each of its sizes N."""
    slips = list(_SLIPS)
    for size in exercise.spec.sizes:
        slips.append(
            OutputSlip(
                f"a factor 1/{size} missing",
                MistakeFamily.SCALE,
                _scaled_by(size, 1),
                f"your values lack factor 1/{size}: a mean taken as a sum, or a loss not averaged",
            )
        )
        slips.append(
            OutputSlip(
                f"an extra factor 1/{size}",
                MistakeFamily.SCALE,
                _scaled_by(size, -1),
                f"your values carry an extra factor 1/{size}: a sum taken as a mean, or an average applied "
                "twice",
            )
        )
    return slips


def _mean_for_sum(ret: ReturnSpec) -> list[OutputSlip]:
    """A vjp's return averaged over what it sums of the upstream gradient (a conv's db = dout.mean over
    N, H' and W'): an extra factor 1/M, M the upstream's entries per returned entry, which no single size
    of the spec is where the summed axes are derived (H' from H, the kernel, the stride and the padding)."""
    if ret.vjp is None:
        return []
    upstream = ret.vjp.upstream

    def change(trial: Trial, expected: np.ndarray) -> np.ndarray | None:
        # One entry summed (a trial of size 1) leaves the values as they are: the slip is the same slip
        # there, and the trials where it differs tell it from the right values.
        summed = np.asarray(trial.inputs[upstream]).size / max(expected.size, 1)
        return expected / max(summed, 1.0)

    return [
        OutputSlip(
            "a mean where a sum belongs (an extra factor 1/M, M the upstream entries summed)",
            MistakeFamily.SCALE,
            change,
            "your values are the right ones divided by the number of upstream entries each one sums: a mean "
            "(np.mean, .mean()) taken where the gradient sums dout over those axes; use .sum",
        )
    ]


def _scaled_by(size: str, power: int) -> Change:
    def change(trial: Trial, expected: np.ndarray) -> np.ndarray | None:
        factor = float(trial.sizes[size])
        # a size that may be 0 (a padding) scales nothing: 1/0 is no mistake anyone makes
        return None if factor == 0 else expected * factor**power

    return change


def _wrong_inputs(exercise: Exercise, ret: ReturnSpec) -> Iterator[GraphSlip]:
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
        wrong = f"the gradient with respect to {name} instead of {target.wrt}"
        feedback = f"your values are {wrong}: check which input you differentiate with respect to"
        yield GraphSlip(wrong, MistakeFamily.WRONG_INPUT, feedback, variant)


def _changed_terms(exercise: Exercise) -> Iterator[GraphSlip]:
    """The exercise with one term of a sum in its graph dropped, halved or doubled."""
    for position, assignment in enumerate(exercise.program.assignments):
        terms = sum_terms(assignment.expr)
        if len(terms) < 2:
            continue
        for k, (sign, node) in enumerate(terms):
            term = ast.unparse(node)
            rest = terms[:k] + terms[k + 1 :]
            # A term forgotten, or its factor 2 lost or doubled (reg * W instead of 2 * reg * W).
            for changed, how, family in (
                (rest, f"without its term `{term}`", MistakeFamily.TERM_DROPPED),
                (
                    [*rest, (sign, _scaled(node, 0.5))],
                    f"with its term `{term}` halved",
                    MistakeFamily.TERM_SCALE,
                ),
                (
                    [*rest, (sign, _scaled(node, 2.0))],
                    f"with its term `{term}` doubled",
                    MistakeFamily.TERM_SCALE,
                ),
            ):
                name = f"{assignment.target} {how}"
                feedback = f"your values are those of {name}: a term forgotten, or its factor lost or doubled"
                yield GraphSlip(name, family, feedback, _with_expression(exercise, position, sum_of(changed)))


def graph_mutants(exercise: Exercise) -> Iterator[GraphSlip]:
    """The graph with one slip in one operation: an elementwise product where it has a matrix product, a
    function left out (so its derivative is missing from the chain rule), an operand of a matrix product
    transposed."""
    for position, assignment in enumerate(exercise.program.assignments):
        statement = f"`{assignment.target} = {ast.unparse(assignment.expr)}`"
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                product = ast.unparse(node)
                elementwise = ast.BinOp(node.left, ast.Mult(), node.right)
                yield GraphSlip(
                    f"an elementwise product where a matrix product belongs ({product} in {statement})",
                    MistakeFamily.ELEMENTWISE_PRODUCT,
                    f"you multiplied elementwise (*, with broadcasting) where the graph has the matrix "
                    f"product {product}: use @ (np.matmul), or an outer product (a @ b.T) for the gradient",
                    _with_expression(exercise, position, _replaced(assignment.expr, k, elementwise)),
                )
                transposed_left = ast.BinOp(_transposed(node.left), ast.MatMult(), node.right)
                transposed_right = ast.BinOp(node.left, ast.MatMult(), _transposed(node.right))
                for flipped, changed in ((node.left, transposed_left), (node.right, transposed_right)):
                    operand = ast.unparse(flipped)
                    # The graph with it transposed, or only a backward pass written with it so (dprev_h =
                    # da @ Wh where da @ Wh.T belongs), the forward's values kept.
                    slipped = ast.unparse(changed)
                    backward_only = _rebuilt(f"detach({product}) + ({slipped}) - detach({slipped})")
                    for form in (changed, backward_only):
                        yield GraphSlip(
                            f"{operand} transposed in {product} ({statement})",
                            MistakeFamily.OPERAND_TRANSPOSED,
                            f"your values are those of the graph with {operand} transposed in {product}: "
                            f"check where a .T belongs in its gradient",
                            _with_expression(exercise, position, _replaced(assignment.expr, k, form)),
                        )
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in _ELEMENTWISE:
                function = ast.unparse(node.func)
                name = f"the derivative of {function} missing from the chain rule ({statement})"
                feedback = (
                    f"your values are what the chain rule gives without the factor {function}'(...): "
                    f"multiply by the derivative of {function} at its input"
                )
                # Two forms of one mistake: the function left out of the forward pass too (values and
                # gradients of a graph without it), or only its derivative left out of a backward pass
                # written by hand, the forward's values kept: detach(f(u)) + u - detach(u).
                inner = node.args[0]
                backward_only = _rebuilt(
                    f"detach({ast.unparse(node)}) + ({ast.unparse(inner)}) - detach({ast.unparse(inner)})"
                )
                for form in (inner, backward_only):
                    variant = _with_expression(exercise, position, _replaced(assignment.expr, k, form))
                    yield GraphSlip(name, MistakeFamily.DERIVATIVE_MISSING, feedback, variant)


def _rebuilt(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def _transposed(node: ast.expr) -> ast.expr:
    return ast.Attribute(node, "T", ast.Load())


def _replaced(expr: ast.expr, index: int, replacement: ast.expr) -> ast.expr:
    """A copy of `expr` with its `index`-th node (in ast.walk order) replaced."""
    copy = ast.parse(ast.unparse(expr), mode="eval").body
    target = expression_nodes(copy)[index]

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


def _scaled(node: ast.expr, factor: float) -> ast.expr:
    return ast.BinOp(ast.Constant(factor), ast.Mult(), node)
