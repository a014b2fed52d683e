"""Name the mistake behind a logic return: the candidate whose values the student's match on every trial.

Candidates, in this order: the misconceptions the exercise declares (an expression over the graph's
names for what the return would be), the standard mistakes (transposed, sign, a factor 2 or 1/N, the
wrong input, a term of a sum dropped or scaled) and mutants of the graph (an elementwise product for a
matrix product, a function left out so its derivative is missing, an operand transposed), each evaluated
in float64 on the same trials. A candidate names the mistake only if the student's values lie within the
rounding envelope of its values on every trial compared, and it differs from the right values beyond both
formulas' envelopes somewhere: a mistake that matches none is named by none, and values that are right
are named by no candidate, even one that agrees with the right values to rounding on every trial.

A declared misconception's envelope is its own: its expression is evaluated with the references' Monte
Carlo arithmetic too, since an author writes it from the graph's names (dropout's `dout * out * p / x`,
a prediction less its intercept), often through intermediates that round far more than the right
formula, or than a student's direct code. The standard mistakes and mutants, dozens of graphs, take the
right formula's envelope scaled to their values. Where no declared misconception names the values, how
far they were from each (in its envelopes) goes with the result: `grader validate` says it.
When nothing matches, failing entries confined to the diagonal, or to one row or column, are said so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.graph import parse
from grader.exercise.spec import MISCONCEPTION, Exercise, ReturnSpec
from grader.judging import shapes
from grader.judging.compare import (
    Comparison,
    Precision,
    entry_errors,
    infer_precision,
    within_rounding,
)
from grader.memo import PerObject
from grader.outcomes import MistakeFamily, Verdict
from grader.results import NearMiss
from grader.sandbox.report import Returned

if TYPE_CHECKING:
    from grader.exercise.reference import References
    from grader.exercise.trials import Trial
    from grader.judging.naming.slips import Mistake

_SAMPLE = 16  # trials checked first: most candidates fail on these, before the whole stack is compared
_KEPT = 16  # a sample's and the whole set of candidates, for the exercises of a class


@dataclass(frozen=True)
class Diagnosis:
    name: str
    feedback: str
    family: MistakeFamily


def diagnose(
    exercise: Exercise,
    references: References,
    spec: ReturnSpec,
    returned: Mapping[int, Returned],
    comparisons: Mapping[int, Comparison],
    right: frozenset[str] = frozenset(),
) -> Diagnosis | None:
    """The mistake a logic return's values show, if they match one; None otherwise. `right`: the returns
    judged right (under the exercise's own convention), which no other year's convention can then explain."""
    trials = [i for i in sorted(returned) if i in references.spread]
    if not trials:
        return None
    # Every candidate on a few trials first, where most fail; only one that matches them is computed on
    # every trial (evaluating all the candidates' graphs on all of them took seconds for
    # cs231n.a3.lstm_step's 38 graphs; see docs/benchmarks.md).
    sample = trials[:_SAMPLE]
    candidates = _candidates(exercise, references, tuple(sample))
    for mistake in candidates.get(spec.name, []):
        convention = mistake.family is MistakeFamily.CONVENTION
        if convention and _contradicted(mistake, candidates, references, right):
            continue
        if not _matches(spec, references, mistake, sample, returned):
            continue
        for whole in _on_every_trial(exercise, references, spec, mistake):
            if _matches(spec, references, whole, trials, returned) and _separated(
                spec, references, whole, trials, returned
            ):
                return Diagnosis(whole.name, whole.feedback, whole.family)
    return _spatial_pattern([c for c in comparisons.values() if c.verdict is Verdict.LOGIC])


def near_misses(
    exercise: Exercise, references: References, spec: ReturnSpec, returned: Mapping[int, Returned]
) -> tuple[NearMiss, ...]:
    """How far a return's values are from each misconception the exercise declares for it, in that
    misconception's envelopes: on the sample `diagnose` tried first, or on every trial where the values
    match it there (what it computed already, so this costs one comparison per misconception)."""
    trials = [i for i in sorted(returned) if i in references.spread]
    sample = trials[:_SAMPLE]
    closest: dict[str, NearMiss] = {}
    for mistake in _candidates(exercise, references, tuple(sample)).get(spec.name, []):
        if not mistake.declared:
            continue
        miss = _distance(spec, references, mistake, sample, returned)
        if miss.envelopes <= 1.0:  # within it on the sample: the other trials tell how far
            wholes = [
                _distance(spec, references, w, trials, returned)
                for w in _on_every_trial(exercise, references, spec, mistake)
            ]
            miss = min(wholes, key=lambda m: m.envelopes, default=miss)
        if mistake.name not in closest or miss.envelopes < closest[mistake.name].envelopes:
            closest[mistake.name] = miss  # a misconception of several forms: the nearest
    return tuple(closest.values())


def _contradicted(
    convention: Mistake,
    candidates: Mapping[str, list[Mistake]],
    references: References,
    right: frozenset[str],
) -> bool:
    """Whether the student has right, under the exercise's own convention, a return that `convention`
    changes: then they do not follow it, and it is not what their other return shows (a regularisation's
    gradient halved under a loss that is not is a slip in the gradient, not the 2016 convention)."""
    for name in right:
        same = [m for m in candidates.get(name, []) if m.name == convention.name]
        if any(_differs(m, references, name) for m in same):
            return True
    return False


def _on_every_trial(
    exercise: Exercise, references: References, spec: ReturnSpec, mistake: Mistake
) -> list[Mistake]:
    """The candidate `mistake` computed on every trial rather than the sample: each of its forms (a
    misconception may have several, under one name)."""
    # One entry per set of references holds every name computed so far: an entry per name pushed the
    # sample's candidates out, to be computed again for the next return (cs231n.a3.lstm_step's 38 names).
    wholes = _wholes_of.get(references, exercise.id, dict)
    named = wholes.get(mistake.name)
    if named is None:
        named = wholes[mistake.name] = _compute_candidates(exercise, references, None, mistake.name)
    return [
        whole
        for whole in named.get(spec.name, [])
        if (whole.name, whole.family, whole.feedback) == (mistake.name, mistake.family, mistake.feedback)
    ]


def _matches(
    spec: ReturnSpec,
    references: References,
    mistake: Mistake,
    trials: list[int],
    returned: Mapping[int, Returned],
) -> bool:
    # The shape rule holds for mistakes too: a (1, d) return is matched against a (d,) mistake.
    if any(
        i not in mistake.outputs or not shapes.fits(mistake.outputs[i].shape, returned[i].array.shape)
        for i in trials
    ):
        return False
    for chunk in (trials[:_SAMPLE], trials[_SAMPLE:]):
        if not chunk:
            continue
        if not within_rounding(
            spec,
            [mistake.outputs[i] for i in chunk],
            [returned[i].array for i in chunk],
            [returned[i].dtype for i in chunk],
            [_spread(references, spec.name, mistake, i) for i in chunk],
        ):
            return False
    return True


def _spread(references: References, name: str, mistake: Mistake, trial: int) -> np.ndarray:
    """The rounding sensitivity of the mistaken formula's entries, bounded by the right formula's largest
    (its entries may sit elsewhere: transposed), scaled up with its values (a sum where a mean belongs is
    N times larger, and so is its rounding); and, where it was measured (a declared misconception), by
    its own: the larger of the two, entry by entry, so that a student who computes the mistake more
    directly than its expression, or less, is within it either way."""
    spread = references.spread[trial][name]
    expected, mistaken = references.expected[trial][name], mistake.outputs[trial]
    # Right values all 0 (dropout's every entry dropped) have no rounding to scale: 0, not 0 * inf
    if spread.size == 0 or mistaken.size == 0 or not np.any(spread):
        bound = np.zeros(mistaken.shape)
    else:
        with np.errstate(over="ignore"):  # values far above right ones near 0: no bound, not a warning
            scale = float(np.max(np.abs(mistaken))) / max(
                float(np.max(np.abs(expected))), np.finfo(np.float64).tiny
            )
        bound = np.full(mistaken.shape, float(np.max(spread)) * max(1.0, scale))
    own = None if mistake.spread is None else mistake.spread.get(trial)
    if own is None or own.shape != mistaken.shape:
        return bound
    widest: np.ndarray = np.maximum(bound, own)
    return widest


def _precisions(trials: list[int], returned: Mapping[int, Returned]) -> dict[int, Precision]:
    """The precision each trial is judged at, as within_rounding infers it: per returned dtype."""
    by_dtype: dict[str, list[int]] = {}
    for i in trials:
        by_dtype.setdefault(returned[i].dtype, []).append(i)
    found = {}
    for dtype, members in by_dtype.items():
        precision, _ = infer_precision([returned[i].array for i in members], dtype)
        found.update(dict.fromkeys(members, precision))
    return found


def _allowed(spec: ReturnSpec, values: np.ndarray, spread: np.ndarray, precision: Precision) -> np.ndarray:
    """How far from `values` rounding (or the return's own tolerance, which grading accepts too) reaches."""
    _, envelope = entry_errors(values, values, spread, precision)
    if not spec.explicit_tolerance:
        return envelope
    tolerance = (spec.atol or 0.0) + (spec.rtol or 0.0) * np.abs(values)
    allowed: np.ndarray = np.maximum(envelope, tolerance)
    return allowed


def _separated(
    spec: ReturnSpec,
    references: References,
    mistake: Mistake,
    trials: list[int],
    returned: Mapping[int, Returned],
) -> bool:
    """Whether the mistake's values leave the right ones beyond both envelopes on some entry: there values
    within its envelope cannot be right. A mistake that agrees with the right formula wherever the trials
    look (a term dropped that the gradient never sees, a factor on zeros) would otherwise name right code."""
    precisions = _precisions(trials, returned)
    for i in trials:
        mistaken, expected = mistake.outputs[i], references.expected[i][spec.name]
        if mistaken.shape != expected.shape:
            return True  # another shape: nothing right is within its envelope
        right = _allowed(spec, expected, references.spread[i][spec.name], precisions[i])
        own = _allowed(spec, mistaken, _spread(references, spec.name, mistake, i), precisions[i])
        with np.errstate(invalid="ignore"):
            if bool(np.any(np.abs(mistaken - expected) > right + own)):
                return True
    return False


def _distance(
    spec: ReturnSpec,
    references: References,
    mistake: Mistake,
    trials: list[int],
    returned: Mapping[int, Returned],
) -> NearMiss:
    """How far the returned values are from the mistake's, in its envelopes, over `trials`."""
    precisions = _precisions(trials, returned)
    worst, beyond, entries = 0.0, 0, 0
    where: tuple[int, tuple[int, ...]] = (trials[0], ())
    for i in trials:
        got = returned[i].array
        mistaken = mistake.outputs.get(i)
        if mistaken is None or not shapes.fits(mistaken.shape, got.shape):
            worst, where = np.inf, (i, ())
            entries += got.size
            beyond += got.size
            continue
        got = got.reshape(mistaken.shape)  # a size-1 axis added or dropped: graded as the due shape
        error, _ = entry_errors(mistaken, got, None, precisions[i])
        ratio = error / _allowed(spec, mistaken, _spread(references, spec.name, mistake, i), precisions[i])
        entries += ratio.size
        beyond += int(np.count_nonzero(ratio > 1.0))
        if ratio.size and float(np.max(ratio)) > worst:
            worst = float(np.max(ratio))
            where = (i, tuple(int(k) for k in np.unravel_index(int(np.argmax(ratio)), ratio.shape)))
    separated = _separated(spec, references, mistake, trials, returned)
    return NearMiss(mistake.name, worst, beyond, entries, len(trials), where[0], where[1], separated)


def _spatial_pattern(failing: list[Comparison]) -> Diagnosis | None:
    masks = [c.failing_mask for c in failing if c.failing_mask is not None and c.failing_mask.ndim == 2]
    if not masks or len(masks) != len(failing) or not all(m.any() for m in masks):
        return None
    if all(m.shape[0] == m.shape[1] and not (m & ~np.eye(m.shape[0], dtype=bool)).any() for m in masks):
        return Diagnosis(
            "only the diagonal is wrong",
            "the entries off the diagonal are right and the diagonal ones are not: look at what differs "
            "when i == j (a term that only the diagonal gets, or loses)",
            MistakeFamily.PATTERN,
        )
    for axis, what in ((1, "row"), (0, "column")):
        lines = [set(np.flatnonzero(m.any(axis=axis)).tolist()) for m in masks]
        if all(len(found) == 1 for found in lines):
            places = sorted({next(iter(found)) for found in lines})
            where = f"{what} {places[0]}" if len(places) == 1 else f"one {what} per case"
            return Diagnosis(
                f"only one {what} is wrong ({where})",
                f"every other {what} is right: look at what is special about that {what} (the first or last "
                "one, a boundary, an index off by one)",
                MistakeFamily.PATTERN,
            )
    return None


# Candidates are computed once per set of references (a class shares them) and kept for the next ones:
# on a sample of trials, and by name on every trial (by the name of each that matched a sample).
_candidates_of: PerObject[dict[str, list[Mistake]]] = PerObject(_KEPT)
_wholes_of: PerObject[dict[str, dict[str, list[Mistake]]]] = PerObject(_KEPT)


def _candidates(
    exercise: Exercise, references: References, sample: tuple[int, ...]
) -> dict[str, list[Mistake]]:
    """Every candidate of each return, on the `sample` trials."""
    return _candidates_of.get(
        references, (exercise.id, sample), lambda: _compute_candidates(exercise, references, sample, None)
    )


def _compute_candidates(
    exercise: Exercise, references: References, sample: tuple[int, ...] | None, only: str | None
) -> dict[str, list[Mistake]]:
    # Imported only now: they import torch, which `grader check` imports while its worker starts.
    from grader.judging.naming.mistakes import mutant_mistakes, standard_mistakes

    trials = [t for t in references.trials if sample is None or t.index in sample]
    found: dict[str, list[Mistake]] = {ret.name: [] for ret in exercise.spec.returns}
    for ret, mistake in _declared(exercise, trials, only):
        found[ret].append(mistake)
    for spec, mistake in standard_mistakes(exercise, trials, references.expected, only):
        found[spec.name].append(mistake)
    for spec, mistake in mutant_mistakes(exercise, trials, only):
        # A mutant that changes nothing on the sample may on the other trials: only all of them tell.
        if sample is not None or _differs(mistake, references, spec.name):
            found[spec.name].append(mistake)
    return found


def _declared(exercise: Exercise, trials: list[Trial], only: str | None) -> list[tuple[str, Mistake]]:
    from grader.exercise.reference import compute_references
    from grader.judging.naming.slips import Mistake

    known = [*exercise.spec.inputs, *exercise.spec.sizes, *exercise.computed]
    # Another year's convention first: the most precise name a student's values can get.
    declared = _conventions(exercise, trials, only)
    for misconception in exercise.spec.misconceptions:
        if only is not None and misconception.name != only:
            continue
        ret = misconception.return_
        for expr in misconception.expr:
            extra = parse(f"{MISCONCEPTION} = {expr}", known).assignments
            program = replace(exercise.program, assignments=exercise.program.assignments + extra)
            returns = (ReturnSpec(name=ret, value=MISCONCEPTION),)
            spec = exercise.spec.model_copy(update={"returns": returns})
            variant = replace(exercise, program=program, spec=spec)
            try:
                # Its values and its own envelope, measured as the right formula's: an expression written
                # from the graph's names may round far more than the code that makes the mistake.
                computed = compute_references(variant, trials)
            except Exception:  # a form that fails on some sizes cannot be what the student computed there
                continue
            outputs = {i: np.asarray(values[ret]) for i, values in computed.expected.items()}
            spread = {i: np.asarray(values[ret]) for i, values in computed.spread.items()}
            mistake = Mistake(
                misconception.name, MistakeFamily.DECLARED, outputs, misconception.feedback, spread
            )
            declared.append((ret, mistake))
    return declared


def _conventions(exercise: Exercise, trials: list[Trial], only: str | None) -> list[tuple[str, Mistake]]:
    """Each declared convention's values on every return, and their own envelopes: one evaluation of the
    exercise under it gives all the returns it changes."""
    from grader.exercise.conventions import convention_variant
    from grader.exercise.reference import compute_references
    from grader.judging.naming.slips import Mistake

    found = []
    for convention in exercise.spec.conventions:
        if only is not None and convention.label != only:
            continue
        try:
            computed = compute_references(convention_variant(exercise, convention), trials)
        except Exception:  # `grader validate` says so (it checks that each convention differs)
            continue
        for ret in exercise.return_names:
            outputs = {i: np.asarray(values[ret]) for i, values in computed.expected.items()}
            spread = {i: np.asarray(values[ret]) for i, values in computed.spread.items()}
            family = MistakeFamily.CONVENTION
            found.append((ret, Mistake(convention.label, family, outputs, convention.feedback, spread)))
    return found


def _differs(mistake: Mistake, references: References, name: str) -> bool:
    """A mutant that changes nothing here (relu left out where every input is positive) names nothing."""
    return any(
        out.shape != references.expected[i][name].shape or not np.allclose(out, references.expected[i][name])
        for i, out in mistake.outputs.items()
    )
