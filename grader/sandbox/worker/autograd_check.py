"""The checked worker's autograd: wrong on every route, for the life of the process.

The autograd check (judging/provenance.py) runs a hand-in's checked trials a second time, in a worker of
their own (forked fresh from the zygote, `"checked": true` in its hand-in frame), where this module has made
every gradient torch can give wrong before the hand-in is imported. Nothing here is ever off: there is no
flag to find, no trial to recognise, and the ordinary worker, which the grades' values come from, has none
of it. A return derived by hand gives the same bits in both workers; one taken from autograd, any route, does
not. Factors come from os.urandom, uniform in [1.25, 1.75]: a copy is off by 25% at least, and a probe
meets factors of its own, which say nothing of those on the real gradient.

Routes, and what makes each wrong (measured with torch 2.13, tests/provenance_attacks/):
- the engine (`Variable._execution_engine.run_backward`: backward(), autograd.grad, autograd.functional,
  torch.func's grad, vjp, jacrev, hessian): a factor on its seeds, on every edge of the graph (a post-hook
  on each node) and on each result; a new engine made from torch._C is wrapped alike;
- forward mode (forward_ad, torch.func.jvp, jacfwd): a factor per tangent made or read, under every name
  torch gives those two functions (predispatch's, torch's, torch._VF's through the object it reads, the
  aten operators torch.ops.aten._make_dual and _unpack_dual): forward-mode formulas read no saved tensor;
- a backward formula run without the engine (a grad_fn node called directly, a graph walked by hand through
  next_functions, a make_fx trace replayed): default saved-tensor hooks, pushed here, whose unpack returns
  each saved tensor times a factor of its own, so every formula that reads what its forward saved is wrong
  wherever it runs; torch.func refuses default hooks ("don't yet support saved tensor hooks"), so its
  check (`torch.autograd.graph.disable_saved_tensors_hooks`) is made a no-op: under the hooks torch.func
  works and is wrong like the rest (honest torch.func code for auto_grad still runs to its end);
- hooks are per thread: every thread started through `_thread` / `threading` starts with them pushed;
- hooks a hand-in pushes (saved_tensors_hooks, save_on_cpu) apply on top of the grader's, whose unpack
  takes what theirs gives; popping (`_pop_saved_tensors_default_hooks`) stops at the grader's own entry,
  and disabling them (`_saved_tensors_hooks_disable`) is refused.

Not closed (docs/security.md): a backward formula that reads no saved tensor (the node of an addition, of a
sum) is exact, though a whole graph's gradient always passes one that does; and this module's objects live
in the hand-in's process, so code that digs torch's original functions out of the wrappers below (their
closures, attributes, gc) or reaches torch's operators below their Python names (the dispatcher's own
lookups) gets autograd's exact values here too, and passes: in the hand-in's process the check can make a
copy cost reading this module and torch's internals, not make it impossible.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

# Each factor at least 1.25: a gradient taken from autograd is off by 25% at least (measured on graph2's
# copies: 84% to 1,282% of the largest entry, several factors compounding).
_CHECK_LOW, _CHECK_HIGH = 1.25, 1.75


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
    """torch's autograd engine, its seeds, every edge of the graph and every result each times a factor."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def run_backward(self, outputs: Any, seeds: Any, *args: Any, **kwargs: Any) -> Any:
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


def _scaled_make_dual(make_dual: Callable[..., Any]) -> Callable[..., Any]:
    """Forward mode's way in, a dual tensor made from a primal and its tangent: the tangent times a factor.
    Every name torch gives it is replaced (predispatch's, torch._VF's, torch's, the aten operator's): the
    forward-mode formulas read no saved tensor, so this is all that makes forward mode wrong."""

    def checked_make_dual(tensor: Any, tangent: Any, *args: Any, **kwargs: Any) -> Any:
        return make_dual(tensor, _times_factor(tangent), *args, **kwargs)

    return checked_make_dual


def _scaled_unpack_dual(unpack_dual: Callable[..., Any]) -> Callable[..., Any]:
    """Forward mode's way out: the tangent read from a dual tensor, times a factor."""

    def checked_unpack_dual(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        primal, tangent = unpack_dual(tensor, *args, **kwargs)
        return primal, _times_factor(tangent)

    return checked_unpack_dual


class _CheckedFunctions:
    """torch._C._VariableFunctions (what torch._VF reads), its forward-mode functions wrapped."""

    def __init__(self, functions: Any) -> None:
        self._functions = functions
        self._make_dual = _scaled_make_dual(functions._make_dual)
        self._make_dual_copy = _scaled_make_dual(functions._make_dual_copy)
        self._unpack_dual = _scaled_unpack_dual(functions._unpack_dual)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._functions, name)

    def __dir__(self) -> list[str]:
        return dir(self._functions)


class _CheckedOperator:
    """An aten operator of forward mode (torch.ops.aten._make_dual), called as a packet or through an
    overload (`.default`): both wrapped alike; anything else asked of it is the operator's."""

    def __init__(self, packet: Any, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        self._call = wrap(packet)
        self.default = wrap(packet.default)
        self._packet = packet

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._packet, name)


def _pack(tensor: Any) -> Any:
    return tensor


