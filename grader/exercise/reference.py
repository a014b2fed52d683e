"""Expected returns: the exercise's graph evaluated in float64 with torch autograd.

Trials of the same sizes are evaluated together (vmap over the trial axis, one backward pass per group),
which is an order of magnitude faster than one by one; a graph that vmap cannot batch falls back to a loop.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from grader.errors import GraderError
from grader.exercise.expected import Expected as Expected
from grader.exercise.expected import References as References
from grader.exercise.graph import GraphError, evaluate
from grader.exercise.instructor import InstructorReferenceError, reference_values
from grader.exercise.spec import SPEC_FILE, Exercise, ReturnSpec
from grader.exercise.trials import Trial

# Raise by one whenever what references hold changes (this module's values or spread, graph.py's evaluation,
# trials.py's draws): stored references are kept under it (reference_key.py), not the grader's version.
REFERENCE_VERSION = 1

# The reference is many tiny operations: threads only add overhead, and the sandboxed worker runs beside.
torch.set_num_threads(1)

class ReferenceGraphError(GraderError):
    """The exercise's graph fails on some trial: an exercise author's problem (exit status 2)."""


# Monte Carlo arithmetic: each operation's result is perturbed by a random relative amount of NOISE
# (uniform in ±1, scaled by the magnitude its rounding grows with). The response is linear at this size,
# so spread / NOISE is the rounding sensitivity of every entry, and eps · spread / NOISE its rounding
# error at any precision eps. NOISE sits far above float64 rounding and far below non-linear effects.
NOISE = 2.0**-30
MC_SAMPLES = 4


def compute_references(exercise: Exercise, trials: Sequence[Trial]) -> References:
    expected = reference_returns(exercise, trials)
    deviation: dict[int, dict[str, np.ndarray]] = {t.index: {} for t in trials}
    for index, samples in _by_group(exercise, trials, noise=NOISE, samples=MC_SAMPLES).items():
        for values in samples:
            for name, value in values.items():
                change = np.abs(value - expected[index][name]) / NOISE
                previous = deviation[index].get(name)
                deviation[index][name] = change if previous is None else np.maximum(previous, change)
    return References(tuple(trials), expected, dict(deviation))


def reference_returns(exercise: Exercise, trials: Sequence[Trial]) -> dict[int, Expected]:
    """Expected float64 returns of every trial, keyed by trial index."""
    return {index: samples[0] for index, samples in _by_group(exercise, trials, 0.0, samples=1).items()}


def _by_group(
    exercise: Exercise, trials: Sequence[Trial], noise: float, samples: int
) -> dict[int, list[Expected]]:
    groups: dict[tuple[tuple[str, int], ...], list[Trial]] = defaultdict(list)
    for trial in trials:
        groups[trial.size_key].append(trial)
    expected: dict[int, list[Expected]] = {}
    for group in groups.values():
        try:
            expected.update(_evaluate_group(exercise, group, noise, samples))
        except ReferenceGraphError as exc:
            raise ReferenceGraphError(f"{exercise.root / SPEC_FILE}: returns: {exc}") from exc
        except InstructorReferenceError as exc:
            raise ReferenceGraphError(str(exc)) from exc
        except Exception as exc:
            if exercise.spec.reference is not None:
                where = f"reference: {exercise.spec.reference} "
            else:
                where = "graph: " + (f"line {exc.line} of the graph: " if isinstance(exc, GraphError) else "")
            raise ReferenceGraphError(
                f"{exercise.root / SPEC_FILE}: {where}fails at {group[0].describe_sizes()} "
                f"(trial {group[0].index}): {type(exc).__name__}: {exc}"
            ) from exc
    return expected


def forward_values(
    exercise: Exercise, trial: Trial, overrides: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The graph's named values for one trial with some inputs replaced; used by finite differences."""
    env: dict[str, object] = {
        name: _tensor(overrides.get(name, array)) for name, array in trial.inputs.items()
    }
    env.update(trial.sizes)
    with torch.no_grad():
        values = evaluate(exercise.program, reference_values(exercise, env))
    return {k: v.numpy() for k, v in values.items() if isinstance(v, torch.Tensor)}


def _tensor(array: np.ndarray) -> torch.Tensor:
    tensor = torch.from_numpy(np.array(array))
    return tensor if tensor.dtype == torch.int64 else tensor.to(torch.float64)


