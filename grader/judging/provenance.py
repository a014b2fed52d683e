"""Whether a return the exercise asks to be derived by hand came from torch's autograd.

The values cannot tell: a gradient copied from `W.grad` is as right as autograd. What can: on a few trials
the grader picks from the seed (`pick_checks`: secret wherever the seed is, as in every grading that
counts, and the same for the same seed, so that `--seed S` replays a grading exactly), the worker changes
what autograd
gives (worker/autograd_check.py, `_CheckedEngine`): every gradient torch's engine or forward mode hands
out is multiplied by
factors of its own, drawn in the worker from os.urandom in [1.25, 1.75] per call, per edge of the graph
and per result. These are ordinary trials of the first pass: fresh inputs, seeded as any other, nothing
asked later; a return derived by hand is right on them as on any trial, one taken from autograd (`.grad`,
`autograd.grad`, `torch.func`, forward mode, a backward pass run by `backward(dout)`) is off by 25% or more.

Only by-hand returns are judged on checked trials: the others (`auto_grad`, values like `f`) are left out
of their comparisons and reruns, since autograd's values there are changed on purpose. A by-hand return
is graded on the checks and fails closed: right on every ordinary trial but off on a checked one, it is
`autograd`, no points; a checked trial that did not complete (it raised, exited, crashed or ran out of
time, or the channel was lost) earns it no points either, since the check could not run.

Off on a check is a copy's sign only in code that answers the same call the same way. Before a by-hand
return is called a copy, the last few ordinary trials run once more exactly as they first ran (`steady`):
a hand-in whose answers changed there (right on its first thousand calls and wrong after, say) keeps no
points either, but is told that it returned different answers for the same inputs, as `logic`, not
`autograd`. A copy cannot earn anything by changing its answers: the return is off on a check either way.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.expected import References
from grader.exercise.spec import Exercise, ReturnSpec
from grader.exercise.trials import Trial
from grader.outcomes import Failure, Verdict
from grader.results import ReturnResult
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.report import Pass, RerunRequest, Returned
from grader.text import counted

if TYPE_CHECKING:
    from grader.judging.compare import Compared, Comparison
    from grader.judging.reruns import ChangedAnswer

# Checked trials per run: one copy off on a single checked trial suffices, three make a copy that is right
# by chance on one (an entry whose factors' mixture lands near 1) still caught; fewer where the run has few
# trials, so that at least half its trials judge every return (none in a run of one trial).
CHECKS = 3
# A checked trial beyond rounding counts against a by-hand return where its largest change is more than
# this share of the reference's largest entry: a copy is off by at least 1.25 - 1 = 25% (every factor is
# at least 1.25), a hand derivation's rounding by far less, even an unstable formula's on a trial where its
# cancellation shows (softplus_tails' cancelling sigmoid, in tests/corpus/, is beyond rounding on some
# trials and must keep its points there: its ordinary trials may all be fine). Less than that is left to
# the ordinary trials to judge.
OFF = 1 / 8
# Right on at least this many ordinary trials before a checked trial off by more than OFF is called a copy:
# a mistake that shows on some inputs only (cs231n's db as a mean where a sum is due, right where N = 1)
# can hide on one or two ordinary trials and show on a checked one (seen on affine with 3 trials). Below
# it the return still earns nothing there, as `logic`: wrong where it was checked, cause not named.
ACCUSE_AFTER = 8
# Ordinary trials run again as they first ran before a by-hand return is called a copy: the last ones of
# the first pass, after which a hand-in that changes its answers after many calls has changed them.
STEADY = 3


def pick_checks(
    exercise: Exercise, trials: Sequence[Trial], seed: int, only_trial: int | None = None
) -> tuple[int, ...]:
    """The trials to check, drawn from the seed (which `grader run` and `grader gradescope` draw in secret
    for each grading, so that no hand-in can know them) and the exercise: the same trials for the same
    seed, so a run replayed with its seed gives the same result, and every hand-in of one run is checked on
    the same trials. None where no return is to be derived by hand, nor in a single trial's replay
    (`--trial`). Never trial 0, whose sizes are all at their smallest: where every return is judged, the
    smallest failing case is the same from one grading to the next."""
    if only_trial is not None or not any(r.by_hand for r in exercise.spec.returns):
        return ()
    count = min(CHECKS, len(trials) // 2)
    indices = [t.index for t in trials if t.index != 0]
    drawn = hashlib.sha256(f"grader checks\0{seed}\0{exercise.id}\0{len(trials)}".encode()).digest()
    return tuple(sorted(random.Random(drawn).sample(indices, min(count, len(indices)))))


@dataclass(frozen=True)
class Checks:
    """The checked trials of a first pass: what they gave, and the references they are compared with."""

    trials: tuple[int, ...]
    first: Pass  # their outputs and failures
    references: References  # theirs alone
    stopped: Failure | None = None  # what ended the first pass early, if it did
    reruns: Pass = field(default_factory=Pass)  # the worker's reruns at float64 (checked again), when read
    extended: Pass = field(default_factory=Pass)  # and in extended precision
    # The last ordinary trials of the first pass, run again as they first ran where a by-hand return is off
    # on a check (with_reruns): their references, what they first gave, and what they gave again.
    steady: References = field(default_factory=lambda: References((), {}, {}))
    steady_first: Pass = field(default_factory=Pass)
    again: Pass = field(default_factory=Pass)


def with_reruns(request: RerunRequest, exercise: Exercise, checks: Checks) -> RerunRequest:
    """`request`, and the checked trials on which a by-hand return is off: run again, checked again,
    above their precision (at float64; in extended precision for float64 work). A copy is off again by new
    factors; an unstable formula's error shrinks, as on any trial (reruns.py), and it is no copy."""
    from grader.judging.reruns import HAS_EXTENDED  # reruns imports this module

    again: set[int] = set()
    extended: set[int] = set()
    for spec in exercise.spec.returns:
        if spec.by_hand and checks.trials:
            for found in _off(spec, checks):  # a copy, or an approximation: both reruns decide
                again.add(found.trial)
                if found.dtype == "float64" and HAS_EXTENDED:
                    extended.add(found.trial)
    if not again:
        return request
    steady = (t.index for t in checks.steady.trials)
    return replace(
        request,
        trials=tuple(sorted({*request.trials, *again})),
        extended=tuple(sorted({*request.extended, *extended})),
        again=tuple(sorted({*request.again, *steady})),
    )


