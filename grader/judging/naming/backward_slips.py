"""Slips of a backward pass written by hand, derived from any exercise's graph: one generator per family.

Each yields GraphSlips (mistakes.py): the exercise with its graph changed so that reference_returns
computes what the mistaken code returns. A slip made in the backward only keeps the forward's value with
the straight-through form `detach(F) + (G - detach(G))` (the value of F, the gradient of G), or calls one
of the graph's internal operations (grader/exercise/backward_ops.py) written that way.

  reshape_for_transpose  x.reshape(k, m) @ dout where x.T @ dout belongs (or dout @ w.reshape(n, k) for
                         dout @ w.T), in the backward of each matrix product
  overwritten            pooling or convolution windows assigned in dx instead of added (dx[...] = for +=)
  time_shift             tanh' or sigmoid' taken at the previous time step's state (prev_h for next_h)
  gate_order             stacked blocks of one tensor (an LSTM's gates) read in another order
  factor_dropped         one factor of a product missing from the other's gradient (dprev_c = dnext_c,
                         without the forget gate)

Only graphs are mutated: an exercise whose values come from a reference function gets none. Shapes
are read from the graph evaluated on a few trials (without gradients), so that a candidate is yielded
only where it can differ (a reshape of a vector is its transpose; windows that never overlap).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np
import torch

from grader.exercise.graph import Assignment, Program, evaluate
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial, make_trials
from grader.judging.naming.slips import GraphSlip, expression_nodes
from grader.outcomes import MistakeFamily

_PROBES = 5  # trials of distinct sizes whose shapes must all agree (one could match by chance, N == H)
_SIZE_PROBES = 48  # trials whose sizes tell whether windows can overlap (a stride of 1 drawn 1 time in 3)


@dataclass(frozen=True)
class SlipProbe:
    """What the graph's slips are derived from: each probe trial's values (inputs, sizes and every
    assigned name), and the names whose values depend on an input some return is differentiated by."""

    values: tuple[Mapping[str, object], ...]
    sizes: tuple[Mapping[str, int], ...]
    varying: frozenset[str]
    gradient_of: Mapping[str, str]  # input -> the return holding its gradient

    def shapes(self, expr: ast.expr) -> list[tuple[int, ...]] | None:
        """The expression's shape on each probe trial; None where it cannot be evaluated."""
        found = []
        for values in self.values:
            try:
                value = evaluate(Program((Assignment("_probe", expr, 0),)), values)["_probe"]
            except Exception:  # a sub-expression the probe cannot evaluate alone: no shape known
                return None
            found.append(tuple(value.shape) if isinstance(value, torch.Tensor) else ())
        return found

    def numbers(self, expr: ast.expr) -> list[int] | None:
        """An integer expression over sizes (a slice's bound, a kernel) on each probe; None if not one."""
        found = []
        for sizes in self.sizes:
            try:
                value = evaluate(Program((Assignment("_probe", expr, 0),)), sizes)["_probe"]
            except Exception:  # it reads a tensor, or is no number
                return None
            if not isinstance(value, int):
                return None
            found.append(value)
        return found

    def depends(self, expr: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.varying for n in ast.walk(expr))


def backward_slips(exercise: Exercise) -> Iterator[GraphSlip]:
    """Every family's slips of the exercise's graph (none without a graph)."""
    probe = _probe(exercise)
    if probe is None:
        return
    for family in (reshape_for_transpose, overwritten, time_shift, gate_order, factor_dropped):
        yield from family(exercise, probe)


