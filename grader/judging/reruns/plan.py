"""Which trials to run again, and how, chosen from the first pass alone (`plan_reruns`): every trial beyond
rounding at float64, the float64 ones in extended precision and on shifted inputs, a few exactly as they
first ran, and the consistency probes."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.judging import consistency, invariance
from grader.judging.compare import (
    Compared,
    Flattened,
    InputShapes,
    Precision,
    compare_columns,
    compare_many,
    flatten,
)
from grader.judging.reruns.scaling import HAS_EXTENDED
from grader.memo import PerObject
from grader.outcomes import Verdict
from grader.sandbox.report import Pass, RerunRequest

if TYPE_CHECKING:
    from grader.exercise.reference import References
    from grader.exercise.trials import Trial


# A trial's returned array and its dtype, read for a thousand trials at a time without a Python loop.
_DTYPE = operator.attrgetter("dtype")

# The expected values and spreads of a return on the trials compared, as lists and end to end: a class
# shares them (each submission built the lists anew: 2,000 look-ups per return of a graph2 hand-in).
# Kept for every return of a course file's exercises, each twice (its trials, and its checked trials
# alone): at 32, CS231n A2's 19 returns pushed out each other's, and every hand-in flattened them anew.
_Expected = tuple[list[np.ndarray], list[np.ndarray], Flattened]
_expected: PerObject[_Expected] = PerObject(kept=128)


def expected_of(references: References, name: str, compared: list[int]) -> _Expected:
    def make() -> _Expected:
        expected = [references.expected[i][name] for i in compared]
        spreads = [references.spread[i][name] for i in compared]
        return expected, spreads, flatten(expected, spreads)

    return _expected.get(references, (name, tuple(compared)), make)


@dataclass(frozen=True)
class RerunPlan:
    """The first pass judged, and what to ask the worker next."""

    comparisons: Mapping[str, Compared]  # per return, per trial returned: nothing twice
    probes: tuple[consistency.ConsistencyProbe, ...]  # where a value and its gradient are both wrong
    request: RerunRequest


# Where a trial is beyond rounding, this many of them and as many that were right run once more as they
# first ran, to see the same answers (the smallest indices: code wrong on its first calls only, or right
# on them only, shows there). Few: each is one more call of a failing hand-in, and none of a passing one.
AGAIN = 3


def _again(references: References, first: Pass, beyond: set[int]) -> tuple[int, ...]:
    """The trials to run once more as they first ran: the first few beyond rounding, the first few not."""
    if not beyond:
        return ()
    right = [t.index for t in references.trials if t.index not in beyond and t.index in first.outputs]
    return tuple(sorted({*sorted(beyond)[:AGAIN], *right[:AGAIN]}))


def plan_reruns(exercise: Exercise, references: References, first: Pass) -> RerunPlan:
    """Compare the first pass, and pick the trials to rerun: every trial beyond rounding, at float64, and
    those of them computed in float64 again in extended precision. (The trials of the autograd check are
    not in `first`: grading.py splits them off, judging/provenance.py.)

    Code that already returns float64 is rerun at float64 too: what it returned may have been computed in
    float32 and overflowed (an infinity says nothing about its precision), and the rerun costs little.
    Where a value and its gradient are both wrong, two probes ask whether the gradient is at least that of
    the student's own value. A first pass that stopped early asks for nothing more.
    """
    comparisons = {spec.name: compare_first_pass(spec, references, first) for spec in exercise.spec.returns}
    if first.stopped is not None:
        return RerunPlan(comparisons, (), RerunRequest())
    beyond: set[int] = set()
    in_float64: set[int] = set()
    for judged in comparisons.values():
        for c in judged.others.values():  # the passing trials ask for nothing
            if c.verdict is Verdict.LOGIC:
                beyond.add(c.trial)
                if c.dtype == "float64":  # computed in float64, or in a narrower format and widened
                    in_float64.add(c.trial)
    by_index = {t.index: t for t in references.trials}
    probes = []
    for number, pair in enumerate(consistency.pairs(exercise)):
        values, gradients = (comparisons[r.name] for r in (pair.value, pair.gradient))
        both = [
            t
            for t, c in gradients.others.items()
            if c.verdict is Verdict.LOGIC and t in values.others and values.others[t].verdict is Verdict.LOGIC
        ]
        if both:
            probes.append(consistency.make_probe(pair, by_index[min(both)], number))
    moved = [trial for p in probes for trial in (p.plus, p.minus)]
    request = RerunRequest(
        tuple(sorted(beyond)),
        (*moved, *_shifted(exercise, references, in_float64)),
        tuple(sorted(in_float64)) if HAS_EXTENDED else (),
        _again(references, first, beyond),
    )
    return RerunPlan(comparisons, tuple(probes), request)


def _shifted(exercise: Exercise, references: References, in_float64: set[int]) -> list[Trial]:
    """The float64 trials beyond rounding once more, moved by the exercise's shift invariance where it has
    one and their inputs are large (invariance.py): torch's float64 code has no rerun above float64, and
    where the maths is the same on the moved inputs an unstable formula is right there."""
    if not in_float64:
        return []
    shift = invariance.shift_of(exercise, references)
    if shift is None:
        return []
    by_index = {t.index: t for t in references.trials}
    large = [by_index[i] for i in sorted(in_float64) if shift.large(by_index[i])]
    zeroed = [probe for t in large for probe in shift.zeroed_trials(t) or ()]
    return [*(shift.moved(t) for t in large), *zeroed]


def _input_shapes(references: References) -> InputShapes:
    """A trial's inputs' shapes by its number, looked up only where a shape is refused."""
    by_index: dict[int, Trial] = {}

    def shapes_of(trial: int) -> dict[str, tuple[int, ...]]:
        if not by_index:
            by_index.update((t.index, t) for t in references.trials)
        found = by_index.get(trial)
        return {} if found is None else {name: np.shape(value) for name, value in found.inputs.items()}

    return shapes_of


def compare_first_pass(spec: ReturnSpec, references: References, first: Pass) -> Compared:
    """Every trial that returned `spec`'s array, judged against the reference."""
    arrays = first.returned(spec.name)
    compared = arrays.trials
    expected, spreads, flat = expected_of(references, spec.name, compared)
    dtypes = list(map(_DTYPE, arrays.descriptions))
    joined = arrays.joined()
    judged = compare_columns(
        spec,
        compared,
        expected,
        arrays.arrays if joined is None else arrays.deferred(),
        dtypes,
        spreads,
        flattened=flat,
        inputs_of=_input_shapes(references),
        joined=joined,
    )
    # float64 values beyond float64 rounding but within float32's: float32 work widened before returning
    # (numpy makes float32 times int64 float64, and a rerun cannot lift astype(np.float32)). That is
    # correct code, as the same work returned in float32 would be; `grader validate` makes sure every
    # standard mistake lands beyond float32 rounding, so none hides here.
    others = dict(judged.others)
    widened = [
        i for i, c in others.items() if c.verdict is Verdict.LOGIC and c.precision is Precision.FLOAT64
    ]
    if not widened:
        return judged
    at_float32 = compare_many(
        spec,
        widened,
        [references.expected[i][spec.name] for i in widened],
        [arrays[i].array for i in widened],
        ["float64"] * len(widened),
        [references.spread[i][spec.name] for i in widened],
        at=Precision.FLOAT32,
    )
    for comparison in at_float32:
        if comparison.verdict in (Verdict.PASS, Verdict.PRECISION):
            note = "float64 values within float32 rounding: computed partly in float32"
            others[comparison.trial] = replace(comparison, note=note)
    return judged.with_others(others)