def split(references: References, first: Pass, checks: Sequence[int]) -> tuple[References, Pass, Checks]:
    """The ordinary trials (their references and first pass, judged as any), and the checked ones.

    What a checked trial gave, values or a failure of its call, counts for the returns to be derived by
    hand alone: autograd's values are changed there on purpose, so honest code may fail on it (a function
    that asserts that autograd's gradient equals its own raises there), and only the by-hand returns lose
    their points for it (a check that could not run, `checked`). A checked trial that never ran, the pass
    having ended before it, stays among the ordinary ones: the end of a pass is every return's."""
    checked = frozenset(checks)
    if not checked:
        return references, first, Checks((), Pass(), References((), {}, {}), first.stopped)
    ran = checked & (first.outputs.keys() | first.failures.keys())
    answered = [t for t in references.trials if t.index in first.outputs and t.index not in checked]
    steady = {t.index for t in answered[-STEADY:]}

    def only(keep: bool) -> tuple[References, Pass]:
        wanted = checked if keep else ran
        trials = tuple(t for t in references.trials if (t.index in wanted) is keep)
        indices = {t.index for t in trials}
        kept = References(
            trials,
            {i: e for i, e in references.expected.items() if i in indices},
            {i: s for i, s in references.spread.items() if i in indices},
        )
        return kept, first.restricted(indices)

    ordinary_references, ordinary = only(False)
    checked_references, checked_pass = only(True)
    steady_references = References(
        tuple(t for t in references.trials if t.index in steady),
        {i: e for i, e in references.expected.items() if i in steady},
        {i: s for i, s in references.spread.items() if i in steady},
    )
    return (
        ordinary_references,
        ordinary,
        Checks(
            tuple(sorted(checked)),
            checked_pass,
            checked_references,
            first.stopped,
            steady=steady_references,
            steady_first=first.restricted(steady),
        ),
    )


@dataclass(frozen=True)
class _Off:
    trial: int
    off: float  # its largest change from the reference, as a share of the reference's largest entry
    comparison: Comparison  # the trial's, beyond rounding
    got: np.ndarray
    dtype: str  # as returned


def _not_completed(name: str, checks: Checks, trial: int) -> str | None:
    """Why a checked trial gave no array for `name`, or None where it gave one."""
    output = checks.first.outputs.get(trial)
    if output is not None:
        item = output.by_name[name]
        if isinstance(item, ReturnProblem):
            return f"{name} {item.problem}"
        return None if isinstance(item, Returned) else "no result"
    failure = checks.first.failures.get(trial)
    if failure is not None:
        return f"{failure.kind}: {failure.message}"
    if checks.stopped is not None:
        return f"never ran: {checks.stopped.kind} ({checks.stopped.message})"
    return "no result came back"