def _probe(exercise: Exercise) -> SlipProbe | None:
    if exercise.spec.graph is None or not exercise.program.assignments:
        return None
    trials: list[Trial] = []
    seen: set[tuple[tuple[str, int], ...]] = set()
    for trial in make_trials(exercise, 0, 4 * _PROBES):
        if trial.size_key not in seen and len(trials) < _PROBES:
            seen.add(trial.size_key)
            trials.append(trial)
    values = []
    try:
        with torch.no_grad():
            for trial in trials:
                env: dict[str, object] = {name: _tensor(a) for name, a in trial.inputs.items()}
                env.update(trial.sizes)
                values.append(evaluate(exercise.program, env))
    except Exception:  # a graph that fails on a probe fails in the reference too, and says so there
        return None
    wrt: dict[str, str] = {}
    for ret in exercise.spec.returns:
        target = ret.grad or ret.vjp
        if target is not None:
            wrt.setdefault(target.wrt, ret.name)
    varying = set(wrt)
    for assignment in exercise.program.assignments:
        if any(isinstance(n, ast.Name) and n.id in varying for n in ast.walk(assignment.expr)):
            varying.add(assignment.target)
    sizes = tuple(dict(t.sizes) for t in make_trials(exercise, 0, _SIZE_PROBES))
    return SlipProbe(tuple(values), sizes, frozenset(varying), wrt)


def _tensor(array: np.ndarray) -> torch.Tensor:
    tensor = torch.from_numpy(np.array(array))
    return tensor if tensor.dtype == torch.int64 else tensor.to(torch.float64)


def _call(name: str, *args: ast.expr) -> ast.expr:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _detach(node: ast.expr) -> ast.expr:
    return _call("detach", node)


def _straight_through(value: ast.expr, gradient: ast.expr) -> ast.expr:
    """`detach(value) + (gradient - detach(gradient))`: value's value bit for bit (the difference is an
    exact 0), gradient's gradient."""
    zero = ast.BinOp(gradient, ast.Sub(), _detach(gradient))
    return ast.fix_missing_locations(ast.BinOp(_detach(value), ast.Add(), zero))


