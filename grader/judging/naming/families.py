"""Mistake families derived mechanically from an exercise's graph, each a generator of GraphSlips.

- term scales: each term of a return's sum off by a size alone (the regularisation gradient divided by
  N, the data term without its 1/N, num_classes where num_train belongs), beside the halved, doubled
  and dropped terms `mistakes._changed_terms` tries;
- dropped paths: an intermediate (an assigned name, a statistic computed inline) treated as a constant
  with detach(), so that the gradient misses the path through it (batchnorm's backward without its mean
  or variance path);
- wrong axes: the reductions over one set of axes taken over another (instance norm in spatial batch
  norm, layer norm in group norm), all those over the same axes together (a mean and its variance); for
  the statistics of a reshaped tensor, the axes of the tensor before the reshape too (per-channel group
  norm).

A variant that equals the right values on every trial names nothing: diagnosis requires a candidate to
separate from the right values beyond both envelopes. Simple families come first; each is bounded by the
graph's size (terms x sizes, names and statistics, reductions x a few axis sets).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from grader.exercise.graph import Assignment, Program
from grader.exercise.spec import Exercise, ReturnSpec, SizeRange
from grader.exercise.trials import Trial
from grader.judging.naming.slips import GraphSlip, Mistake, recomputed, sum_of, sum_terms
from grader.outcomes import MistakeFamily

Labels = tuple[str, ...]  # what each axis of a value is, by the size expression of the spec's shapes
Place = tuple[int, int]  # an assignment's position, and a node's index in ast.walk order of its expression
Rewrite = Callable[[ast.expr], ast.expr]

_STATISTICS = frozenset("sum mean var std max min logsumexp".split())  # reductions that take dim, keepdim
_ONE_AXIS = frozenset("softmax log_softmax".split())  # take one dim, keep the shape
_ELEMENTWISE = frozenset(
    "exp log log1p expm1 sqrt square abs sin cos sigmoid tanh relu softplus detach clamp".split()
)
_AXIS_WORDS = {"N": "batch", "T": "time", "H": "spatial", "W": "spatial"}
# Which normalisation a mean or variance over these axes of an (N, C, H, W) tensor computes.
_NORMS_4D = {
    (0,): "a fully connected batch norm's, one statistic per (c, h, w)",
    (1,): "one statistic per example and location, over the channels",
    (2, 3): "instance norm's, one statistic per example and channel",
    (0, 2, 3): "spatial batch norm's, one statistic per channel",
    (1, 2, 3): "layer norm's, one statistic per example",
}


def graph_families(exercise: Exercise) -> Iterator[GraphSlip]:
    """Every family's slips, the simpler first."""
    yield from term_scales(exercise)
    yield from dropped_paths(exercise)
    yield from wrong_axes(exercise)


def family_mistakes(exercise: Exercise, trials: list[Trial]) -> Iterator[tuple[ReturnSpec, Mistake]]:
    """Every family's slips, evaluated on `trials`: what `grader validate` reports as covered."""
    yield from recomputed(exercise, trials, graph_families(exercise), None)