def _off(spec: ReturnSpec, checks: Checks) -> list[_Off]:
    """The checked trials on which `spec`'s return is beyond rounding, and by how much."""
    from grader.judging.reruns import compare_first_pass  # reruns imports this module

    compared: Compared = compare_first_pass(spec, checks.references, checks.first)
    # float64 values within float32 rounding pass as float32 work widened (reruns.compare_first_pass); on a
    # checked trial only where the ordinary trials were so too: exact float64 elsewhere and float32-close
    # where autograd was altered is an approximation returned there (float64 finite differences, 1e-10 off)
    strict = not any(
        _widened(c) for c in compare_first_pass(spec, checks.steady, checks.steady_first).others.values()
    )
    found = []
    for index, comparison in sorted(compared.others.items()):
        if comparison.verdict in (Verdict.PASS, Verdict.PRECISION) and not (strict and _widened(comparison)):
            continue
        got = checks.first.outputs[index].by_name[spec.name]
        expected = np.asarray(checks.references.expected[index][spec.name], dtype=np.float64)
        assert isinstance(got, Returned)
        array = got.array.astype(np.float64)
        if array.shape != expected.shape:  # a hand derivation returns the shape it does on every trial
            found.append(_Off(index, np.inf, comparison, got.array, got.dtype))
            continue
        scale = float(np.abs(expected[np.isfinite(expected)]).max(initial=0.0))
        change = np.abs(array - expected)
        largest = float(np.nan_to_num(change, nan=np.inf).max(initial=0.0))
        off = largest / scale if scale > 0 else np.inf
        found.append(_Off(index, off, comparison, got.array, got.dtype))
    return found


def _widened(comparison: Comparison) -> bool:
    return comparison.verdict in (Verdict.PASS, Verdict.PRECISION) and comparison.note.startswith(
        "float64 values within float32 rounding"
    )


def _unstable(spec: ReturnSpec, checks: Checks, found: _Off) -> bool:
    """Whether a checked trial off beyond rounding is an unstable formula's: its error shrinks when the
    trial runs again above its precision, checked again (a copy's does not: it is off by new factors)."""
    from grader.judging.reruns import _rerun_of, resolve_with_rerun  # reruns imports this module

    name, index = spec.name, found.trial
    resolved = resolve_with_rerun(
        found.comparison,
        spec,
        checks.references.expected[index][name],
        checks.references.spread[index][name],
        found.got,
        _rerun_of(checks.reruns, index, name),
        _rerun_of(checks.extended, index, name),
    )
    return resolved.verdict is Verdict.INSTABILITY


_FEEDBACK = (
    "derive {name} from the forward computation's values (the chain rule, in numpy or torch operations), "
    "without .grad, backward(), torch.autograd, torch.func or forward-mode AD"
)