def _with_nodes(exercise: Exercise, position: int, changes: Mapping[int, ast.expr]) -> Exercise:
    """The exercise with the nodes of one assignment at these indices (ast.walk order) replaced."""
    assignments = list(exercise.program.assignments)
    old = assignments[position]
    copy = ast.parse(ast.unparse(old.expr), mode="eval").body
    walked = expression_nodes(copy)
    targets = {id(walked[index]): replacement for index, replacement in changes.items()}

    class Swap(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            found = targets.get(id(node))
            return found if found is not None else super().visit(node)

    swapped = ast.fix_missing_locations(Swap().visit(copy))
    assert isinstance(swapped, ast.expr)
    assignments[position] = Assignment(old.target, swapped, old.line)
    return replace(exercise, program=Program(tuple(assignments)))


def _statement(assignment: Assignment) -> str:
    return f"`{assignment.target} = {ast.unparse(assignment.expr)}`"


def reshape_for_transpose(exercise: Exercise, probe: SlipProbe) -> Iterator[GraphSlip]:
    """In the backward of each matrix product a @ b: d b = a.reshape(k, m) @ g where a.T @ g belongs
    (cs231n's affine dw = x.reshape(D, N) @ dout), and d a = g @ b.reshape(n, k) where g @ b.T belongs.
    Yielded only where the reshape differs from the transpose (neither of the matrix's sides is 1) and
    from the matrix itself (a square one reshaped is itself: the transpose forgotten, which the operand
    transposed of graph_mutants names). And d a = (b @ g.reshape(n, m)).reshape(m, k) where (b @ g.T).T
    belongs: the upstream gradient reshaped (cs231n's affine dx from w @ dout)."""
    for position, assignment in enumerate(exercise.program.assignments):
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
                continue
            left, right = probe.shapes(node.left), probe.shapes(node.right)
            if left is None or right is None:
                continue
            product, a, b = ast.unparse(node), ast.unparse(node.left), ast.unparse(node.right)
            where = f"the gradient through {product} ({_statement(assignment)})"
            pairs = list(zip(left, right, strict=True))
            rows_reshaped = (
                probe.depends(node.right)
                and all(len(s) >= 2 and len(t) in (1, 2) for s, t in pairs)
                and any(int(np.prod(s[:-1])) > 1 and s[-1] > 1 for s in left)
                and any(int(np.prod(s[:-1])) != s[-1] for s in left)
            )
            if rows_reshaped:
                yield GraphSlip(
                    f"{a}.reshape where {a}.T belongs in {where}",
                    MistakeFamily.RESHAPE_FOR_TRANSPOSE,
                    f"your values are what {a}.reshape(k, m) @ dout gives where {a}.T @ dout belongs, in "
                    f"the gradient of {b} through {product}: a reshape keeps the entries in their order "
                    f"and does not swap the axes; use {a}.T (for a batch, {a}.reshape(-1, k).T)",
                    _with_nodes(exercise, position, {k: _reshaped(node, 0)}),
                )
            columns_reshaped = (
                probe.depends(node.left)
                and all(len(t) == 2 and len(s) >= 1 for s, t in pairs)
                and any(t[0] > 1 and t[1] > 1 for t in right)
                and any(t[0] != t[1] for t in right)
            )
            if columns_reshaped:
                yield GraphSlip(
                    f"{b}.reshape where {b}.T belongs in {where}",
                    MistakeFamily.RESHAPE_FOR_TRANSPOSE,
                    f"your values are what dout @ {b}.reshape(n, k) gives where dout @ {b}.T belongs, in "
                    f"the gradient of {a} through {product}: a reshape keeps the entries in their order "
                    f"and does not swap the axes; use {b}.T",
                    _with_nodes(exercise, position, {k: _reshaped(node, 1)}),
                )
            if columns_reshaped and any(int(np.prod(s[:-1])) != t[1] for s, t in pairs):
                yield GraphSlip(
                    f"the upstream gradient reshaped where its transpose belongs in {where}",
                    MistakeFamily.RESHAPE_FOR_TRANSPOSE,
                    f"your values are what ({b} @ dout.reshape(n, m)).reshape(m, k) gives where "
                    f"({b} @ dout.T).T, that is dout @ {b}.T, belongs, in the gradient of {a} through "
                    f"{product}: a reshape keeps the entries in their order and does not swap the axes; "
                    f"use dout @ {b}.T",
                    _with_nodes(exercise, position, {k: _reshaped(node, 2)}),
                )


def _reshaped(node: ast.BinOp, side: int) -> ast.expr:
    return ast.fix_missing_locations(_call("slip_matmul_reshaped", node.left, node.right, ast.Constant(side)))


_POOLS = {"max_pool1d", "max_pool2d"}
_CONVOLUTIONS = {"conv1d", "conv2d"}


def overwritten(exercise: Exercise, probe: SlipProbe) -> Iterator[GraphSlip]:
    """Overlapping windows, or repeated indices (W[x]: dW[x] = dout), assigned instead of added, in the
    loop order students write (n, c or f, i, j; the last write wins): max pooling's dx[max] = dout and
    dx[window] = mask * dout, a convolution's dx_pad[n, :, window] = w[f] * dout[n, f, i, j]. Pooling
    only where a drawn stride is below the window; a convolution always (its F filters write the same
    window, unless F and the overlap are 1)."""
    integers = {name for name, spec in exercise.spec.inputs.items() if spec.is_integer}
    for position, assignment in enumerate(exercise.program.assignments):
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Name)
                and node.slice.id in integers
                and probe.depends(node.value)
            ):
                table, rows = ast.unparse(node.value), node.slice.id
                assigned = _call("slip_index_assigned", node.value, node.slice)
                yield GraphSlip(
                    f"repeated indices assigned: d{table}[{rows}] = dout where they add up "
                    f"({_statement(assignment)})",
                    MistakeFamily.OVERWRITTEN,
                    f"your values are those of a backward that assigns d{table}[{rows}] = dout (or numpy's "
                    f"d{table}[{rows}] += dout, which is buffered): where an index repeats, only its last "
                    f"occurrence counts; use np.add.at(d{table}, {rows}, dout), or a loop with +=",
                    _with_nodes(exercise, position, {k: ast.fix_missing_locations(assigned)}),
                )
                continue
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            function = node.func.id
            if function in _POOLS and node.args and probe.depends(node.args[0]):
                kernel = node.args[1]
                given = [kw.value for kw in node.keywords if kw.arg == "stride"]
                stride = node.args[2] if len(node.args) > 2 else given[0] if given else ast.Constant(None)
                if not _can_overlap(probe, kernel, stride):
                    continue
                x = ast.unparse(node.args[0])
                for whole, how in (
                    (
                        0,
                        f"each window's dout assigned to its maximum (dx[max] = dout, not +=) in the "
                        f"backward of {function}({x}, ...)",
                    ),
                    (
                        1,
                        f"each window of d{x} overwritten with mask * dout (dx[window] = ..., not +=) in the "
                        f"backward of {function}({x}, ...)",
                    ),
                ):
                    call = _call("slip_max_pool_assigned", node.args[0], kernel, stride, ast.Constant(whole))
                    yield GraphSlip(
                        f"overlapping pooling windows assigned: {how} ({_statement(assignment)})",
                        MistakeFamily.OVERWRITTEN,
                        "your values are those of a backward that assigns each window's gradient (dx[...] = "
                        "...) where overlapping windows share entries: the last window's write wins and the "
                        "earlier ones are lost; add them up (dx[...] += ...)",
                        _with_nodes(exercise, position, {k: ast.fix_missing_locations(call)}),
                    )
            elif function in _CONVOLUTIONS and len(node.args) >= 2 and probe.depends(node.args[0]):
                named = {kw.arg: kw.value for kw in node.keywords if kw.arg is not None}
                rest = [*node.args[2:]]
                parts = [
                    rest[i] if i < len(rest) else named.get(key, ast.Constant(default))
                    for i, (key, default) in enumerate((("b", None), ("stride", 1), ("padding", 0)))
                ]
                x = ast.unparse(node.args[0])
                # Two loop forms of one mistake: over n, f, i, j (the last filter's share wins), or over
                # the windows only with the filters summed in each (the last window wins).
                for summed in (0, 1):
                    call = _call(
                        "slip_conv_assigned", node.args[0], node.args[1], *parts, ast.Constant(summed)
                    )
                    yield GraphSlip(
                        f"convolution windows assigned in d{x} (dx_pad[..., window] = ..., not +=) in the "
                        f"backward of {function} ({_statement(assignment)})",
                        MistakeFamily.OVERWRITTEN,
                        f"your d{x} keeps only the last write to each entry (the last window covering it, or "
                        "the last filter's share). Every filter, and every window that overlaps an entry, "
                        "adds to it: use dx_pad[...] += w[f] * dout[n, f, i, j]",
                        _with_nodes(exercise, position, {k: ast.fix_missing_locations(call)}),
                    )