def term_scales(exercise: Exercise) -> Iterator[GraphSlip]:
    """Each term of a sum that a return computes, multiplied by and divided by each size, its sign
    flipped, and each size it divides by replaced by another (num_classes for num_train)."""
    sizes = _scaling_sizes(exercise)
    targets = _return_targets(exercise)
    labels = _all_labels(exercise)
    definitions = {a.target: a.expr for a in exercise.program.assignments}
    for position, assignment in enumerate(exercise.program.assignments):
        terms = sum_terms(assignment.expr)
        # A loss's terms only: scaling a term of a layer's output by a size is no mistake anyone makes.
        if assignment.target not in targets or len(terms) < 2 or labels.get(assignment.target) != ():
            continue
        for k, (sign, node) in enumerate(terms):
            term = ast.unparse(node)
            rest = terms[:k] + terms[k + 1 :]
            where = f"the term `{term}` of {assignment.target}"
            changes: list[tuple[ast.expr, str, str]] = []
            for size in sizes:
                changes.append(
                    (
                        ast.BinOp(node, ast.Div(), ast.Name(size, ast.Load())),
                        f"{where} divided by {size}",
                        f"only that term carries an extra 1/{size}: a 1/{size} belongs on a term that "
                        f"averages over {size}, and a regularisation term is not averaged; take the /{size} "
                        "off that term's gradient (the other terms are right)",
                    )
                )
                changes.append(
                    (
                        ast.BinOp(node, ast.Mult(), ast.Name(size, ast.Load())),
                        f"{where} without its 1/{size}",
                        f"only that term lacks its 1/{size}: the term averages over {size} (a mean, or a "
                        f"sum divided by {size}) and its gradient keeps that 1/{size}; divide that term's "
                        "gradient, not the others', by it",
                    )
                )
            changes.append(
                (
                    ast.UnaryOp(ast.USub(), node),
                    f"{where} with its sign flipped",
                    "only that term's sign is wrong (the other terms are right): look for a minus lost or "
                    "added in its derivative alone",
                )
            )
            for used, due in itertools.permutations(sizes, 2):
                if used in _divisors(node, definitions, sizes, labels):
                    scaled = ast.BinOp(
                        ast.BinOp(node, ast.Mult(), ast.Name(used, ast.Load())),
                        ast.Div(),
                        ast.Name(due, ast.Load()),
                    )
                    changes.append(
                        (
                            scaled,
                            f"{where} divided by {due} where {used} belongs",
                            f"that term divides by {due} where it averages over {used}: check which size "
                            f"you divide by (the number of examples, not of classes or features)",
                        )
                    )
            for changed, name, why in changes:
                feedback = f"your values are those of {name}: {why}"
                yield GraphSlip(
                    name,
                    MistakeFamily.TERM_SCALE,
                    feedback,
                    _with_program(exercise, {position: sum_of([*rest, (sign, changed)])}),
                )


def dropped_paths(exercise: Exercise) -> Iterator[GraphSlip]:
    """Each intermediate treated as a constant, one at a time: a statistic (a name assigned a reduction,
    or one inside an expression), another name at all its uses, a name in one of the statements that
    use it where several do, and every statistic at once; only
    where the input differentiated still reaches the function along another path (otherwise the
    gradient is merely zero, which the other families and the verdict already say)."""
    program = exercise.program
    pairs = _differentiated(exercise)
    if not pairs:
        return
    labels = _all_labels(exercise)
    uses: dict[str, list[Place]] = {}
    statistics: list[tuple[Place, str]] = []  # reductions inside an expression (a name's are its uses)
    for position, assignment in enumerate(program.assignments):
        for index, node in enumerate(ast.walk(assignment.expr)):
            if isinstance(node, ast.Name) and node.id in program.defined:
                uses.setdefault(node.id, []).append((position, index))
            elif _reduction(node) and index > 0:
                statistics.append(((position, index), ast.unparse(node)))
    # Statistics first (a mean's or variance's path is the one students drop), then other names, then
    # a name dropped in one of its uses only, then every statistic at once.
    statistic_paths: list[tuple[list[Place], str]] = []
    name_paths: list[tuple[list[Place], str]] = []
    use_paths: list[tuple[list[Place], str]] = []
    shown: list[str] = []  # the statistics, as `every statistic (...)` lists them
    for assignment in program.assignments:
        places = uses.get(assignment.target, [])
        if not places:
            continue
        described = _described(assignment.expr, labels)
        what = f"{assignment.target} ({described})" if described else assignment.target
        if _reduction(assignment.expr):
            statistic_paths.append((places, what))
            shown.append(assignment.target)
        else:
            name_paths.append((places, what))
        by_user: dict[int, list[Place]] = {}
        for place in places:
            by_user.setdefault(place[0], []).append(place)
        if len(by_user) > 1:
            for user, alone in by_user.items():
                use_paths.append((alone, f"{assignment.target} in {program.assignments[user].target}"))
        for user, alone in by_user.items():
            # uses in different terms of one statement (logsumexp(scores) - scores[arange(N), y]): each
            # term's alone, as a hand-derived gradient that forgets the correct class's -1
            by_term = _uses_by_term(program.assignments[user].expr, {index for _, index in alone})
            if len(by_term) > 1:
                for term, indices in by_term.items():
                    use_paths.append(([(user, i) for i in indices], f"{assignment.target} in `{term}`"))
    for place, text in statistics:
        node = list(ast.walk(program.assignments[place[0]].expr))[place[1]]
        described = _described(node, labels) if isinstance(node, ast.expr) else ""
        statistic_paths.append(([place], f"{text} ({described})" if described else text))
        shown.append(text)
    candidates = statistic_paths + name_paths + use_paths
    if len(statistic_paths) > 1:
        every = [place for places, _ in statistic_paths for place in places]
        candidates.append((every, f"every statistic ({', '.join(shown)})"))
    seen: set[tuple[Place, ...]] = set()
    for places, what in candidates:
        key = tuple(sorted(places))
        if key in seen:
            continue
        seen.add(key)
        variant = _rewritten(exercise, dict.fromkeys(places, _detached))
        reach = _still_reached(exercise, variant.program, pairs)
        if reach is None:
            continue
        wrt, of = reach
        feedback = (
            f"your values are the gradient with {what} held constant: {wrt} reaches {of} through it as "
            "well as along its other paths, and the chain rule adds every path's gradient; add the term "
            "that flows back through it (for a mean or a variance: its gradient summed over the axes it "
            "reduces, divided by their size)"
        )
        name = f"the path through {what} dropped: {wrt} reaches {of} also through it"
        yield GraphSlip(name, MistakeFamily.DROPPED_PATH, feedback, variant)


