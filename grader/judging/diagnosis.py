"""Name the mistake behind a logic return: the candidate whose values the student's match on every trial.

Candidates, in this order: the misconceptions the exercise declares (an expression over the graph's
names for what the return would be), the standard mistakes (transposed, sign, a factor 2 or 1/N, the
wrong input, a term of a sum dropped or scaled) and mutants of the graph (an elementwise product for a
matrix product, a function left out so its derivative is missing, an operand transposed), each evaluated
in float64 on the same trials. A candidate names the mistake only if the student's values lie within the
rounding envelope of its values on every trial compared: a mistake that matches none is named by none.
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
from grader.judging.compare import Comparison, within_rounding
from grader.memo import PerObject
from grader.outcomes import Verdict
from grader.sandbox.report import Returned

if TYPE_CHECKING:
    from grader.exercise.reference import References
    from grader.exercise.trials import Trial
    from grader.judging.mistakes import Mistake

_SAMPLE = 16  # trials checked first: most candidates fail on these, before the whole stack is compared
_KEPT = 16  # a sample's and the whole set of candidates, for the exercises of a class


@dataclass(frozen=True)
class Diagnosis:
    name: str
    feedback: str


def diagnose(
    exercise: Exercise,
    references: References,
    spec: ReturnSpec,
    returned: Mapping[int, Returned],
    comparisons: Mapping[int, Comparison],
) -> Diagnosis | None:
    """The mistake a logic return's values show, if they match one; None otherwise."""
    trials = [i for i in sorted(returned) if i in references.spread]
    if not trials:
        return None
    # Every candidate on a few trials first, where most fail; only one that matches them is computed on
    # every trial (evaluating all the candidates' graphs on all of them took seconds: 5.8 s for
    # cs231n.a3.lstm_step's 38 graphs on 200 trials, 0.6 s on 16).
    sample = trials[:_SAMPLE]
    for mistake in _candidates(exercise, references, tuple(sample)).get(spec.name, []):
        if not _matches(spec, references, mistake, sample, returned):
            continue
        for whole in _candidates(exercise, references, None, mistake.name).get(spec.name, []):
            if (whole.name, whole.feedback) == (mistake.name, mistake.feedback) and _matches(
                spec, references, whole, trials, returned
            ):
                return Diagnosis(whole.name, whole.feedback)
    return _spatial_pattern([c for c in comparisons.values() if c.verdict is Verdict.LOGIC])


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
    N times larger, and so is its rounding)."""
    spread = references.spread[trial][name]
    expected, mistaken = references.expected[trial][name], mistake.outputs[trial]
    if spread.size == 0 or mistaken.size == 0:
        return np.zeros(mistaken.shape)
    scale = float(np.max(np.abs(mistaken))) / max(float(np.max(np.abs(expected))), np.finfo(np.float64).tiny)
    return np.full(mistaken.shape, float(np.max(spread)) * max(1.0, scale))


def _spatial_pattern(failing: list[Comparison]) -> Diagnosis | None:
    masks = [c.failing_mask for c in failing if c.failing_mask is not None and c.failing_mask.ndim == 2]
    if not masks or len(masks) != len(failing) or not all(m.any() for m in masks):
        return None
    if all(m.shape[0] == m.shape[1] and not (m & ~np.eye(m.shape[0], dtype=bool)).any() for m in masks):
        return Diagnosis(
            "only the diagonal is wrong",
            "the entries off the diagonal are right and the diagonal ones are not: look at what differs "
            "when i == j (a term that only the diagonal gets, or loses)",
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
            )
    return None


# Candidates are computed once per set of references (a class shares them) and kept for the next ones.
_candidates_of: PerObject[dict[str, list[Mistake]]] = PerObject(_KEPT)


def _candidates(
    exercise: Exercise, references: References, sample: tuple[int, ...] | None, only: str | None = None
) -> dict[str, list[Mistake]]:
    """The candidates of each return, on the `sample` trials, or on every trial (None); every candidate,
    or those named `only`."""
    return _candidates_of.get(
        references,
        (exercise.id, sample, only),
        lambda: _compute_candidates(exercise, references, sample, only),
    )


def _compute_candidates(
    exercise: Exercise, references: References, sample: tuple[int, ...] | None, only: str | None
) -> dict[str, list[Mistake]]:
    # Imported only now: they import torch, which `grader check` imports while its worker starts.
    from grader.judging.mistakes import mutant_mistakes, standard_mistakes

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
    from grader.exercise.reference import reference_returns
    from grader.judging.mistakes import Mistake

    known = [*exercise.spec.inputs, *exercise.spec.sizes, *exercise.computed]
    declared = []
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
                computed = reference_returns(variant, trials)
            except Exception:  # a form that fails on some sizes cannot be what the student computed there
                continue
            outputs = {i: np.asarray(values[ret]) for i, values in computed.items()}
            declared.append((ret, Mistake(misconception.name, outputs, misconception.feedback)))
    return declared


def _differs(mistake: Mistake, references: References, name: str) -> bool:
    """A mutant that changes nothing here (relu left out where every input is positive) names nothing."""
    return any(
        out.shape != references.expected[i][name].shape or not np.allclose(out, references.expected[i][name])
        for i, out in mistake.outputs.items()
    )