def _can_overlap(probe: SlipProbe, kernel: ast.expr, stride: ast.expr) -> bool:
    """Whether some drawn sizes give a stride below the window along an axis (unknown: yes)."""
    if isinstance(stride, ast.Constant) and stride.value is None:
        return False  # the stride is the window's own: windows tile without overlap
    kernels, strides = _per_axis(probe, kernel), _per_axis(probe, stride)
    if kernels is None or strides is None:
        return True
    axes = max(len(kernels), len(strides))  # an int stands for every axis
    if len(kernels) == 1:
        kernels = kernels * axes
    if len(strides) == 1:
        strides = strides * axes
    return any(
        s < w
        for along_kernel, along_stride in zip(kernels, strides, strict=True)
        for w, s in zip(along_kernel, along_stride, strict=True)
    )


def _per_axis(probe: SlipProbe, expr: ast.expr) -> list[list[int]] | None:
    """A kernel's or stride's value on each probe, per axis (an int or a pair)."""
    parts = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    found = []
    for part in parts:
        numbers = probe.numbers(part)
        if numbers is None:
            return None
        found.append(numbers)
    return found


# A function's derivative as students write it from its output y: 1 - y**2 for tanh, y (1 - y) for sigmoid.
_FROM_OUTPUT = {"tanh": "1 - {y} ** 2", "sigmoid": "{y} * (1 - {y})"}
_STEP_WORDS = ("prev", "next", "old", "new", "last", "curr")