# The graph's convolutions, poolings and index functions, as a TorchDispatchMode logs them under vmap and
# in the per-trial loop alike, all sums of terms: the backward of an operation that picks values (max
# pooling, gather, index_select, embedding) adds the gradients of every place that picked the same entry
# (overlapping windows, repeated indices); the picking forwards themselves are exact and not listed.
# einsum runs as bmm, mul and sum, layer_norm as mean, sub, mul, add, sqrt and div: listed below already.
_SUMMING_LAYERS = frozenset(
    "convolution convolution_backward avg_pool2d avg_pool2d_backward max_pool2d_with_indices_backward "
    "scatter_add index_add embedding_dense_backward index_put".split()  # index_put: x[idx]'s backward
)
# Operations that round their result, seen at torch's dispatch level, forward and backward alike
# (so `sigmoid_backward` rounds from the already-rounded sigmoid, as a student's s * (1 - s) does).
_ROUNDING = (
    frozenset(
        "add sub rsub mul div true_divide pow exp exp2 log log2 log1p expm1 sqrt rsqrt reciprocal sin cos "
        "tan tanh sigmoid sigmoid_backward tanh_backward softplus softplus_backward mm bmm addmm mv dot "
        "matmul sum mean prod cumsum _softmax _log_softmax _softmax_backward_data "
        "_log_softmax_backward_data logsumexp addcmul addcdiv lerp xlogy linalg_vector_norm var std".split()
    )
    | _SUMMING_LAYERS
)
# Those whose rounding grows with their terms rather than their result (sums that may cancel): their
# magnitude is the same operation over absolute values.
_ACCUMULATING = frozenset("mm bmm addmm mv dot matmul sum mean cumsum".split()) | _SUMMING_LAYERS