def checked(judged: ReturnResult, spec: ReturnSpec, checks: Checks) -> ReturnResult:
    """`judged` (from the ordinary trials), graded on the checked trials too: no points where a check did
    not complete, verdict autograd where the return was right on the ordinary trials but off on a check."""
    if not checks.trials:
        return judged  # nothing checked: a replay, a run of one trial
    name = judged.name
    # The checked trials that ran count among the return's own (one that never ran, the pass having ended
    # before it, is among its ordinary trials already: split).
    ran = [t for t in checks.trials if t in checks.first.outputs or t in checks.first.failures]
    incomplete = [(t, why) for t in ran if (why := _not_completed(name, checks, t)) is not None]
    right = judged.trials - judged.failed_trials  # on the ordinary trials
    ordinary = judged
    judged = replace(
        judged, trials=judged.trials + len(ran), failed_trials=judged.failed_trials + len(incomplete)
    )
    if incomplete:
        trial, why = incomplete[0]
        note = (
            f"trial {trial} was one of the trials on which the grader checks that {name} is derived by "
            "hand, not taken from autograd, and a return whose check could not run earns no points"
        )
        if judged.verdict is Verdict.ERROR and ordinary.failed_trials == ordinary.trials:
            return judged  # it erred on every trial (a backward short of a value): the check is no news
        if judged.verdict is Verdict.ERROR:  # the trial's failure is told among its own already
            return replace(judged, message=f"{judged.message}; {note}")
        message = f"{name}: trial {trial} did not complete ({why}); {note}. Make the function run to its end"
        return _zero(judged, Verdict.ERROR, message, "")
    if judged.score == 0:
        return ordinary  # wrong anyway: its own verdict, on the trials it was judged on
    # Unstable on its ordinary trials, it may be unstable on a checked one too: there its rerun decides.
    # Not otherwise: a hand-in that tells a rerun from a first run (the seed is the same) could make its
    # rerun right.
    unstable = judged.verdict is Verdict.INSTABILITY
    found = _off(spec, checks)
    off = [o for o in found if o.off > OFF and not (unstable and _unstable(spec, checks, o))]
    # Off by less, beyond rounding only where autograd was altered: an unstable formula's error shrinks
    # when the trial runs again above its precision, an approximation's does not (finite differences in
    # float64 are off by 1e-9, crude float32 ones by 1e-3: a hand-in that probes autograd, finds it
    # altered and returns them there, autograd's values elsewhere).
    # Beyond rounding on most checked trials and on none of the others is no formula's rounding either,
    # whatever a rerun shows (float64 differences with a step of 1e-6 are mostly rounding: they shrink in
    # extended precision too): code right to rounding on every ordinary trial and unstable on a share p
    # of trials shows it on two of three checked ones with probability about 3p^2, p < 3/trials.
    small = [o for o in found if o.off <= OFF]
    if not off and judged.verdict is Verdict.PASS and len(ran) >= 2 and len(small) * 3 >= len(ran) * 2:
        return _approximated(judged, name, small, right, f"on {len(small)} of the {len(ran)} checked trials")
    approximated = [o for o in small if not _unstable(spec, checks, o)]
    if approximated and not off:
        shrink = "its error did not shrink when that trial ran again at a higher precision, as rounding would"
        return _approximated(judged, name, approximated, right, shrink)
    if not off:
        note = (
            f"also right on the {counted(len(ran), 'trial')} where the grader secretly altered autograd's "
            "gradients: derived by hand"
        )
        return replace(judged, message=f"{judged.message}; {note}")
    first = off[0]
    moved = f"off by {first.off:.0%} of its largest entry" if np.isfinite(first.off) else "not finite"
    others = f" and {counted(len(off) - 1, 'other trial')} like it" if len(off) > 1 else ""
    judged = replace(judged, failed_trials=judged.failed_trials + len(off))
    # What the check is, said once: on a few secret trials the grader multiplies every gradient autograd
    # gives (autograd_check.py); a return that moves with them is autograd's, not the student's formula.
    altered = (
        f"on those trials the grader secretly altered autograd's gradients, to check that {name} is derived "
        "by hand"
    )
    changed = _changed(name, checks)
    if changed is not None:
        # Answers that change between identical calls say nothing of where they came from: no accusation.
        message = (
            f"{name} was {moved} on trial {first.trial}{others} (where the grader checks that {name} is "
            f"derived by hand), though right on {counted(right, 'other trial')}; "
            + changed.words(name, "so being off on a check is no sign of autograd: judged by its values")
        )
        return _zero(judged, Verdict.LOGIC, message, "")
    if right < ACCUSE_AFTER:
        message = (
            f"{name} was {moved} on trial {first.trial}{others}; {altered}. It passed "
            f"{counted(right, 'other trial')}: too few for the grader to tell a copy of autograd from a "
            f"formula wrong on some inputs, and {name} must be right on those trials too to earn its points"
        )
        return _zero(judged, Verdict.LOGIC, message, "")
    message = (
        f"{name} comes from autograd, not from your own derivation: it was right on every other trial, "
        f"but {moved} on trial {first.trial}{others}; {altered}, and your {name} changed with them"
    )
    return _zero(judged, Verdict.AUTOGRAD, message, _FEEDBACK.format(name=name))


def _approximated(
    judged: ReturnResult, name: str, approximated: list[_Off], right: int, seen: str
) -> ReturnResult:
    first = approximated[0]
    others = f" and {counted(len(approximated) - 1, 'other trial')}" if len(approximated) > 1 else ""
    message = (
        f"{name} comes from autograd, not from your own derivation: it was right on every other trial, but "
        f"off by {first.off:.1e} of its largest entry (beyond rounding) on trial {first.trial}{others}, "
        f"where the grader secretly altered autograd's gradients ({seen}): an approximation returned where "
        f"autograd was altered (finite differences?), autograd's own values on the {counted(right, 'trial')} "
        "where it was not"
    )
    judged = replace(judged, failed_trials=judged.failed_trials + len(approximated))
    return _zero(judged, Verdict.AUTOGRAD, message, _FEEDBACK.format(name=name))


def _changed(name: str, checks: Checks) -> ChangedAnswer | None:
    """Where `name` came back otherwise from an ordinary trial run again as it first ran (`steady`)."""
    from grader.judging.reruns import changed_answer  # reruns imports this module

    returned = checks.steady_first.returned(name)
    got = {index: returned[index].array for index in returned}
    return changed_answer(name, checks.steady, got, checks.again)


def _zero(judged: ReturnResult, verdict: Verdict, message: str, feedback: str) -> ReturnResult:
    return replace(
        judged,
        verdict=verdict,
        score=0.0,
        message=message,
        misconception=None,
        feedback=feedback,
        failing_entries=(),
        case=None,
    )