def time_shift(exercise: Exercise, probe: SlipProbe) -> Iterator[GraphSlip]:
    """A derivative taken at the previous time step's state: the state pairs are an input and a value the
    graph computes from it, of the same shape on every probe, named alike but for the step's word
    (prev_h and next_h; the names are the graph's only mark of which input is a step's state). For
    `next_h = tanh(a)`: tanh' written from the output at prev_h (1 - prev_h**2 for 1 - next_h**2); for a
    call tanh(next_c) anywhere: taken at prev_c (1 - tanh(prev_c)**2)."""
    pairs = _state_pairs(exercise, probe)
    if not pairs:
        return
    for position, assignment in enumerate(exercise.program.assignments):
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if not (
                isinstance(node, ast.Call) and getattr(node.func, "id", None) in _FROM_OUTPUT and node.args
            ):
                continue
            function: str = node.func.id  # type: ignore[attr-defined]
            form, argument = _FROM_OUTPUT[function], node.args[0]
            shifted: list[tuple[str, str, str]] = []  # (the value it belongs at, the one taken, the formula)
            if k == 0 and assignment.target in pairs:  # `next_h = tanh(a)`: its derivative from its output
                y, v = assignment.target, pairs[assignment.target]
                shifted.append((y, v, form.format(y=v)))
            if isinstance(argument, ast.Name) and argument.id in pairs:  # tanh(next_c): at prev_c
                y, v = f"{function}({argument.id})", f"{function}({pairs[argument.id]})"
                shifted.append((y, v, form.format(y=v)))
            for right, taken, formula in shifted:
                factor = ast.parse(formula, mode="eval").body
                gradient = ast.BinOp(argument, ast.Mult(), _detach(factor))
                name = (
                    f"{function}'s derivative taken at {taken}, the previous time step's, where {right} "
                    f"belongs: {formula} for {form.format(y=right)} ({_statement(assignment)})"
                )
                yield GraphSlip(
                    name,
                    MistakeFamily.TIME_SHIFT,
                    f"your values take the derivative of {function} at {taken}, a value of the previous time "
                    f"step: it belongs at this step's {right}, {form.format(y=right)}; check which of the "
                    "cached states your backward reads",
                    _with_nodes(exercise, position, {k: _straight_through(node, gradient)}),
                )


def _state_pairs(exercise: Exercise, probe: SlipProbe) -> dict[str, str]:
    """Computed state -> the input that is its previous time step's (next_h -> prev_h)."""
    pairs: dict[str, str] = {}
    sources: dict[str, set[str]] = {name: {name} for name in exercise.spec.inputs}
    for assignment in exercise.program.assignments:
        read = {n.id for n in ast.walk(assignment.expr) if isinstance(n, ast.Name)}
        sources[assignment.target] = set().union(*(sources.get(n, set()) for n in read))
        stem = _stem(assignment.target)
        if stem is None:
            continue
        for name in exercise.spec.inputs:
            # the previous step's state goes into the next one: prev_h into next_h, not a mere namesake
            if _stem(name) != stem or name not in sources[assignment.target]:
                continue
            shapes = {(_shape(v, assignment.target), _shape(v, name)) for v in probe.values}
            if all(a == b and a is not None for a, b in shapes):
                pairs[assignment.target] = name
    return pairs


def _shape(values: Mapping[str, object], name: str) -> tuple[int, ...] | None:
    value = values.get(name)
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _stem(name: str) -> str | None:
    """The name without its time-step word (prev_h -> h, next_c -> c); None without one."""
    for word in _STEP_WORDS:
        for form in (f"{word}_", word):
            if name.lower().startswith(form) and len(name) > len(form):
                return name[len(form) :].lstrip("_").lower()
    return None


