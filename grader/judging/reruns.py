"""Beyond rounding: which trials to run again at float64, and what their reruns say.

A trial whose values lie beyond the rounding envelope is either a mistake (wrong at any precision) or an
unstable formula (right once the arithmetic is more precise). The first pass is compared here, the
trials to rerun are chosen from it (`plan_reruns`, a pure function of the first pass), and once the worker
has rerun them each trial beyond rounding is decided (`resolve_beyond_rounding`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.judging import consistency
from grader.judging.compare import (
    PRECISIONS,
    Comparison,
    Flattened,
    Precision,
    RerunOutcome,
    compare_many,
    flatten,
    infer_precision,
)
from grader.memo import PerObject
from grader.outcomes import Verdict
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.report import Pass, RerunRequest, Returned, TrialOutput, WorkerReport

if TYPE_CHECKING:
    from grader.exercise.reference import References

RERUN_LIMIT = 200  # trials rerun at float64 per submission; the rest follow them (see below)
# The expected values end to end, per return and trials compared: a class shares them.
_flattened: PerObject[Flattened] = PerObject(kept=32)


@dataclass(frozen=True)
class RerunPlan:
    """The first pass judged, and what to ask the worker next."""

    comparisons: Mapping[str, Mapping[int, Comparison]]  # per return, per trial returned: nothing twice
    probes: tuple[consistency.Probe, ...]  # where a value and its gradient are both wrong
    request: RerunRequest


def plan_reruns(exercise: Exercise, references: References, first: Pass) -> RerunPlan:
    """Compare the first pass, and pick the trials to rerun at float64: those beyond rounding, worst first.

    Code that already returns float64 is rerun too: what it returned may have been computed in float32
    and overflowed (an infinity says nothing about its precision), and the rerun costs little. Where a
    value and its gradient are both wrong, two probes ask whether the gradient is at least that of the
    student's own value. A first pass that stopped early asks for nothing more.
    """
    comparisons = {
        spec.name: compare_first_pass(spec, references, first.outputs) for spec in exercise.spec.returns
    }
    if first.stopped is not None:
        return RerunPlan(comparisons, (), RerunRequest())
    worst: dict[int, float] = {}
    for judged in comparisons.values():
        for c in judged.values():
            if c.verdict is Verdict.LOGIC:
                worst[c.trial] = max(worst.get(c.trial, 0.0), c.max_ratio)
    by_index = {t.index: t for t in references.trials}
    probes = []
    for number, pair in enumerate(consistency.pairs(exercise)):
        values, gradients = (comparisons[r.name] for r in (pair.value, pair.gradient))
        both = [
            t
            for t, c in gradients.items()
            if c.verdict is Verdict.LOGIC and t in values and values[t].verdict is Verdict.LOGIC
        ]
        if both:
            probes.append(consistency.make_probe(pair, by_index[min(both)], number))
    trials = tuple(sorted(sorted(worst, key=lambda t: -worst[t])[:RERUN_LIMIT]))
    request = RerunRequest(trials, tuple(moved for p in probes for moved in (p.plus, p.minus)))
    return RerunPlan(comparisons, tuple(probes), request)


def returned(outputs: Mapping[int, TrialOutput], name: str) -> dict[int, Returned]:
    """The arrays returned as `name`, by trial (trials where it was a problem left out)."""
    found = {index: output.by_name[name] for index, output in outputs.items()}
    return {index: item for index, item in found.items() if isinstance(item, Returned)}


def compare_first_pass(
    spec: ReturnSpec, references: References, outputs: Mapping[int, TrialOutput]
) -> dict[int, Comparison]:
    """Every trial that returned `spec`'s array, judged against the reference."""
    arrays = returned(outputs, spec.name)
    compared = list(arrays)
    expected = [references.expected[i][spec.name] for i in compared]
    spreads = [references.spread[i][spec.name] for i in compared]
    flat = _flattened.get(references, (spec.name, tuple(compared)), lambda: flatten(expected, spreads))
    comparisons = {
        c.trial: c
        for c in compare_many(
            spec,
            compared,
            expected,
            [arrays[i].array for i in compared],
            [arrays[i].dtype for i in compared],
            spreads,
            flattened=flat,
        )
    }
    # float64 values beyond float64 rounding but within float32's: float32 work widened before returning
    # (numpy makes float32 times int64 float64, and a rerun cannot lift astype(np.float32)). That is
    # correct code, as the same work returned in float32 would be; `grader validate` makes sure every
    # standard mistake lands beyond float32 rounding, so none hides here.
    widened = [i for i, c in comparisons.items() if c.verdict is Verdict.LOGIC and c.precision == "float64"]
    at_float32 = compare_many(
        spec,
        widened,
        [references.expected[i][spec.name] for i in widened],
        [arrays[i].array for i in widened],
        ["float64"] * len(widened),
        [references.spread[i][spec.name] for i in widened],
        at=PRECISIONS["float32"],
    )
    for comparison in at_float32:
        if comparison.verdict in (Verdict.PASS, Verdict.PRECISION):
            note = "float64 values within float32 rounding: computed partly in float32"
            comparisons[comparison.trial] = replace(comparison, note=note)
    return comparisons