def _unpack(tensor: Any) -> Any:
    """A saved tensor as a backward formula reads it: times a factor of its own (floating and complex
    tensors: an index or a mask saved for the backward is read as it is)."""
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor * _factor()
    return tensor


class _Hooks:
    """How many default saved-tensor hooks the hand-in pushed above the grader's, per thread: a pop with
    none of its own left would take the grader's."""

    def __init__(self, push: Callable[..., Any], pop: Callable[[], Any]) -> None:
        self._push, self._pop = push, pop
        self._depth: dict[int, int] = {}

    def install(self) -> None:
        """The grader's hooks, at the bottom of this thread's stack."""
        self._push(_pack, _unpack)

    def pushed(self, pack: Callable[[Any], Any], unpack: Callable[[Any], Any]) -> Any:
        """The hand-in's hooks, above the grader's: only the top pair applies, so its unpack's result is
        passed through the grader's (save_on_cpu, checkpointing still work, and are wrong like the rest)."""
        result = self._push(pack, lambda packed: _unpack(unpack(packed)))
        key = _thread_id()
        self._depth[key] = self._depth.get(key, 0) + 1
        return result

    def popped(self) -> Any:
        key = _thread_id()
        if self._depth.get(key, 0) <= 0:
            return None  # the grader's own: stays
        self._depth[key] -= 1
        return self._pop()


def _thread_id() -> int:
    import _thread

    return _thread.get_ident()


def install_checked_autograd() -> bool:
    """Make every gradient torch gives wrong, for the life of the process, before the hand-in is
    imported (only ever in the checked worker). False without torch."""
    try:
        import torch
        import torch._functorch.predispatch as predispatch
        import torch.autograd.graph
        import torch.autograd.variable
    except ImportError:
        return False
    import _thread
    import threading

    variable = sys.modules["torch.autograd.variable"]  # the module: torch.autograd.variable is a function
    engine_type = torch._C._ImperativeEngine
    autograd_c = torch._C._autograd

    def new_engine() -> _CheckedEngine:
        return _CheckedEngine(engine_type())

    dual_makers = {
        (owner, name): _scaled_make_dual(getattr(owner, name))
        for owner in (predispatch, torch)
        for name in ("_make_dual", "_make_dual_copy")
        if hasattr(owner, name)
    }
    dual_readers = {
        (owner, "_unpack_dual"): _scaled_unpack_dual(owner._unpack_dual)
        for owner in (predispatch, torch)
        if hasattr(owner, "_unpack_dual")
    }
    # torch._VF and torch._C's functions: an immutable type's, so the object that holds them is replaced.
    functions = _CheckedFunctions(torch._C._VariableFunctions)
    vf = sys.modules.get("torch._VF")
    aten = torch.ops.aten
    operators = {
        (aten, name): _CheckedOperator(getattr(aten, name), wrap)
        for name, wrap in (
            ("_make_dual", _scaled_make_dual),
            ("_make_dual_copy", _scaled_make_dual),
            ("_unpack_dual", _scaled_unpack_dual),
        )
    }

    hooks = _Hooks(autograd_c._push_saved_tensors_default_hooks, autograd_c._pop_saved_tensors_default_hooks)

    @contextlib.contextmanager
    def hooks_stay_on(message: str) -> Iterator[None]:
        """torch.func's refusal of saved-tensor hooks, made a no-op: under the grader's, it runs and is
        wrong like every other route (measured: grad, vjp, jacrev, hessian, vmap of grad)."""
        yield

    def refuse_disable(message: str, fail_if_non_empty: bool = True) -> None:
        """Disabling the default hooks would take the grader's: refused as torch refuses it while hooks
        are on the stack."""
        raise RuntimeError(message)

    start_new_thread = _thread.start_new_thread

    def start_checked_thread(function: Callable[..., Any], args: Any, kwargs: Any = None) -> Any:
        """A thread, its first step the grader's hooks (they are per thread)."""

        def run(*run_args: Any, **run_kwargs: Any) -> Any:
            hooks.install()
            return function(*run_args, **run_kwargs)

        return start_new_thread(run, args, kwargs or {})

    replacements = [
        (variable.Variable, "_execution_engine", _CheckedEngine(variable.Variable._execution_engine)),
        (torch._C, "_ImperativeEngine", new_engine),
        (variable, "ImperativeEngine", new_engine),
        *((owner, name, wrapper) for (owner, name), wrapper in dual_makers.items()),
        *((owner, name, wrapper) for (owner, name), wrapper in dual_readers.items()),
        *((owner, name, wrapper) for (owner, name), wrapper in operators.items()),
        (torch._C, "_VariableFunctions", functions),
        (torch._C, "_VariableFunctionsClass", functions),
        (vf, "vf", functions),
        (torch.autograd.graph, "disable_saved_tensors_hooks", hooks_stay_on),
        (autograd_c, "_push_saved_tensors_default_hooks", hooks.pushed),
        (autograd_c, "_pop_saved_tensors_default_hooks", hooks.popped),
        (autograd_c, "_saved_tensors_hooks_disable", refuse_disable),
        (_thread, "start_new_thread", start_checked_thread),
        (_thread, "start_new", start_checked_thread),
        (threading, "_start_new_thread", start_checked_thread),
    ]
    for owner, name, replacement in replacements:
        if hasattr(owner, name):
            setattr(owner, name, replacement)
    hooks.install()
    return True