def wrong_axes(exercise: Exercise) -> Iterator[GraphSlip]:
    """The reductions over one set of axes taken over another, where the tensor's rank is known: all the
    reductions over the same axes of tensors of the same rank together (a mean and its variance); a
    variant that fails to evaluate is skipped by the caller."""
    labels = _all_labels(exercise)
    groups: dict[tuple[int, tuple[int, ...], bool], list[tuple[Place, Labels, str]]] = {}
    arguments: dict[tuple[int, tuple[int, ...], bool], set[str]] = {}
    for position, assignment in enumerate(exercise.program.assignments):
        env = labels
        for index, node in enumerate(ast.walk(assignment.expr)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                continue
            function = node.func.id
            if function not in _STATISTICS | _ONE_AXIS:
                continue
            shape = _labels(node.args[0], env)
            axes = _axes(node, shape)
            if shape is None or axes is None or len(shape) < 2:
                continue
            key = (len(shape), axes, function in _ONE_AXIS)
            groups.setdefault(key, []).append(((position, index), shape, function))
            arguments.setdefault(key, set()).add(ast.unparse(node.args[0]))
    for (rank, axes, single), members in groups.items():
        # All of them together: a student who takes the mean over other axes takes the variance there too.
        shape = members[0][1]
        functions = " and ".join(dict.fromkeys(f for _, _, f in members))
        due = _axes_words(axes, shape)
        for other in _axis_sets(rank, single):
            if other == axes:
                continue
            norm = _NORMS_4D.get(other) if rank == 4 and functions != "sum" else None
            feedback = (
                f"your values are those of the {functions} taken over {_axes_words(other, shape)}"
                + (f", {norm}" if norm else "")
                + f"; the exercise takes it over {due}: pass axis={axes[0] if len(axes) == 1 else axes}"
                + ("" if single else " (with keepdims=True so that it broadcasts back)")
            )
            rewrite = dict.fromkeys((place for place, _, _ in members), _with_axes(other))
            yield GraphSlip(
                f"the {functions} over {_axes_words(other, shape)} instead of {due}",
                MistakeFamily.WRONG_AXES,
                feedback,
                _rewritten(exercise, rewrite),
            )
        # Statistics of a reshaped tensor (group norm's (N, G, CG * H * W)): the axes of the tensor before
        # the reshape too, broadcast back to it and reshaped alike (per channel where it is per group).
        source = _reshaped_from(exercise, arguments[(rank, axes, single)], labels)
        if source is None or single:
            continue
        reshape, original = source
        before = ast.unparse(reshape.args[0])
        for other in _axis_sets(len(original), single=False):
            norm = _NORMS_4D.get(other) if len(original) == 4 and functions != "sum" else None
            where = f"{_axes_words(other, original)} of {before}"
            feedback = (
                f"your values are those of the {functions} taken over {where}"
                + (f", {norm}" if norm else "")
                + f"; the exercise takes it over {due} of {ast.unparse(reshape)}: reshape first, then reduce"
            )
            rewrite = dict.fromkeys((place for place, _, _ in members), _before_reshape(reshape, other))
            yield GraphSlip(
                f"the {functions} over {where} instead of {due} of its reshape",
                MistakeFamily.WRONG_AXES,
                feedback,
                _rewritten(exercise, rewrite),
            )


def _reshaped_from(
    exercise: Exercise, arguments: set[str], labels: Mapping[str, Labels | None]
) -> tuple[ast.Call, Labels] | None:
    """The reshape(x, shape) call that the one name the reductions read is assigned, and x's axes."""
    if len(arguments) != 1:
        return None
    definitions = {a.target: a.expr for a in exercise.program.assignments}
    expr = definitions.get(next(iter(arguments)))
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "reshape"):
        return None
    original = _labels(expr.args[0], labels)
    return None if original is None or len(original) < 2 else (expr, original)