Rerun = tuple[np.ndarray, str] | str  # (array, dtype) returned at float64, or what went wrong with it


def resolve_beyond_rounding(
    spec: ReturnSpec,
    references: References,
    report: WorkerReport,
    compared: Mapping[int, Comparison],
    got: Mapping[int, np.ndarray],
) -> dict[int, Comparison]:
    """Trials beyond rounding, decided by their reruns at float64 between instability and logic."""
    beyond = [c for c in compared.values() if c.verdict is Verdict.LOGIC]
    resolved: dict[int, Comparison] = {}
    reruns = report.reruns
    for comparison in beyond:
        index = comparison.trial
        rerun: Rerun
        if index in reruns.outputs:
            item = reruns.outputs[index].by_name[spec.name]
            rerun = item.problem if isinstance(item, ReturnProblem) else (item.array, item.dtype)
        elif index in reruns.failures:
            rerun = reruns.failures[index].message
        else:
            continue
        resolved[index] = resolve_with_rerun(
            comparison,
            spec,
            references.expected[index][spec.name],
            references.spread[index][spec.name],
            got[index],
            rerun,
        )
    # Beyond the rerun limit, trials follow those rerun: one still wrong at float64 is enough for logic.
    confirmed = [r for r in resolved.values() if r.verdict is Verdict.LOGIC]
    for comparison in beyond:
        if comparison.trial in resolved:
            continue
        if resolved and not confirmed:
            note = f"like the {len(resolved)} trials rerun at float64, which were right there"
            resolved[comparison.trial] = replace(
                comparison, verdict=Verdict.INSTABILITY, rerun=RerunOutcome.FOLLOWS_RERUN, note=note
            )
        else:
            resolved[comparison.trial] = replace(
                comparison, rerun=RerunOutcome.NOT_RERUN, note="it was not rerun at float64"
            )
    return resolved


def resolve_with_rerun(
    original: Comparison,
    spec: ReturnSpec,
    expected: np.ndarray,
    spread: np.ndarray,
    got: np.ndarray,
    rerun: Rerun,
) -> Comparison:
    """Decide a trial that failed beyond rounding: right when rerun at float64 means instability."""
    precision = PRECISIONS[original.precision]
    if isinstance(rerun, str):
        why = f"its rerun at float64 failed ({rerun})"
        if _overflows(expected, got, precision):
            note = f"it overflows {precision.name} and {why}: the range of the precision used, not a mistake"
            return _decided(original, RerunOutcome.OVERFLOWS, note)
        return _decided(original, RerunOutcome.RERUN_FAILED, why)
    array, dtype = rerun
    lifted, _ = infer_precision(array, dtype)
    if lifted.name != "float64":
        if _overflows(expected, got, precision):
            note = (
                f"it overflows {precision.name}, which the code hard-codes (the rerun could not lift it): "
                "the range of the precision used, not a mistake"
            )
            return _decided(original, RerunOutcome.OVERFLOWS, note)
        note = (
            f"the code hard-codes {lifted.name}, so it could not be rerun at float64: judged at {lifted.name}"
        )
        return _decided(original, RerunOutcome.HARD_CODED, note)
    check = compare_many(spec, [original.trial], [expected], [array], [dtype], [spread], at=precision)[0]
    if check.verdict in (Verdict.PASS, Verdict.PRECISION):
        return _decided(original, RerunOutcome.RIGHT_AT_FLOAT64, "right when rerun at float64")
    note = f"still wrong when rerun at float64 ({check.max_ratio:.3g} envelopes)"
    return _decided(original, RerunOutcome.STILL_WRONG, note)


def _decided(original: Comparison, outcome: RerunOutcome, note: str) -> Comparison:
    verdict = Verdict.INSTABILITY if outcome.unstable else original.verdict
    return replace(original, verdict=verdict, rerun=outcome, note=note)


def _overflows(expected: np.ndarray, got: np.ndarray, precision: Precision) -> bool:
    """Whether the failure is the format's range: infinities or NaN where finite values were due."""
    bad = ~np.isfinite(got.astype(np.float64).reshape(expected.shape)) & np.isfinite(expected)
    return bool(bad.any()) or bool((np.abs(expected) > precision.largest).any())
