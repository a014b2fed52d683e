"""How far a wrong return is off, in one form whatever the number of trials: relative to the largest
value due (what a student can picture), the absolute error beside it; and NaN and infinities by name.

A relative error per entry explodes where the value due is near 0 (an entry due as 1e-9 and off by 0.5 is
"5e10 off"), so the same mistake read "37%" on one trial and "4819%" on fifty. Against the trial's largest
|expected| it stays the size of the mistake.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from grader.judging.compare import Comparison
from grader.text import counted, plural

# Entries named for a NaN or an infinity: enough to find them, few enough for one line.
NAMED_ENTRIES = 3


def percent(fraction: float) -> str:
    """`fraction` as a percentage of two significant digits, or whole above 10%: "0.52%", "37%", "4819%"."""
    value = 100.0 * fraction
    if not math.isfinite(value):  # 1.7e308 against 0.5: more than a float holds
        return "vastly more than 100%"
    if value >= 1e6:
        return f"{value:.2g}%"
    return f"{value:.0f}%" if value >= 10 else f"{value:.2g}%"


def relative(comparison: Comparison) -> float:
    """The trial's largest finite |error| against its largest |expected| (inf where only 0 was due)."""
    if comparison.largest_expected > 0 and math.isfinite(comparison.largest_expected):
        return comparison.max_abs_error / comparison.largest_expected
    return math.inf if comparison.max_abs_error > 0 else 0.0


def amount(comparison: Comparison) -> str:
    """ "37% (0.52 absolute, on values up to 1.4)", or "0.52 where 0 was due"."""
    if not comparison.largest_expected > 0:
        return f"{comparison.max_abs_error:.2g} where 0 was due"
    size = relative(comparison)
    return (
        f"{percent(size)} ({comparison.max_abs_error:.2g} absolute, "
        f"on values up to {comparison.largest_expected:.2g})"
    )


def how_wrong(decisive: Sequence[Comparison], total: int) -> str:
    """What the failing trials returned: NaN and infinities named with where, and the largest finite
    error, each with its count of trials, joined by '; '."""
    pieces = []
    for word in ("NaN", "infinity"):
        hit = [c for c in decisive if (c.nan_entries if word == "NaN" else c.inf_entries) > 0]
        if hit:
            pieces.append(f"returned {word} on {len(hit)} of {counted(total, 'trial')}{_where(hit, word)}")
    wrong = [c for c in decisive if c.max_abs_error > 0]
    if wrong:
        worst = max(wrong, key=relative)
        pieces.append(f"wrong by up to {amount(worst)} on {len(wrong)} of {counted(total, 'trial')}")
    return "; ".join(pieces)


def _where(hit: Sequence[Comparison], word: str) -> str:
    """Where the first trial that returned it did: its trial and first entries."""
    first = min(hit, key=lambda c: c.trial)
    nan = word == "NaN"
    count = first.nan_entries if nan else first.inf_entries
    at = [e.index for e in first.failing if (math.isnan(e.got) if nan else math.isinf(e.got))]
    if not any(at):  # none listed, or a single number returned: the trial says where
        return f" (first on trial {first.trial})"
    shown = ", ".join(f"[{', '.join(map(str, i))}]" for i in at[:NAMED_ENTRIES])
    more = f" and {count - len(at[:NAMED_ENTRIES])} more" if count > len(at[:NAMED_ENTRIES]) else ""
    return f" (first on trial {first.trial}: {plural(count, 'entry')} {shown}{more})"
