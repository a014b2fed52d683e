"""Expected returns: the exercise's graph evaluated in float64 with torch autograd.

Trials of the same sizes are evaluated together (vmap over the trial axis, one backward pass per group),
which is an order of magnitude faster than one by one; a graph that vmap cannot batch falls back to a loop.
The Monte Carlo envelope, four perturbed copies of every trial, goes further: trials of different sizes
share a batch, zero-padded, wherever the padded batch gives their expected values bit for bit
(padding.py; rnn's 271 sizes of 600 trials take 16 batches). The expected values themselves are always
those of their own size's batch.
"""

from __future__ import annotations

import contextlib
import enum
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from grader.errors import GraderError
from grader.exercise import padding
from grader.exercise.expected import Expected as Expected
from grader.exercise.expected import References as References
from grader.exercise.graph import GraphError, evaluate
from grader.exercise.instructor import InstructorReferenceError, instructor_reference, reference_values
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
    return References(tuple(trials), expected, compute_spreads(exercise, trials, expected))


def compute_spreads(
    exercise: Exercise,
    trials: Sequence[Trial],
    expected: Mapping[int, Expected],
    wanted: Collection[int] | None = None,
) -> dict[int, Expected]:
    """Each trial's rounding spread (of `wanted` only, where given), from the Monte Carlo pass over the
    batches of `trials` that hold one: a trial's batch is laid out from all of `trials` whichever are
    wanted, so its spread is the one the whole pass gives it, bit for bit (the noise is hashed from the
    values, and a batch's values depend on which trials it stacks)."""
    deviation: dict[int, dict[str, np.ndarray]] = {}
    for batch in _envelope_batches(exercise, trials, expected, wanted):
        noisy = _batch_values(exercise, batch, NOISE, MC_SAMPLES)
        count = len(batch.trials)
        for trial in batch.trials:
            deviation[trial.index] = {}
        for name, values in noisy.items():
            copies = values.reshape(MC_SAMPLES, count, *values.shape[1:])  # [sample, trial, ...]
            # each entry's largest move over the samples (a max: exact, whichever way it is taken)
            if not batch.padded:
                exact = np.stack([expected[t.index][name] for t in batch.trials])
                spread = (np.abs(copies - exact) / NOISE).max(axis=0)
                for i, trial in enumerate(batch.trials):
                    deviation[trial.index][name] = spread[i].copy()
                continue
            for i, trial in enumerate(batch.trials):
                value = expected[trial.index][name]
                where: tuple[int | slice, ...] = (slice(None), i, *(slice(0, d) for d in value.shape))
                moved = copies[where]
                deviation[trial.index][name] = (np.abs(moved - value) / NOISE).max(axis=0)
    chosen = trials if wanted is None else [t for t in trials if t.index in wanted]
    return {t.index: deviation[t.index] for t in chosen}


def reference_returns(exercise: Exercise, trials: Sequence[Trial]) -> dict[int, Expected]:
    """Expected float64 returns of every trial, keyed by trial index: evaluated by size, unpadded."""
    expected: dict[int, Expected] = {}
    for group in padding.merged(trials, ()):
        batch = padding.same_size(group)
        values = _batch_values(exercise, batch, 0.0, samples=1)
        for i, trial in enumerate(group):
            expected[trial.index] = {name: value[i].copy() for name, value in values.items()}
    return {trial.index: expected[trial.index] for trial in trials}


def _envelope_batches(
    exercise: Exercise,
    trials: Sequence[Trial],
    expected: Mapping[int, Expected],
    wanted: Collection[int] | None = None,
) -> list[padding.Batch]:
    """The batches of the Monte Carlo pass: trials of different sizes padded together where the padded
    batch, evaluated without noise, gives every trial's expected returns bit for bit; by size elsewhere.
    Where `wanted` is given, only the batches that hold one of them (each laid out as among all `trials`).

    A size is padded only where two trials it merges (its smallest and its largest value) get the same
    Monte Carlo values padded as alone, bit for bit: padding also adds operations that do not round (a
    sum over one real row and padded zeros, where one row alone is summed by no operation at all; the
    additions of a padded time step's zero gradient), and the mode would perturb them all the same.
    """
    padded: list[str] = []
    for name in padding.drawn_sizes(exercise):
        candidate = [*padded, name]
        probes = _probes(trials, candidate, name)
        if probes and all(_pads(exercise, probe, candidate, expected) for probe in probes):
            padded = candidate
    batches: list[padding.Batch] = []
    for group in padding.merged(trials, padded):
        if wanted is not None and not any(t.index in wanted for t in group):
            continue
        batch = padding.padded_batch(exercise, group, padded) if padded else None
        if batch is None or not batch.padded:
            batches.extend(padding.same_size(g) for g in padding.merged(group, ()))
            continue
        # A trial whose returns the padding moves (a sum whose terms the padding regroups, off by an ulp)
        # is evaluated with its own size; the others stay in the padded batch, each independent of the rest.
        kept = _same_values(exercise, batch, expected)
        if kept:
            batches.append(padding.subset(batch, kept))
        rest = [t for i, t in enumerate(group) if i not in set(kept)]
        batches.extend(padding.same_size(g) for g in padding.merged(rest, ()))
    if wanted is None:
        return batches
    return [b for b in batches if any(t.index in wanted for t in b.trials)]


