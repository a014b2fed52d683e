"""Which trials' rounding spreads judging needs (issue 41): the Monte Carlo spread only widens an envelope,
so an entry whose error is within the envelope's lower bound, the spread left out,

    eps · MAGNITUDE_FACTOR · (|expected| + max|expected|) + MAGNITUDE_FACTOR · tiny     (compare.py)

is within its envelope whatever its spread. A cold `grader check` computes the expected values alone
(DeferredSpreads), and the spreads of the trials a hand-in's first pass leaves unsettled: on CS231n A2's
bundled solutions 224 of 9500 trials, where the spreads of all cost 2.7 s of CPU (bench/envelope_settled.py).

The lower bound stands in for the spread only where every trial of the first pass then passes, each
unsettled one judged with its true spread: those verdicts are the ones the true spreads give, and such a
pass asks for no rerun, so nothing else is judged by it (the autograd check's trials get their true
spreads in any case: a checked worker's answers are judged by them). A pass with anything else (a trial
beyond rounding, within a tolerance but not the envelope, in error) is judged with the true spreads of
every trial, all computed at once, as without deferral.
"""

from __future__ import annotations

from collections.abc import Collection

from grader.exercise.expected import DeferredSpreads, References
from grader.exercise.spec import Exercise
from grader.judging.reruns.plan import compare_first_pass
from grader.sandbox.report import Pass


def settled(exercise: Exercise, references: References, first: Pass, checks: Collection[int]) -> References:
    """The references to judge `first` by: where their spreads are deferred and the pass is within
    rounding everywhere, the lower bound in place of the spreads of the trials it settles; otherwise
    `references` themselves, every spread computed (but for a pass that stopped: nothing is compared)."""
    spreads = references.spread
    if not isinstance(spreads, DeferredSpreads) or spreads.complete or first.stopped is not None:
        return references
    trials = [t.index for t in references.trials]
    if not first.failures and all(t in first.outputs for t in trials):
        # One computation: the unsettled trials' spreads and the autograd check's.
        spreads.fill({*checks, *_beyond(exercise, spreads.lower_bound(references), first)})
        view = spreads.lower_bound(references)
        if not _beyond(exercise, view, first):
            return view
    spreads.fill(trials)
    return references


def _beyond(exercise: Exercise, references: References, first: Pass) -> set[int]:
    """The trials of `first` judged anything but pass by `references`."""
    return {t for spec in exercise.spec.returns for t in compare_first_pass(spec, references, first).others}