@dataclass(frozen=True)
class _Block:
    position: int  # the assignment
    index: int  # the subscript's node, in ast.walk order
    gate: str  # the assignment's target
    function: str  # the function applied to the block ("" where none)
    node: ast.Subscript


def gate_order(exercise: Exercise, probe: SlipProbe) -> Iterator[GraphSlip]:
    """A tensor sliced into k stacked blocks of equal width along its last axis (an LSTM's a[:, 0:H] to
    a[:, 3H:4H]), each read by one assignment (gi, gf, go, gg), read in another order: in the forward and
    in the backward's concatenation of the gates' gradients alike, or in that concatenation only (the
    forward right: each gate's value from its own block, its gradient sent to another's). Of the k! - 1
    orders, those a student writes: two gates swapped (k(k-1)/2), and the one block of another function
    (g, the tanh among sigmoids) moved to another place, which the libraries' layouts differ by
    (PyTorch's and Keras' i, f, g, o; TensorFlow's i, g, f, o): 8 orders of 4 gates, not 23, each in
    both forms."""
    for base, blocks in _stacked_blocks(exercise, probe).items():
        gates = [b.gate for b in blocks]
        count = len(blocks)
        layouts: list[tuple[int, ...]] = []
        for i, j in itertools.combinations(range(count), 2):
            swapped = list(range(count))
            swapped[i], swapped[j] = swapped[j], swapped[i]
            layouts.append(tuple(swapped))
        functions = [b.function for b in blocks]
        odd = [i for i, f in enumerate(functions) if functions.count(f) == 1]
        if count > 2 and len(odd) == 1:
            for place in range(count):
                moved = [g for g in range(count) if g != odd[0]]
                moved.insert(place, odd[0])
                if tuple(moved) not in layouts and moved != list(range(count)):
                    layouts.append(tuple(moved))
        ours = ", ".join(gates)
        for layout in layouts:
            theirs = ", ".join(gates[g] for g in layout)
            yield GraphSlip(
                f"the gates in the order {theirs} ({base}'s blocks of columns), where the exercise has "
                f"{ours}",
                MistakeFamily.GATE_ORDER,
                f"your values are those of the gates read from {base}'s blocks in the order {theirs}; the "
                f"exercise stacks them as {ours}: use that order in the forward's slices and in the "
                "backward's concatenation of the gates' gradients",
                _reordered(exercise, blocks, layout, backward_only=False),
            )
            yield GraphSlip(
                f"the gates' gradients stacked in the order {theirs} into d{base} ({base}'s blocks of "
                f"columns), where the forward has {ours}",
                MistakeFamily.GATE_ORDER,
                f"your forward reads the gates in the exercise's order, {ours}, but your backward stacks "
                f"their gradients into d{base} in the order {theirs}: concatenate them in the forward's "
                "order",
                _reordered(exercise, blocks, layout, backward_only=True),
            )


def _reordered(
    exercise: Exercise, blocks: list[_Block], layout: tuple[int, ...], backward_only: bool
) -> Exercise:
    """The exercise with gate layout[b] reading block b: in the forward and the backward, or (backward_only)
    with each gate's value its own block's and its gradient sent to block b."""
    changes: dict[int, dict[int, ast.expr]] = {}
    for place, gate in enumerate(layout):
        source = blocks[gate]
        wrong: ast.expr = blocks[place].node
        if backward_only:
            wrong = _straight_through(source.node, wrong)
        changes.setdefault(source.position, {})[source.index] = wrong
    variant = exercise
    for position, change in changes.items():
        variant = _with_nodes(variant, position, change)
    return variant