class _RoundingNoise(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Monte Carlo arithmetic: every rounding operation's result moves by a pseudo-random relative amount."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here is compiled; the default wraps __torch_dispatch__ to keep torch.compile out,
        # which imports torch._dynamo on first use: 1.2 s, on the path of every `grader check`.
        return False

    def __init__(self, noise: float) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.noise = noise

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name not in _ROUNDING or not any(_rounds(r) for r in _results(result)):
            return result
        if name in _ACCUMULATING:
            absolute = [a.abs() if _rounds(a) else a for a in args]
            magnitudes = _results(func(*absolute, **kwargs))
        else:
            magnitudes = tuple(r.abs() if _rounds(r) else r for r in _results(result))
        # One sample number for every copy: the copies' values already differ (see _evaluate_group).
        perturbed = tuple(
            _perturbed(r, m, self.noise, 0) if _rounds(r) else r
            for r, m in zip(_results(result), magnitudes, strict=True)
        )
        return perturbed if isinstance(result, tuple | list) else perturbed[0]


def _results(result: Any) -> tuple[Any, ...]:
    """An operation's results as a tuple: convolution_backward returns (grad_input, grad_weight, grad_bias),
    None for those not asked for."""
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def _rounds(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _perturbed(
    value: torch.Tensor, magnitude: torch.Tensor, noise: float, sample: int | torch.Tensor
) -> torch.Tensor:
    return value + noise * magnitude.detach() * _pseudo_random(value.detach(), sample)


_MIX = (-0x40A7B892E31B1A47, -0x6B2FB644ECCEEE15)  # splitmix64's multipliers, as signed int64
_GOLDEN = -0x61C8864680B583EB


def _pseudo_random(value: torch.Tensor, sample: int | torch.Tensor) -> torch.Tensor:
    """Noise in [-1, 1) hashed from each value's bits and the sample number, not drawn from a generator:
    a trial gets the same envelope whether it is graded alone (--trial) or among others, on every run,
    and values that differ in their last bits (the Monte Carlo copies of a trial) get unrelated noise."""
    bits = value.to(torch.float64).view(torch.int64)
    mixed = bits ^ (torch.as_tensor(sample, dtype=torch.int64) + 1) * _GOLDEN
    mixed = (mixed ^ (mixed >> 30)) * _MIX[0]
    mixed = (mixed ^ (mixed >> 27)) * _MIX[1]
    mixed = mixed ^ (mixed >> 31)
    return ((mixed >> 11) & ((1 << 53) - 1)).to(torch.float64) * 2.0**-52 - 1.0


def _evaluate_group(
    exercise: Exercise, group: list[Trial], noise: float, samples: int
) -> dict[int, list[Expected]]:
    """Every return of trials of one size, in one batched evaluation per distinct objective.

    Monte Carlo samples are evaluated as copies of the batch in the same pass (grouping by size leaves
    small batches, where the per-call overhead dominates): each copy perturbs its inputs with its own
    sample number, so its values differ in their last bits, and so does the noise every later operation
    hashes from them.
    """
    returns = exercise.spec.returns
    wrt_names = sorted({r.grad.wrt if r.grad else r.vjp.wrt for r in returns if r.grad or r.vjp})  # type: ignore[union-attr]
    names = list(exercise.spec.inputs)
    stacked = {name: _tensor(np.stack([t.inputs[name] for t in group] * samples)) for name in names}
    for name in wrt_names:
        stacked[name].requires_grad_(True)
    sizes = dict(group[0].sizes)
    outputs = _needed_outputs(returns)

    def forward(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        env: dict[str, object] = dict(zip(names, tensors, strict=True))
        env.update(sizes)
        values = evaluate(exercise.program, reference_values(exercise, env))
        return tuple(torch.as_tensor(values[o], dtype=torch.float64) for o in outputs)

    args = [stacked[n] for n in names]
    if noise:  # inputs are rounded too, when the student converts them to a lower precision
        copies = torch.arange(samples).repeat_interleave(len(group))
        args = [_perturbed_copies(a, noise, copies) if a.is_floating_point() else a for a in args]
    with _RoundingNoise(noise) if noise else contextlib.nullcontext():
        try:
            batched = torch.func.vmap(forward)(*args)
        except InstructorReferenceError:
            raise
        except Exception:  # an operation without a batching rule: evaluate trial by trial instead
            batched = _loop(forward, args)
        values = dict(zip(outputs, batched, strict=True))
        results = _all_returns(returns, values, stacked)
    count = len(group)
    return {
        trial.index: [
            {name: tensor[s * count + i].detach().numpy().copy() for name, tensor in results.items()}
            for s in range(samples)
        ]
        for i, trial in enumerate(group)
    }


def _perturbed_copies(stacked: torch.Tensor, noise: float, copies: torch.Tensor) -> torch.Tensor:
    """Each Monte Carlo copy of the batch perturbed with its own sample number."""
    return _perturbed(stacked, stacked.abs(), noise, copies.reshape(-1, *[1] * (stacked.dim() - 1)))


def _loop(
    forward: Callable[..., tuple[torch.Tensor, ...]], args: list[torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    per_trial = [forward(*(a[i] for a in args)) for i in range(args[0].shape[0])]
    return tuple(torch.stack(column) for column in zip(*per_trial, strict=True))


def _needed_outputs(returns: Sequence[ReturnSpec]) -> list[str]:
    needed: list[str] = []
    for ret in returns:
        name = ret.value if ret.value is not None else (ret.grad or ret.vjp).of  # type: ignore[union-attr]
        if name not in needed:
            needed.append(name)
    return needed


def _all_returns(
    returns: Sequence[ReturnSpec], values: Mapping[str, torch.Tensor], inputs: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Values as computed; gradients by one backward pass per objective (the RNN step's five gradients
    of one loss take one pass, not five)."""
    results = {ret.name: values[ret.value] for ret in returns if ret.value is not None}
    by_objective: dict[tuple[str, str | None], list[ReturnSpec]] = defaultdict(list)
    for ret in returns:
        if ret.grad is not None:
            by_objective[(ret.grad.of, None)].append(ret)
        elif ret.vjp is not None:
            by_objective[(ret.vjp.of, ret.vjp.upstream)].append(ret)
    for (of_name, upstream_name), members in by_objective.items():
        objective = _objective(members[0].name, of_name, values[of_name], inputs, upstream_name)
        wrts = [inputs[_wrt(ret)] for ret in members]
        if not objective.requires_grad:
            grads: tuple[torch.Tensor | None, ...] = (None,) * len(wrts)
        else:
            grads = torch.autograd.grad(objective, wrts, retain_graph=True, allow_unused=True)
        for ret, wrt, grad in zip(members, wrts, grads, strict=True):
            results[ret.name] = torch.zeros_like(wrt) if grad is None else grad
    return results


def _wrt(ret: ReturnSpec) -> str:
    target = ret.grad or ret.vjp
    assert target is not None
    return target.wrt


def _objective(
    return_name: str,
    of_name: str,
    of: torch.Tensor,
    inputs: Mapping[str, torch.Tensor],
    upstream_name: str | None,
) -> torch.Tensor:
    # Each trial's output depends only on its own inputs, so one backward of the batch sum gives every
    # trial's gradient at once.
    if upstream_name is None:
        if of[0].numel() != 1:  # a one-element output counts as a scalar
            raise ReferenceGraphError(
                f"return '{return_name}': grad of '{of_name}' needs a scalar, but it has shape "
                f"{tuple(of.shape[1:])}; use vjp with an upstream input instead"
            )
        return of.sum()
    upstream = inputs[upstream_name].detach()
    if upstream.shape != of.shape:
        raise ReferenceGraphError(
            f"return '{return_name}': upstream '{upstream_name}' has shape {tuple(upstream.shape[1:])}, "
            f"but '{of_name}' has shape {tuple(of.shape[1:])}"
        )
    return (of * upstream).sum()