def _before_reshape(reshape: ast.Call, axes: tuple[int, ...]) -> Rewrite:
    """stat(xg, ...) -> reshape(stat(x, dim=axes, keepdim=True) + zeros_like(x), shape): x's statistic,
    broadcast to x's shape, then reshaped as xg is."""

    def rewrite(node: ast.expr) -> ast.expr:
        assert isinstance(node, ast.Call)
        source = reshape.args[0]
        statistic = _with_axes(axes)(ast.Call(node.func, [source], node.keywords))
        broadcast = ast.BinOp(
            statistic, ast.Add(), ast.Call(ast.Name("zeros_like", ast.Load()), [source], [])
        )
        return ast.Call(ast.Name("reshape", ast.Load()), [broadcast, *reshape.args[1:]], [])

    return rewrite


def _axis_sets(rank: int, single: bool) -> list[tuple[int, ...]]:
    if single or rank > 4:
        return [(k,) for k in range(rank)]
    if rank == 4:
        return [(0,), (1,), (2, 3), (0, 2, 3), (1, 2, 3)]
    if rank == 3:
        return [(0,), (1,), (2,), (1, 2)]  # (1, 2): a reshaped group norm's layer norm
    return [(0,), (1,)]


def _axes(call: ast.Call, shape: Labels | None) -> tuple[int, ...] | None:
    """The axes a reduction call reduces, normalised; None where it names none (all) or is not a
    constant."""
    if shape is None:
        return None
    dim = next((k.value for k in call.keywords if k.arg == "dim"), None)
    if dim is None:
        return None
    values = dim.elts if isinstance(dim, ast.Tuple) else [dim]
    found = []
    for value in values:
        number = _integer(value)
        if number is None or not -len(shape) <= number < len(shape):
            return None
        found.append(number % len(shape))
    return tuple(sorted(set(found)))