def _probes(trials: Sequence[Trial], sizes: Sequence[str], name: str) -> list[list[Trial]]:
    """A pair of trials padding `sizes` merges, at the smallest and the largest of size `name` in the
    largest batch with several (at sizes where `name` matters, as a stride does over a wide window only;
    sizes of 1 are batched apart, see padding.merged)."""
    groups = [g for g in padding.merged(trials, sizes) if len({t.sizes[name] for t in g}) > 1]
    if not groups:
        return []
    largest = max(groups, key=len)
    return [[min(largest, key=lambda t: t.sizes[name]), max(largest, key=lambda t: t.sizes[name])]]


def _pads(
    exercise: Exercise, probe: list[Trial], sizes: Sequence[str], expected: Mapping[int, Expected]
) -> bool:
    batch = padding.padded_batch(exercise, probe, sizes)
    if batch is None or len(_same_values(exercise, batch, expected)) < len(probe):
        return False
    try:
        noisy = _evaluate(exercise, batch, NOISE, MC_SAMPLES)
        for i, trial in enumerate(probe):
            alone = _evaluate(exercise, padding.same_size([trial]), NOISE, MC_SAMPLES)
            for name, value in alone.items():
                for s in range(MC_SAMPLES):
                    got = padding.region(value[s], noisy[name][s * len(probe) + i])
                    if got is None or not np.array_equal(got, value[s], equal_nan=True):
                        return False
    except Exception:  # padded sizes the graph cannot take: not paddable
        return False
    return True


def _same_values(exercise: Exercise, batch: padding.Batch, expected: Mapping[int, Expected]) -> list[int]:
    """The positions of the batch's trials whose expected returns the batch, evaluated without noise,
    gives exactly."""
    try:
        values = _evaluate(exercise, batch, 0.0, samples=1)
    except Exception:  # padded sizes the graph cannot take (a shape that no longer fits): not paddable
        return []
    same = []
    for i, trial in enumerate(batch.trials):
        parts = [(padding.region(v, values[name][i]), v) for name, v in expected[trial.index].items()]
        if all(got is not None and np.array_equal(got, v, equal_nan=True) for got, v in parts):
            same.append(i)
    return same


def _batch_values(
    exercise: Exercise, batch: padding.Batch, noise: float, samples: int
) -> dict[str, np.ndarray]:
    """_evaluate's values, its failures said as the exercise author's: which part, at which sizes."""
    try:
        return _evaluate(exercise, batch, noise, samples)
    except ReferenceGraphError as exc:
        raise ReferenceGraphError(f"{exercise.root / SPEC_FILE}: returns: {exc}") from exc
    except InstructorReferenceError as exc:
        raise ReferenceGraphError(str(exc)) from exc
    except Exception as exc:
        if exercise.spec.reference is not None:
            where = f"reference: {exercise.spec.reference} "
        else:
            where = "graph: " + (f"line {exc.line} of the graph: " if isinstance(exc, GraphError) else "")
        first = batch.trials[0]
        raise ReferenceGraphError(
            f"{exercise.root / SPEC_FILE}: {where}fails at {first.describe_sizes()} "
            f"(trial {first.index}): {type(exc).__name__}: {exc}"
        ) from exc


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
        # which imports torch._dynamo on first use, a costly import on the path of every `grader check`.
        return False

    def __init__(self, noise: float) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.noise = noise

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        kind = _kinds.get(func)
        if kind is None:
            kind = _kinds[func] = _kind(func.overloadpacket.__name__)
        if kind is _Kind.EXACT or not any(_rounds(r) for r in _results(result)):
            return result
        if kind is _Kind.ACCUMULATING:
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


