"""Forward/backward consistency: is a wrong gradient the derivative of the student's own (wrong) forward?

Where an exercise returns a value v and a gradient of v, and one of them is wrong beyond rounding, the
student's function is run twice more (in the same sandbox, at float64) on one trial's inputs moved by ±h
along a random direction D of the input the gradient is taken with respect to. The central difference of
the student's own v along D, compared with the student's gradient projected on D, tells the two cases
apart: a gradient that is right for the function the student computed (the forward is what is wrong) and
a gradient that is wrong even for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.exercise.trials import Trial
from grader.judging import shapes

PROBE_BASE = 1 << 40  # probe ids: beyond any trial index
_STEP = 1e-4  # relative to the input's largest entry
_TOLERANCE = 1e-3  # relative: float32 gradients and the difference's own error stay far below it


@dataclass(frozen=True)
class Pair:
    """A value return and a gradient return of that value."""

    value: ReturnSpec
    gradient: ReturnSpec


@dataclass(frozen=True)
class ConsistencyProbe:
    """The two moved copies of one trial, and what a consistent gradient must give along D."""

    pair: Pair
    trial: int
    direction: np.ndarray
    step: float
    plus: Trial
    minus: Trial


def pairs(exercise: Exercise) -> list[Pair]:
    values = {r.value: r for r in exercise.spec.returns if r.value is not None}
    return [
        Pair(values[r.grad.of], r)
        for r in exercise.spec.returns
        if r.grad is not None and r.grad.of in values
    ]


def make_probe(pair: Pair, trial: Trial, number: int) -> ConsistencyProbe:
    """Two copies of `trial` with the gradient's input moved by ±h·D (D random, of unit norm)."""
    assert pair.gradient.grad is not None
    wrt = pair.gradient.grad.wrt
    point = trial.inputs[wrt]
    direction = np.random.default_rng([trial.index, number]).normal(size=point.shape)
    direction /= max(float(np.linalg.norm(direction)), np.finfo(np.float64).tiny)
    step = _STEP * max(1.0, float(np.max(np.abs(point))) if point.size else 1.0)
    shift = step * direction
    moved = [
        Trial(PROBE_BASE + 2 * number + k, trial.sizes, {**trial.inputs, wrt: point + side * shift})
        for k, side in enumerate((1.0, -1.0))
    ]
    return ConsistencyProbe(pair, trial.index, direction, step, moved[0], moved[1])


def consistent(
    probe: ConsistencyProbe, gradient: np.ndarray, values: Mapping[int, np.ndarray]
) -> bool | None:
    """Whether the student's gradient is the derivative of the student's own value along D; None when
    the probes gave nothing to compare (an exception, a wrong shape)."""
    plus, minus = values.get(probe.plus.index), values.get(probe.minus.index)
    if plus is None or minus is None or plus.size != 1 or minus.size != 1:
        return None
    if not shapes.fits(probe.direction.shape, gradient.shape):
        return None
    gradient = gradient.reshape(probe.direction.shape)  # the shape rule's: axes of length 1 do not count
    with np.errstate(all="ignore"):  # infinities and NaN make it undecidable, not a warning
        difference = (float(plus.reshape(())) - float(minus.reshape(()))) / (2 * probe.step)
        projected = float(np.sum(gradient.astype(np.float64) * probe.direction))
        scale = abs(difference) + float(np.linalg.norm(gradient.astype(np.float64)))
    if not (np.isfinite(difference) and np.isfinite(projected) and np.isfinite(scale)):
        return None
    return abs(difference - projected) <= _TOLERANCE * scale
