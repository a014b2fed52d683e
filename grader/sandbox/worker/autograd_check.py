"""The autograd check."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from typing import Any

# The autograd check (judging/provenance.py). On the few trials the grader picked in secret, every gradient
# torch's autograd or forward-mode AD gives is multiplied by factors drawn here from os.urandom, uniform in
# [1.25, 1.75]: one for each backward call's seeds, one for each edge of the graph it runs backward through
# (every gradient a node passes on, so each leaf's `.grad`, each retained `z.grad` and each hook sees its
# own product of them), one for each result of `autograd.grad`, and one for each tangent made or unpacked
# in forward mode. A probe (another call, another leaf or output in the same call) meets factors of its
# own, so nothing it shows can be divided out of the real gradient; a gradient derived by hand meets none.
# Each factor is at least 1.25: a copy is off by 25% at least on the checked trial. The generators the
# student's code draws from (random, numpy, torch) are not touched: a checked trial is seeded as any.
_CHECK_LOW, _CHECK_HIGH = 1.25, 1.75


class _AutogradCheck:
    """Whether the trial running is checked, and what `install_autograd_check` replaced, to put back."""

    def __init__(self) -> None:
        self.on = False
        self.replaced: list[tuple[Any, str, Any]] = []  # (owner, attribute, original)


_check = _AutogradCheck()


def _factor() -> float:
    """A factor from the kernel's generator: nothing the student's code seeds or reads decides it."""
    return _CHECK_LOW + (_CHECK_HIGH - _CHECK_LOW) * int.from_bytes(os.urandom(7), "little") / (1 << 56)


def _times_factor(value: Any) -> Any:
    return None if value is None else value * _factor()


def _graph_nodes(outputs: Any) -> list[Any]:
    """Every node of the graph behind `outputs` (tensors, or GradientEdges), each once."""
    stack = [o.grad_fn if hasattr(o, "grad_fn") else getattr(o, "node", None) for o in outputs]
    seen: set[Any] = set()
    nodes = []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return nodes


def _scramble_edge(grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """A node's post-hook: each gradient it passes on, times a factor of its own."""
    return tuple(map(_times_factor, grad_inputs))


class _CheckedEngine:
    """torch's autograd engine (Variable._execution_engine), through which backward(), autograd.grad,
    autograd.functional and torch.func's grad, vjp, jacrev and hessian all run: on a checked trial, its
    seeds, every edge of the graph and every result each times its own factor; on any other, the engine
    itself. The same object on every trial: the submission captures it at import, and its type says
    nothing of the trial."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def run_backward(self, outputs: Any, seeds: Any, *args: Any, **kwargs: Any) -> Any:
        if not _check.on:
            return self._engine.run_backward(outputs, seeds, *args, **kwargs)
        handles = []
        for node in _graph_nodes(outputs):
            with contextlib.suppress(Exception):  # a node that takes no hook passes its gradient on as is
                handles.append(node.register_hook(_scramble_edge))
        try:
            results = self._engine.run_backward(outputs, tuple(map(_times_factor, seeds)), *args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
        # backward() accumulates into the leaves and returns nothing; autograd.grad, the gradients
        return results if results is None else tuple(map(_times_factor, results))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def install_autograd_check() -> bool:
    """Put the check's hooks in torch, once, for the life of the process (the sandboxed worker) or until
    `remove_autograd_check` (the grader's own process): the engine, a new engine made from torch._C, and
    forward mode's make_dual and unpack_dual (torch.func.jvp and jacfwd use them). False without torch."""
    if _check.replaced:
        return True
    try:
        import torch
        import torch._functorch.predispatch as predispatch
        import torch.autograd.variable
    except ImportError:
        return False
    variable = sys.modules["torch.autograd.variable"]  # the module: torch.autograd.variable is a function
    engine_type = torch._C._ImperativeEngine

    def new_engine() -> _CheckedEngine:
        return _CheckedEngine(engine_type())

    make_dual, unpack_dual = predispatch._make_dual, predispatch._unpack_dual

    @functools.wraps(make_dual)
    def checked_make_dual(tensor: Any, tangent: Any, *args: Any, **kwargs: Any) -> Any:
        return make_dual(tensor, _times_factor(tangent) if _check.on else tangent, *args, **kwargs)

    @functools.wraps(unpack_dual)
    def checked_unpack_dual(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        primal, tangent = unpack_dual(tensor, *args, **kwargs)
        return primal, _times_factor(tangent) if _check.on else tangent

    replacements = [
        (variable.Variable, "_execution_engine", _CheckedEngine(variable.Variable._execution_engine)),
        (torch._C, "_ImperativeEngine", new_engine),
        (variable, "ImperativeEngine", new_engine),
        (predispatch, "_make_dual", checked_make_dual),
        (predispatch, "_unpack_dual", checked_unpack_dual),
    ]
    for owner, name, replacement in replacements:
        _check.replaced.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)
    return True


def remove_autograd_check() -> None:
    """Put back what `install_autograd_check` replaced."""
    while _check.replaced:
        owner, name, original = _check.replaced.pop()
        setattr(owner, name, original)


@contextlib.contextmanager
def autograd_checked(on: bool) -> Iterator[None]:
    """A trial, checked (`on`) or not: the check's factors apply only inside."""
    _check.on = on
    try:
        yield
    finally:
        _check.on = False