class _Kind(enum.Enum):
    EXACT = "exact"
    ROUNDING = "rounding"  # its rounding grows with its result
    ACCUMULATING = "accumulating"  # with its terms (a sum that may cancel)


def _kind(name: str) -> _Kind:
    if name in _ACCUMULATING:
        return _Kind.ACCUMULATING
    return _Kind.ROUNDING if name in _ROUNDING else _Kind.EXACT


# Each operator's kind, looked up once: the mode sees every operation of every group, forward and backward.
_kinds: dict[Any, _Kind] = {}


def _results(result: Any) -> tuple[Any, ...]:
    """An operation's results as a tuple: convolution_backward returns (grad_input, grad_weight, grad_bias),
    None for those not asked for."""
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def _rounds(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _perturbed(
    value: torch.Tensor, magnitude: torch.Tensor, noise: float, sample: int | torch.Tensor
) -> torch.Tensor:
    if value.dtype != torch.float64 or magnitude.dtype != torch.float64:
        return value + noise * magnitude.detach() * _pseudo_random(value.detach(), sample)
    # The same arithmetic in numpy, operation for operation and so bit for bit: on a tiny tensor torch's
    # dispatch costs several times numpy's, and the hash is a dozen operations, for every perturbed result
    # of every group's Monte Carlo pass.
    salt = sample.numpy() if isinstance(sample, torch.Tensor) else sample
    random = _numpy_random(value.detach().numpy(), salt)
    change = noise * magnitude.detach().numpy() * random
    return value + torch.from_numpy(np.asarray(change))


_MIX = (-0x40A7B892E31B1A47, -0x6B2FB644ECCEEE15)  # splitmix64's multipliers, as signed int64
_GOLDEN = -0x61C8864680B583EB
_WORD = 1 << 64


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


def _numpy_random(value: np.ndarray, sample: int | np.ndarray) -> np.ndarray:
    """_pseudo_random's numbers, in numpy: the same int64 arithmetic (wrapping, arithmetic shifts)."""
    # at least 1-d: a 0-d array's operations give numpy scalars, which warn where they wrap
    bits = np.atleast_1d(value).view(np.int64)
    if isinstance(sample, int):
        salt: int | np.ndarray = ((sample + 1) * _GOLDEN + (_WORD >> 1)) % _WORD - (_WORD >> 1)
    else:
        salt = (sample.astype(np.int64) + 1) * np.int64(_GOLDEN)
    mixed = bits ^ salt
    mixed = (mixed ^ (mixed >> 30)) * np.int64(_MIX[0])
    mixed = (mixed ^ (mixed >> 27)) * np.int64(_MIX[1])
    mixed ^= mixed >> 31
    random: np.ndarray = ((mixed >> 11) & ((1 << 53) - 1)).astype(np.float64) * 2.0**-52 - 1.0
    return random.reshape(value.shape)


def _evaluate(exercise: Exercise, batch: padding.Batch, noise: float, samples: int) -> dict[str, np.ndarray]:
    """Every return of the batch's trials, in one batched evaluation per distinct objective: one array
    per return, copy s of trial i at s * len(trials) + i.

    Monte Carlo samples are evaluated as copies of the batch in the same pass (grouping by size leaves
    small batches, where the per-call overhead dominates): each copy perturbs its inputs with its own
    sample number, so its values differ in their last bits, and so does the noise every later operation
    hashes from them.
    """
    returns = exercise.spec.returns
    wrt_names = sorted({r.grad.wrt if r.grad else r.vjp.wrt for r in returns if r.grad or r.vjp})  # type: ignore[union-attr]
    names = list(exercise.spec.inputs)
    stacked = {name: _tensor(np.concatenate([batch.inputs[name]] * samples)) for name in names}
    for name in wrt_names:
        stacked[name].requires_grad_(True)
    sizes = dict(batch.sizes)
    outputs = _needed_outputs(returns)
    reference = instructor_reference(exercise)

    def forward(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        env: dict[str, object] = dict(zip(names, tensors, strict=True))
        env.update(sizes)
        values = evaluate(exercise.program, reference(env))
        return tuple(torch.as_tensor(values[o], dtype=torch.float64) for o in outputs)

    args = [stacked[n] for n in names]
    if noise:  # inputs are rounded too, when the student converts them to a lower precision
        copies = torch.arange(samples).repeat_interleave(len(batch.trials))
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
    return {name: tensor.detach().numpy() for name, tensor in results.items()}


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
