"""Judging by a rerun above the precision used: at float64 for narrower code, in numpy's extended precision
for float64 code. Amplified rounding shrinks with the unit roundoff; a mistake's error stays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.judging.compare import Comparison, Precision, RerunOutcome, entry_errors
from grader.judging.reruns.outcomes import decided

# numpy's extended precision where it is wider than float64 (not on Windows or macOS, where it is float64).
EXTENDED_EPS = float(np.finfo(np.longdouble).eps)
HAS_EXTENDED = Precision.FLOAT64.eps > EXTENDED_EPS
# Amplified rounding scales with the unit roundoff: rerun with u' instead of u, its error becomes about
# u'/u of what it was (2^-11 from float64 to x86's extended, 2^-29 from float32 to float64), a mistake's
# stays (within a factor 2 where rounding of a similar size adds to it). Rounding shrinks less where the
# rerun loses terms too: measured 7.3-fold on softplus_tails trial 677 (log(1 + exp(x)) summed over 32
# entries, those below -44.4 lost in extended precision as well), 50-fold on trial 133; 2048-fold
# where nothing is lost. An error that shrinks by this factor or more is rounding.
SHRINK_FACTOR = 4.0


@dataclass(frozen=True)
class Above:
    """A rerun's precision: its unit roundoff, and how notes say where the trial ran again."""

    eps: float
    where: str


AT_FLOAT64 = Above(Precision.FLOAT64.eps, "at float64")
IN_EXTENDED = Above(EXTENDED_EPS, "in extended precision")


def judged_by_scaling(
    original: Comparison,
    expected: np.ndarray,
    spread: np.ndarray,
    got: np.ndarray,
    rerun: np.ndarray,
    above: Above,
) -> Comparison:
    """The entries beyond rounding in the first run, seen again in a rerun at precision `above`.

    Zeros where a value below the first run's resolution of 1 was due, no worse in the rerun, are set
    aside: 1 + x - 1 loses such an x in any precision that cannot hold it, so they say nothing. Of the
    others: right in the rerun (within the first run's envelope) is instability. Infinities or NaN in the
    first run: the rerun must be right there, or not finite either (log(1 - sigmoid(x)) is -inf wherever
    1 - sigmoid(x) cancels to 0, in any precision): no evidence of a mistake. Finite errors
    must shrink with the formats' unit roundoffs (by SHRINK_FACTOR at least). Otherwise still
    wrong: a mistake.
    """
    precision = original.precision
    first_error, allowed = entry_errors(expected, got, spread, precision)
    rerun_error, _ = entry_errors(expected, rerun, spread, precision)
    got, rerun = (a.astype(np.float64).reshape(expected.shape) for a in (got, rerun))
    failing = first_error > allowed
    lost = failing & (got == 0) & (np.abs(expected) < precision.eps) & (rerun_error <= first_error)
    judged = failing & ~lost
    overflowed = judged & ~np.isfinite(got)
    finite = judged & ~overflowed
    right = rerun_error <= allowed
    at = above.where
    before, after = float(first_error[finite].sum()), float(rerun_error[finite].sum())
    shrink = before / after if after > 0 else np.inf
    if np.all(right[judged]):
        if not judged.any():
            note = (
                f"it returns 0 where values below {precision.eps:.2g} were due, also when rerun {at}: "
                "cancellation (1 + x - 1 loses an x that small)"
            )
            return decided(original, RerunOutcome.CANCELLED, note)
        return decided(original, RerunOutcome.RIGHT_HIGHER, f"right when rerun {at}", shrink)
    if np.any(overflowed & ~right & np.isfinite(rerun)):
        wrong, shrink = "still wrong", np.nan  # decided where the values overflowed, not by the shrink
    elif not np.any(finite & ~right):
        note = f"it overflows {precision.value}, and still does when rerun {at}: the format's range"
        return decided(original, RerunOutcome.OVERFLOWS, note)
    else:
        if above.eps < precision.eps and shrink >= SHRINK_FACTOR:
            by = f"{shrink:.3g}-fold" if np.isfinite(shrink) else "to nothing"
            note = (
                f"its error shrank {by} when rerun {at} (up to {precision.eps / above.eps:.3g}-fold "
                "for rounding): rounding that the formula amplifies"
            )
            return decided(original, RerunOutcome.SHRINKS, note, shrink)
        # One "wrong by" in what a student reads (classify's, relative to the values due): here, how much
        # the extra precision helped, as a factor.
        wrong = "still wrong" if shrink <= 2 else f"its error shrank only {shrink:.2g}-fold, still wrong"
    with np.errstate(over="ignore"):  # an error of 1e308 against a tiny envelope is infinitely many: evidence
        check = np.where(judged, rerun_error / allowed, 0.0)
    note = f"{wrong} when rerun {at} ({float(check.max()):.3g} envelopes)"
    measured = finite.any() and not np.isnan(shrink)
    return decided(original, RerunOutcome.STILL_WRONG, note, shrink if measured else None)