def _integer(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    return None


def _with_axes(axes: tuple[int, ...]) -> Rewrite:
    def rewrite(node: ast.expr) -> ast.expr:
        assert isinstance(node, ast.Call)
        dim: ast.expr = (
            ast.Constant(axes[0])
            if len(axes) == 1
            else ast.Tuple([ast.Constant(a) for a in axes], ast.Load())
        )
        keywords = [k for k in node.keywords if k.arg not in ("dim", "keepdim")]
        keywords.append(ast.keyword("dim", dim))
        # A statistic kept as a broadcastable (1, D) row, as the student's keepdims=True does: without
        # it, another axis's result would not broadcast against the tensor it is taken from.
        if isinstance(node.func, ast.Name) and node.func.id in _STATISTICS:
            keywords.append(ast.keyword("keepdim", ast.Constant(True)))
        return ast.Call(node.func, node.args, keywords)

    return rewrite


def _axes_words(axes: tuple[int, ...], shape: Labels) -> str:
    names = [shape[a] for a in axes]
    shown = axes[0] if len(axes) == 1 else axes
    plural = "axes" if len(axes) > 1 else "axis"
    if all(n in _AXIS_WORDS for n in names):
        words = " and ".join(dict.fromkeys(_AXIS_WORDS[n] for n in names))
        return f"the {words} {plural} {shown}"
    return f"{plural} {shown} ({', '.join(names)})"


def _detached(node: ast.expr) -> ast.expr:
    return ast.Call(ast.Name("detach", ast.Load()), [node], [])


def _reduction(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _STATISTICS
        and bool(node.args)
    )


def _uses_by_term(expr: ast.expr, indices: set[int]) -> dict[str, list[int]]:
    """The uses at `indices` (ast.walk order of `expr`) grouped by the term of the sum they lie in; the
    sum may be the argument of a reduction (mean(a - b)), whose terms are then the statement's."""
    inner = expr
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in _STATISTICS:
        inner = inner.args[0]
    order = {id(node): index for index, node in enumerate(ast.walk(expr))}
    grouped: dict[str, list[int]] = {}
    for _, term in sum_terms(inner):
        inside = [order[id(node)] for node in ast.walk(term) if order.get(id(node)) in indices]
        if inside:
            grouped.setdefault(ast.unparse(term), []).extend(inside)
    return grouped


def _described(node: ast.expr, labels: Mapping[str, Labels | None]) -> str:
    """A statistic in words: `mean(x, dim=0)` -> "the mean over the batch axis (0,) (N)"."""
    if not (_reduction(node) and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return ""
    shape = _labels(node.args[0], labels)
    axes = _axes(node, shape)
    if shape is None or axes is None:
        return ""
    return f"the {node.func.id} over {_axes_words(axes, shape)}"


def _rewritten(exercise: Exercise, rewrites: Mapping[Place, Rewrite]) -> Exercise:
    """The exercise with the nodes at `rewrites`' places replaced by what each rewrite makes of them."""
    changed: dict[int, ast.expr] = {}
    for position in {p for p, _ in rewrites}:
        expr = exercise.program.assignments[position].expr
        copy = ast.parse(ast.unparse(expr), mode="eval").body
        targets = {
            id(node): rewrites[(position, index)]
            for index, node in enumerate(ast.walk(copy))
            if (position, index) in rewrites
        }

        swapped = ast.fix_missing_locations(_Swap(targets).visit(copy))
        assert isinstance(swapped, ast.expr)
        changed[position] = swapped
    return _with_program(exercise, changed)


class _Swap(ast.NodeTransformer):
    """Replaces the nodes (by identity) that `targets` maps, after their own children."""

    def __init__(self, targets: Mapping[int, Rewrite]) -> None:
        self.targets = targets

    def visit(self, node: ast.AST) -> ast.AST:
        rewrite = self.targets.get(id(node))
        visited = super().visit(node)
        return rewrite(visited) if rewrite is not None and isinstance(visited, ast.expr) else visited


def _with_program(exercise: Exercise, changed: Mapping[int, ast.expr]) -> Exercise:
    assignments = [
        Assignment(a.target, changed[k], a.line) if k in changed else a
        for k, a in enumerate(exercise.program.assignments)
    ]
    return replace(exercise, program=Program(tuple(assignments)))


def _scaling_sizes(exercise: Exercise) -> list[str]:
    """The sizes a term may be scaled by: drawn ones that are never 0 (a 1/0 is no mistake) nor 1."""
    found = []
    for name, size in exercise.spec.sizes.items():
        drawn = isinstance(size, SizeRange) and size.min >= 1 and size.max > 1
        if drawn or (isinstance(size, int) and size > 1):
            found.append(name)
    return found


def _return_targets(exercise: Exercise) -> set[str]:
    targets = set()
    for ret in exercise.spec.returns:
        for name in (ret.value, ret.grad.of if ret.grad else None, ret.vjp.of if ret.vjp else None):
            if name is not None:
                targets.add(name)
    return targets


def _divisors(
    node: ast.expr, definitions: Mapping[str, ast.expr], sizes: list[str], labels: Mapping[str, Labels | None]
) -> set[str]:
    """The sizes a term divides by, following the names it reads: a mean may divide by any of them."""
    found: set[str] = set()
    pending, visited = [node], set()
    while pending:
        expr = pending.pop()
        for sub in ast.walk(expr):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Div):
                found |= {n.id for n in ast.walk(sub.right) if isinstance(n, ast.Name) and n.id in sizes}
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "mean":
                # the sizes of the axes it averages over, where known; any size otherwise
                over = _labels(sub.args[0], labels) if sub.args else None
                found |= set(sizes) if over is None else {n for n in over if n in sizes}
            elif isinstance(sub, ast.Name) and sub.id in definitions and sub.id not in visited:
                visited.add(sub.id)
                pending.append(definitions[sub.id])
    return found


@dataclass(frozen=True)
class _Pair:
    of: str
    wrt: str


def _differentiated(exercise: Exercise) -> list[_Pair]:
    pairs = []
    for ret in exercise.spec.returns:
        target = ret.grad or ret.vjp
        if target is not None:
            pairs.append(_Pair(target.of, target.wrt))
    return list(dict.fromkeys(pairs))


def _reaching(program: Program, inputs: set[str]) -> dict[str, set[str]]:
    """The inputs each assigned name depends on through a gradient path (detach cuts it)."""
    reached: dict[str, set[str]] = {}

    def of(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "detach":
            return set()
        if isinstance(node, ast.Name):
            return reached.get(node.id, {node.id} if node.id in inputs else set())
        found: set[str] = set()
        for child in ast.iter_child_nodes(node):
            found |= of(child)
        return found

    for assignment in program.assignments:
        reached[assignment.target] = of(assignment.expr)
    return reached


def _still_reached(exercise: Exercise, variant: Program, pairs: list[_Pair]) -> tuple[str, str] | None:
    """The first (input, function) the change cuts a path between, where the input still reaches the
    function along another; None where it cuts none, or every one."""
    inputs = set(exercise.spec.inputs)
    before, after = _reaching(exercise.program, inputs), _reaching(variant, inputs)
    for pair in pairs:
        kept = pair.wrt in before.get(pair.of, set()) and pair.wrt in after.get(pair.of, set())
        # the change must lie on one of its paths: the name or statistic detached reads the input
        if kept and _cuts(exercise.program, variant, pair, inputs):
            return pair.wrt, pair.of
    return None


def _cuts(program: Program, variant: Program, pair: _Pair, inputs: set[str]) -> bool:
    """Whether some detach() added in `variant` wraps a value that depends on `pair.wrt` and feeds
    `pair.of`."""
    reached = _reaching(program, inputs)
    feeds = _ancestors(program, pair.of)
    for old, new in zip(program.assignments, variant.assignments, strict=True):
        if old.target not in feeds:
            continue
        for node in ast.walk(new.expr):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "detach":
                inner = node.args[0]
                names = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name)}
                reads = pair.wrt in names or any(pair.wrt in reached.get(n, set()) for n in names)
                if reads and ast.unparse(node) not in ast.unparse(old.expr):
                    return True
    return False