def _stacked_blocks(exercise: Exercise, probe: SlipProbe) -> dict[str, list[_Block]]:
    """Each tensor's blocks, in the order of their columns, where they tile its last axis from 0 in equal
    widths on every probe (one assignment per block)."""
    groups: dict[tuple[str, str], list[tuple[_Block, list[int], list[int]]]] = {}
    for position, assignment in enumerate(exercise.program.assignments):
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
                continue
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            last = parts[-1]
            if not isinstance(last, ast.Slice) or last.upper is None or last.step is not None:
                continue
            lower = probe.numbers(last.lower) if last.lower is not None else [0] * len(probe.sizes)
            upper = probe.numbers(last.upper)
            if lower is None or upper is None:
                continue
            others = ", ".join(ast.unparse(p) for p in parts[:-1])
            enclosing = next(
                (
                    c.func.id
                    for c in ast.walk(assignment.expr)
                    if isinstance(c, ast.Call)
                    and isinstance(c.func, ast.Name)
                    and any(a is node for a in c.args)
                ),
                "",
            )
            block = _Block(position, k, assignment.target, enclosing, node)
            groups.setdefault((node.value.id, others), []).append((block, lower, upper))
    found: dict[str, list[_Block]] = {}
    for (base, _), members in groups.items():
        if len(members) < 2 or len({m[0].position for m in members}) != len(members):
            continue
        members.sort(key=lambda m: m[1][0])
        tiled = all(
            members[0][1][p] == 0
            and all(m[2][p] - m[1][p] == members[0][2][p] > 0 for m in members)
            and all(a[2][p] == b[1][p] for a, b in itertools.pairwise(members))
            for p in range(len(probe.sizes))
        )
        if tiled and base not in found:
            found[base] = [m[0] for m in members]
    return found


def factor_dropped(exercise: Exercise, probe: SlipProbe) -> Iterator[GraphSlip]:
    """One factor of a product missing from the other's gradient, the forward right (dprev_c = dnext_c
    where dnext_c * f belongs): for each product p * q of which the dropped factor is computed by the
    graph from what is differentiated (a gate, tanh(c); not an input such as a regularisation strength, nor
    a constant mask such as one_hot(y)) and the other carries a gradient; a square x * x is left to the
    standard mistakes (half the value)."""
    computed = set(exercise.program.defined)
    for position, assignment in enumerate(exercise.program.assignments):
        for k, node in enumerate(expression_nodes(assignment.expr)):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
                continue
            if ast.unparse(node.left) == ast.unparse(node.right):
                continue  # a square: its derivative's factor 2 is the standard mistakes' "half the value"
            for dropped, kept in ((node.left, node.right), (node.right, node.left)):
                if not (_computed(dropped, computed) and probe.depends(dropped) and probe.depends(kept)):
                    continue
                # the product's value and dropped's gradient, with kept's gradient the upstream alone
                product_kept = ast.BinOp(dropped, ast.Mult(), _detach(kept))
                zero = ast.BinOp(kept, ast.Sub(), _detach(kept))
                gradient = ast.BinOp(product_kept, ast.Add(), zero)
                of = ast.unparse(kept)
                receiver = probe.gradient_of.get(of) if isinstance(kept, ast.Name) else None
                where = receiver if receiver is not None else f"the gradient of {of}"
                factor, product = ast.unparse(dropped), ast.unparse(node)
                yield GraphSlip(
                    f"the factor {factor} missing from {where} through `{product}` "
                    f"({_statement(assignment)})",
                    MistakeFamily.DERIVATIVE_MISSING,
                    f"your values are those of a backward where the gradient reaching {of} through {product} "
                    f"lacks the factor {factor}: the derivative of {product} with respect to {of} is "
                    f"{factor} (times the upstream gradient)",
                    _with_nodes(exercise, position, {k: ast.fix_missing_locations(gradient)}),
                )


def _computed(node: ast.expr, computed: set[str]) -> bool:
    """A factor the graph computes (a gate, tanh(c)), not an input or a constant."""
    if isinstance(node, ast.Name):
        return node.id in computed
    return isinstance(node, ast.Call) and any(
        isinstance(n, ast.Name) and n.id in computed for n in ast.walk(node)
    )
