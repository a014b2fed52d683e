"""Trials of different sizes in one batch: each input zero-padded to the batch's largest shape.

The Monte Carlo envelope costs one batched evaluation per batch, and a per-size batch holds about one trial
where an exercise draws several sizes (affine: 572 sizes for 1000 trials). Padding a size merges those
batches, but it is sound only where the graph's values on the real entries do not see the padding: a
row-wise layer padded in its rows, a product padded in its inner dimension (zeros add nothing), a
recurrence padded in its time steps (the later steps come after). Not where the size moves entries
(a reshape), sets a window or a stride, or counts in a mean. This module only lays the trials out;
reference.py decides which sizes to pad by evaluating the padded batch without noise and comparing every
trial's returns, bit for bit, with its own per-size evaluation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from grader.exercise.graph import evaluate_size_expression
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial


@dataclass(frozen=True)
class Batch:
    """Trials evaluated together: their inputs stacked along a first axis, at the batch's sizes."""

    trials: tuple[Trial, ...]
    sizes: Mapping[str, int]
    inputs: Mapping[str, np.ndarray]

    @property
    def padded(self) -> bool:
        """Whether some trial's inputs are padded (its sizes are not the batch's)."""
        return any(dict(t.sizes) != dict(self.sizes) for t in self.trials)


def drawn_sizes(exercise: Exercise) -> tuple[str, ...]:
    """The sizes drawn from a range (not derived, not fixed): the only ones worth padding."""
    derived = dict(exercise.derived_sizes)
    return tuple(
        name
        for name in exercise.spec.sizes
        if name not in derived and exercise.size_range(name)[0] < exercise.size_range(name)[1]
    )


def merged(trials: Sequence[Trial], padded: Collection[str]) -> list[list[Trial]]:
    """The trials grouped by every drawn size but the padded ones (derived sizes follow those), and by
    which sizes are 1: torch takes other paths for an axis of one entry (broadcast, squeezed instead of
    summed, a matrix-vector product), which do not round where the padded batch's would (measured:
    basics/affine_backward's M = 1 trials padded to M = 8 moved db's Monte Carlo values)."""
    groups: dict[tuple[object, ...], list[Trial]] = defaultdict(list)
    for trial in trials:
        kept = tuple((k, v) for k, v in trial.size_key if k not in padded)
        ones = tuple(k for k, v in trial.size_key if v == 1)
        groups[kept, ones].append(trial)
    return list(groups.values())


def same_size(trials: Sequence[Trial]) -> Batch:
    """Trials of one size, stacked as they are."""
    return Batch(tuple(trials), dict(trials[0].sizes), _stacked(trials, None))


def padded_batch(exercise: Exercise, trials: Sequence[Trial], padded: Collection[str]) -> Batch | None:
    """The trials at the largest of each padded size, their inputs zero-padded at the end of each axis;
    None where some input's shape does not grow with the sizes (it would have to be cut)."""
    sizes = dict(trials[0].sizes)
    for name in padded:
        sizes[name] = max(t.sizes[name] for t in trials)
    for name, expression in exercise.derived_sizes:  # in the spec's order: each may use those before it
        sizes[name] = evaluate_size_expression(expression, sizes)
    shapes = {name: np.shape(array) for name, array in trials[0].inputs.items()}
    for name in exercise.spec.inputs:
        if name in shapes and np.ndim(trials[0].inputs[name]):
            shapes[name] = exercise.shape(name, sizes)
    for trial in trials:
        for name, array in trial.inputs.items():
            if array.ndim != len(shapes[name]) or any(
                have > room for have, room in zip(array.shape, shapes[name], strict=True)
            ):
                return None
    return Batch(tuple(trials), sizes, _stacked(trials, shapes))


def subset(batch: Batch, positions: Sequence[int]) -> Batch:
    """Some of the batch's trials, at the batch's sizes."""
    if len(positions) == len(batch.trials):
        return batch
    return Batch(
        tuple(batch.trials[i] for i in positions),
        batch.sizes,
        {name: array[list(positions)] for name, array in batch.inputs.items()},
    )


def _stacked(trials: Sequence[Trial], shapes: Mapping[str, tuple[int, ...]] | None) -> dict[str, np.ndarray]:
    first = trials[0].inputs
    if shapes is None:
        return {name: np.stack([t.inputs[name] for t in trials]) for name in first}
    stacked: dict[str, np.ndarray] = {}
    for name, array in first.items():
        batch = np.zeros((len(trials), *shapes[name]), dtype=array.dtype)
        for i, trial in enumerate(trials):
            value = trial.inputs[name]
            where: tuple[int | slice, ...] = (i, *(slice(0, d) for d in value.shape))
            batch[where] = value
        stacked[name] = batch
    return stacked


def region(value: np.ndarray, padded: np.ndarray) -> np.ndarray | None:
    """The part of a padded result that a trial's own result of `value`'s shape occupies; None where the
    padded result has another number of axes or is smaller."""
    if padded.ndim != value.ndim or any(p < v for p, v in zip(padded.shape, value.shape, strict=True)):
        return None
    part: np.ndarray = padded[tuple(slice(0, d) for d in value.shape)]
    return part