def _ancestors(program: Program, target: str) -> set[str]:
    """The assigned names `target` is computed from, itself included."""
    definitions = {a.target: a.expr for a in program.assignments}
    found, pending = {target}, [target]
    while pending:
        expr = definitions.get(pending.pop())
        if expr is None:
            continue
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in definitions and node.id not in found:
                found.add(node.id)
                pending.append(node.id)
    return found


def _all_labels(exercise: Exercise) -> dict[str, Labels | None]:
    """Each input's and assigned name's axes, by the size expressions of its shape; None where unknown."""
    labels: dict[str, Labels | None] = {}
    for name, spec in exercise.spec.inputs.items():
        labels[name] = tuple(str(entry) for entry in spec.shape)
    for size in exercise.spec.sizes:
        labels[size] = ()
    for assignment in exercise.program.assignments:
        labels[assignment.target] = _labels(assignment.expr, labels)
    return labels


def _labels(node: ast.expr, env: Mapping[str, Labels | None]) -> Labels | None:
    """The axes of an expression's value, where the graph makes them plain; None otherwise."""
    match node:
        case ast.Constant():
            return ()
        case ast.Name(id=name):
            return env.get(name)
        case ast.UnaryOp(operand=operand):
            return _labels(operand, env)
        case ast.Attribute(value=value):
            inner = _labels(value, env)
            return None if inner is None else inner[:-2] + inner[-2:][::-1]
        case ast.BinOp(left=left, op=ast.MatMult(), right=right):
            a, b = _labels(left, env), _labels(right, env)
            if a is None or b is None or not a or not b:
                return None
            if len(b) == 1:
                return a[:-1]
            if len(a) == 1:
                return b[:-2] + b[-1:]
            return a[:-1] + b[-1:]
        case ast.BinOp(left=left, right=right):
            return _broadcast(_labels(left, env), _labels(right, env))
        case ast.Subscript(slice=ast.Tuple(elts=[ast.Call(func=ast.Name(id="arange"), args=[size]), *_])):
            return (ast.unparse(size),)  # scores[arange(N), y]: one entry per row picked
        case ast.Call(func=ast.Name(id=function), args=args, keywords=keywords) if args:
            return _call_labels(function, args, keywords, env)
    return None


