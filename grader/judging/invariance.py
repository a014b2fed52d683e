"""Shifts that leave an exercise's returns unchanged, and trials moved by them: torch's float64 instability.

Numpy code that computed in float64 is rerun in extended precision (reruns/); torch has nothing above
float64, so a torch formula that under- or overflows float64 (softmax with one shift for the whole batch,
log(sum(exp(x))) unshifted) could not be told from a mistake. Many exercises' values do not change when a
constant is added to each row of an input (softmax, log-softmax, cross-entropy over a row of scores; the
scores X @ W move by a constant per row when each row of W does). Where the exercise's graph has such an
invariance, a trial that failed beyond float64 rounding is run once more on inputs whose rows are moved
to small values: the exact mathematics is the same, so the values due are the same; a formula right in
exact arithmetic gives them there, where nothing over- or underflows; a mistake (a sign, a 1/N, the
wrong axis's max, a max subtracted and never added back) stays wrong. The targets are small random
numbers away from 0 (never exactly 0), so a formula wrong by the row's maximum cannot look right there.

The invariance is derived, not declared: the exercise's own float64 graph is evaluated on a few trials
and on the same trials shifted, and every return must agree to 1e-9 of its scale. Only inputs whose
shift is large (more than `LARGE_SHIFT`) are moved: on moderate inputs float64 neither over- nor
underflows in exp, and a failure there is not one of range; an exercise without such inputs (or without
the invariance) costs nothing more.

A term that no shift leaves unchanged (a regularisation reg * sum(W * W) beside the softmax) hides the
invariance of the rest. Where setting one scalar input to 0 (reg) makes the exercise shift-invariant,
derived the same way, a failing float64 trial is run three more times: (A) with that input 0, (B) with it
0 and the rows moved, (C) with the rows moved and the input as it was. B's values due are A's (the
derived invariance), C's are the reference's at C's own inputs (the term checked where nothing over- or
underflows). Instability only where B and C are right and A is wrong: the failure survives with the term
gone, where the maths is shift-invariant, and the term itself is right.

What this cannot tell: a formula that differs from the exercise's only where inputs are large (scores
clipped at 700 before exp) is right at the shifted point too. It stays a mistake where it is wrong on
every trial (reruns/resolve.py's finite_somewhere), but where some trial's inputs stay below its threshold
it reads as unstable (measured on tests/torch_instability: logic at 200 trials of seed 0, instability at
1000). Numpy code is judged by its extended-precision rerun instead, which sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grader.errors import GraderError
from grader.exercise.expected import Expected, References
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial
from grader.memo import PerObject

SHIFT_BASE = 1 << 41  # shifted trials' ids: beyond any trial index and consistency.PROBE_BASE's probes
ZEROED_BASE = 1 << 42  # the trial with the zeroed input at 0 (probe A)
ZEROED_SHIFT_BASE = ZEROED_BASE + SHIFT_BASE  # that trial with its rows moved too (probe B)
# Moves below this leave exp's arguments where float64 holds exp exactly to rounding (exp(20) = 4.9e8):
# nothing of range to find there.
LARGE_SHIFT = 20.0
_SAMPLE_TRIALS = 4  # trials the invariance is derived on
_AGREE = 1e-9  # relative to a return's largest entry: far above float64 rounding, far below any mistake
_TARGET_LOW, _TARGET_HIGH = 0.5, 2.0  # each row's new maximum: ±[0.5, 2], never 0


@dataclass(frozen=True)
class Shift:
    """Adding a constant to each slice of `input` along `axis` (all of it where axis is None) leaves every
    return unchanged."""

    input: str
    axis: int | None
    # A scalar input that must be 0 for the invariance to hold (reg beside a softmax): None where the
    # exercise is invariant as it is.
    zeroed: str | None = None

    @property
    def words(self) -> str:
        """What a student reads: 'each row of W is moved by a constant'."""
        if self.axis is None:
            return f"every entry of {self.input} is moved by the same constant"
        return f"each {_slice_word(self.axis)} of {self.input} is moved by a constant"

    def moved(self, trial: Trial) -> Trial:
        """`trial` with each slice of the input moved so that its largest entry is a small number."""
        return self._moved(trial, trial.index, SHIFT_BASE + trial.index)

    def zeroed_trials(self, trial: Trial) -> tuple[Trial, Trial] | None:
        """Probes A (the zeroed input at 0) and B (at 0, and moved as `moved` moves it), where the
        invariance needs a zeroed input."""
        if self.zeroed is None:
            return None
        zero = np.zeros_like(np.asarray(trial.inputs[self.zeroed]))
        at_zero = Trial(ZEROED_BASE + trial.index, trial.sizes, {**trial.inputs, self.zeroed: zero})
        return at_zero, self._moved(at_zero, trial.index, ZEROED_SHIFT_BASE + trial.index)

    def _moved(self, trial: Trial, seed: int, index: int) -> Trial:
        # Seeded by the original trial's number: B is moved exactly as C is.
        point = np.asarray(trial.inputs[self.input], dtype=np.float64)
        top = point.max(axis=self.axis, keepdims=True)
        rng = np.random.default_rng([seed % (1 << 32), 0x5F1F7])
        sign = np.where(rng.random(top.shape) < 0.5, -1.0, 1.0)
        target = sign * rng.uniform(_TARGET_LOW, _TARGET_HIGH, top.shape)
        moved = point + (target - top)
        return Trial(index, trial.sizes, {**trial.inputs, self.input: moved})

    def large(self, trial: Trial) -> bool:
        """Whether moving `trial` changes its input by more than LARGE_SHIFT: large inputs, where float64's
        exp can leave its range."""
        point = np.asarray(trial.inputs[self.input], dtype=np.float64)
        if point.size == 0 or not np.all(np.isfinite(point)):
            return False
        return float(np.max(np.abs(point.max(axis=self.axis)))) > LARGE_SHIFT


def shifted_index(trial: int) -> int:
    return SHIFT_BASE + trial


def zeroed_indices(trial: int) -> tuple[int, int]:
    """Probes A's and B's ids (Shift.zeroed_trials) for a trial."""
    return ZEROED_BASE + trial, ZEROED_SHIFT_BASE + trial


def _slice_word(axis: int) -> str:
    # The slices that each get their own constant run along `axis`: a row of a matrix for its last axis.
    return "row" if axis == -1 else f"slice along axis {axis}"


_derived: PerObject[Shift | None] = PerObject(kept=16)


@dataclass(frozen=True)
class ZeroedDue:
    """The float64 reference at probes A (B's values due too, by the invariance) and C, with their
    rounding spreads."""

    at_zero: Expected
    at_zero_spread: Expected
    moved: Expected
    moved_spread: Expected


# Per set of references: a trial's ZeroedDue, computed for the trials a hand-in failed and kept for the
# class (its hand-ins fail on much the same trials).
_zeroed_due: PerObject[dict[int, ZeroedDue]] = PerObject(kept=16)


def zeroed_due(
    exercise: Exercise, references: References, shift: Shift, indices: Sequence[int]
) -> dict[int, ZeroedDue]:
    """The values due at probes A and C of `indices`; none where the reference cannot be evaluated there."""
    from grader.exercise.reference import compute_references

    kept = _zeroed_due.get(references, (exercise.id, shift), dict)
    missing = sorted({i for i in indices if i not in kept})
    if missing:
        by_index = {t.index: t for t in references.trials}
        probes: list[Trial] = []
        for index in missing:
            pair = shift.zeroed_trials(by_index[index])
            if pair is not None:
                probes += [pair[0], shift.moved(by_index[index])]
        try:
            with np.errstate(all="ignore"):
                due = compute_references(exercise, probes) if probes else None
        except (GraderError, ValueError, RuntimeError, OverflowError):
            due = None
        if due is not None:
            for index in missing:
                a, c = zeroed_indices(index)[0], shifted_index(index)
                kept[index] = ZeroedDue(due.expected[a], due.spread[a], due.expected[c], due.spread[c])
    return {i: kept[i] for i in indices if i in kept}


def shift_of(exercise: Exercise, references: References) -> Shift | None:
    """The exercise's shift invariance, derived once per set of references (a class shares it)."""
    return _derived.get(references, exercise.id, lambda: _derive(exercise, references.trials))


def _candidates(exercise: Exercise, sample: Trial) -> list[Shift]:
    found: list[Shift] = []
    for name, spec in exercise.spec.inputs.items():
        value = sample.inputs.get(name)
        if spec.dist not in ("uniform", "normal") or spec.dtype != "float64" or spec.type == "python":
            continue
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.size < 2:
            continue
        # The finest first: a constant per row fixes more than one for the whole array (rows of one entry
        # would move every entry anyhow: no invariance to find there).
        found += [Shift(name, -1)] if value.ndim > 1 and value.shape[-1] > 1 else []
        found.append(Shift(name, None))
    return found


def _zeroable(exercise: Exercise, sample: Trial) -> list[str]:
    """Scalar float inputs drawn from a range (reg): those that may be set to 0 to make the rest invariant."""
    found = []
    for name, spec in exercise.spec.inputs.items():
        value = sample.inputs.get(name)
        if spec.dist not in ("uniform", "normal") or spec.dtype != "float64":
            continue
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype == np.float64:
            found.append(name)
    return found


def _derive(exercise: Exercise, trials: Sequence[Trial]) -> Shift | None:
    sample = list(trials[:_SAMPLE_TRIALS])
    if not sample:
        return None
    plain = _invariant(exercise, sample)
    if plain is not None:
        return plain
    for name in _zeroable(exercise, sample[0]):
        at_zero = [Trial(t.index, t.sizes, {**t.inputs, name: np.zeros_like(t.inputs[name])}) for t in sample]
        found = _invariant(exercise, at_zero)
        if found is not None:
            return Shift(found.input, found.axis, zeroed=name)
    return None


def _invariant(exercise: Exercise, sample: list[Trial]) -> Shift | None:
    # Imported only now: it imports torch, which `grader check` imports while its worker starts.
    from grader.exercise.reference import reference_returns

    for shift in _candidates(exercise, sample[0]):
        moved = [shift.moved(t) for t in sample]
        try:
            with np.errstate(all="ignore"):
                before = reference_returns(exercise, sample)
                after = reference_returns(exercise, moved)
        except (GraderError, ValueError, RuntimeError, OverflowError):
            continue  # the graph cannot take the moved inputs (a log of a negative number): no invariance
        if all(
            _agree(before[t.index][name], after[m.index][name])
            for t, m in zip(sample, moved, strict=True)
            for name in before[t.index]
        ):
            return shift
    return None


def _agree(due: np.ndarray, moved: np.ndarray) -> bool:
    due, moved = np.asarray(due, dtype=np.float64), np.asarray(moved, dtype=np.float64)
    if due.shape != moved.shape or not (np.all(np.isfinite(due)) and np.all(np.isfinite(moved))):
        return False
    scale = max(float(np.max(np.abs(due), initial=0.0)), float(np.finfo(np.float64).tiny))
    return float(np.max(np.abs(due - moved), initial=0.0)) <= _AGREE * scale