def _broadcast(a: Labels | None, b: Labels | None) -> Labels | None:
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return a if len(a) > len(b) else b
    return tuple(y if x == "1" else x for x, y in zip(a, b, strict=True))


def _call_labels(
    function: str, args: list[ast.expr], keywords: list[ast.keyword], env: Mapping[str, Labels | None]
) -> Labels | None:
    first = _labels(args[0], env)
    if function in _ELEMENTWISE | _ONE_AXIS | {"layer_norm"}:
        return first
    if function in ("maximum", "minimum", "where"):
        found: Labels | None = first
        for arg in args[1:]:
            found = _broadcast(found, _labels(arg, env))
        return found
    if function == "reshape":
        entries = args[1].elts if len(args) == 2 and isinstance(args[1], ast.Tuple) else args[1:]
        return tuple(ast.unparse(e) for e in entries)
    if function == "one_hot" and first is not None and len(args) == 2:
        return (*first, ast.unparse(args[1]))
    if function in _STATISTICS and not any(k.arg == "dim" for k in keywords):
        return ()  # over every axis: a scalar, whatever it reduces
    if function in _STATISTICS and first is not None:
        call = ast.Call(ast.Name(function, ast.Load()), args, keywords)
        axes = _axes(call, first)
        keep = any(
            k.arg == "keepdim" and isinstance(k.value, ast.Constant) and k.value.value for k in keywords
        )
        if axes is None:
            has_dim = any(k.arg == "dim" for k in keywords)
            return None if has_dim else ()
        if keep:
            return tuple("1" if k in axes else label for k, label in enumerate(first))
        return tuple(label for k, label in enumerate(first) if k not in axes)
    return None
