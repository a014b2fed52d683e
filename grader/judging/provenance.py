"""Whether a return the exercise asks to be derived by hand came from torch's autograd.

The values cannot tell: a gradient copied from `W.grad` is as right as autograd. What can: a few trials
(`pick_checks`: drawn from the seed, secret wherever the seed is, as in every grading that counts, and the
same for the same seed, so that `--seed S` replays a grading exactly) are run a second time, after the
ordinary worker's first pass, in a worker of their own (the checked worker: forked fresh from the zygote,
sequentially in the same slot, so nothing the ordinary run left reaches it), where autograd is wrong on every
route for the life of the process, from before the hand-in's import (worker/autograd_check.py). The
ordinary worker runs every trial, the checked ones included, as plain trials, with no hook of the check
and no word of which trials are checked: every return is judged on every trial there.

Judged by self-consistency: on each checked trial, a by-hand return must give in the checked worker what it
gave in the ordinary one on the same inputs, seeded alike, within that trial's rounding envelope at the
precision it used (compare.py's envelope; deterministic code gives the same bits, unstable or not). A copy
of autograd moves by 25% or more; an approximation returned only where autograd is wrong (finite
differences after a probe) moves beyond rounding; both earn the return nothing, `autograd`, and the
message says by how much it changed. The check fails closed: a checked run that raised, exited, crashed,
ran out of time or lost its channel earns the by-hand return nothing, and the report says "derived by
hand" only where the check ran and held.

A changed answer is a copy's sign only in code that answers the same call the same way: the checked trials
also run once more in the ordinary worker exactly as they first ran (`again`); a hand-in whose answers
changed there is told that it returned different answers for the same inputs, as `logic`, not `autograd`
(no points either way: a copy cannot earn anything by changing its answers).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np

from grader.exercise.expected import References
from grader.exercise.spec import Exercise, ReturnSpec
from grader.exercise.trials import Trial
from grader.judging.compare import entry_errors, infer_precision
from grader.judging.reruns.changed import changed_answer
from grader.memo import PerObject
from grader.outcomes import Verdict
from grader.results import ReturnResult
from grader.sandbox.payload import ReturnProblem
from grader.sandbox.report import Pass, RerunRequest, Returned
from grader.text import counted

# Checked trials per run: one copy off on a single checked trial suffices, three make a copy that is right
# by chance on one (an entry whose factors' mixture lands near 1) still caught; fewer where the run has few
# trials (half of them at most; none in a run of one trial).
CHECKS = 3


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


class CheckRun(Enum):
    """Whether the checked worker ran for a grading."""

    RAN = "ran"  # the checked trials ran in a checked worker of their own
    NOT_HERE = "not-here"  # no checked worker: grader.check in a notebook runs in the student's process
    # The ordinary pass stopped early, so every return errs: not run (a return with points all the same
    # would be one whose check did not complete).
    NEEDLESS = "needless"


@dataclass(frozen=True)
class Checks:
    """The checked trials of a grading: their references (envelopes), what the ordinary worker's first
    pass gave on them, what it gave when they ran again there as they first ran, and what the checked
    worker gave."""

    trials: tuple[int, ...]
    references: References = field(default_factory=lambda: References((), {}, {}))
    ordinary: Pass = field(default_factory=Pass)
    again: Pass = field(default_factory=Pass)
    checked: Pass = field(default_factory=Pass)
    run: CheckRun = CheckRun.RAN


# A class is checked on the same trials (one seed, one pick): the same objects for every hand-in, so that
# what is derived from them per object (their encoded frames, the flattened expected values) is derived
# once, not once per hand-in (memo.py).
_checked_trials: PerObject[tuple[Trial, ...]] = PerObject(kept=64)
_restricted: PerObject[References] = PerObject(kept=64)


def checked_trials(trials: Sequence[Trial], checks: Sequence[int]) -> tuple[Trial, ...]:
    """The trials the checked worker is sent: inputs and indices as the ordinary worker had them, so that
    each is seeded exactly as it was there."""

    def make() -> tuple[Trial, ...]:
        wanted = frozenset(checks)
        return tuple(t for t in trials if t.index in wanted)

    return _checked_trials.get(trials, tuple(checks), make)


def with_again(request: RerunRequest, checks: Sequence[int], first: Pass) -> RerunRequest:
    """`request`, and the checked trials run once more in the ordinary worker as they first ran: what tells
    a hand-in whose answers change between identical calls from one whose answer moved with autograd. Only
    where the first pass ran to its end (nothing more runs after one that stopped)."""
    ran = [t for t in checks if t in first.outputs]
    if not ran or first.stopped is not None:
        return request
    return replace(request, again=tuple(sorted({*request.again, *ran})))


def restricted(references: References, checks: Sequence[int]) -> References:
    """The references of the checked trials alone."""

    def make() -> References:
        wanted = frozenset(checks)
        return References(
            checked_trials(references.trials, checks),
            {i: e for i, e in references.expected.items() if i in wanted},
            {i: s for i, s in references.spread.items() if i in wanted},
        )

    return _restricted.get(references, tuple(checks), make)


def _refused(name: str, checks: Checks) -> tuple[int, str] | None:
    """The first checked trial where the checked worker saw what the course refuses in the calls, with what
    it saw and where (worker/numerical_watch.py), or None."""
    for trial in checks.trials:
        output = checks.checked.outputs.get(trial)
        item = output.by_name.get(name) if output is not None else None
        if isinstance(item, ReturnProblem) and item.refused == "numerical":
            return trial, item.problem
    return None


def _not_completed(name: str, checked: Pass, trial: int) -> str | None:
    """Why the checked worker gave no array for `name` on `trial`, or None where it gave one."""
    output = checked.outputs.get(trial)
    if output is not None:
        item = output.by_name[name]
        if isinstance(item, ReturnProblem):
            return f"{name} {item.problem}"
        return None if isinstance(item, Returned) else "no result"
    failure = checked.failures.get(trial)
    if failure is not None:
        return f"{failure.kind}: {failure.message}"
    if checked.stopped is not None:
        return f"never ran: {checked.stopped.kind} ({checked.stopped.message})"
    return "no result came back"


@dataclass(frozen=True)
class _Moved:
    trial: int
    change: float  # the largest |checked - ordinary|, as a share of the ordinary answer's largest entry
    envelope: float  # the largest rounding envelope of the trial's entries, as the same share


def _moved(spec: ReturnSpec, checks: Checks, trial: int) -> _Moved | None:
    """How `spec`'s return moved from the ordinary worker to the checked one on `trial`, or None where it
    stayed within the trial's rounding envelope at the precision it was computed in (or the ordinary worker
    gave nothing to compare with: that trial is judged among the ordinary ones already)."""
    output = checks.ordinary.outputs.get(trial)
    first = output.by_name.get(spec.name) if output is not None else None
    again = checks.checked.outputs[trial].by_name[spec.name]
    if not isinstance(first, Returned) or not isinstance(again, Returned):
        return None
    ordinary, checked = first.array, again.array
    if ordinary.shape != checked.shape or ordinary.dtype != checked.dtype:
        return _Moved(trial, np.inf, 0.0)
    if np.array_equal(ordinary, checked, equal_nan=ordinary.dtype.kind in "fc"):
        return None  # the same bits: what deterministic code gives
    if trial not in checks.references.expected or ordinary.dtype.kind not in "fiub":
        return _Moved(trial, np.inf, 0.0)
    expected = np.asarray(checks.references.expected[trial][spec.name], dtype=np.float64)
    spread = np.asarray(checks.references.spread[trial][spec.name], dtype=np.float64)
    first64, again64 = ordinary.astype(np.float64), checked.astype(np.float64)
    if first64.size != expected.size:
        return _Moved(trial, np.inf, 0.0)
    precision, _ = infer_precision(first64, first.dtype)
    # The envelope compare.py judges the trial with, around the ordinary answer instead of the reference.
    _, allowed = entry_errors(expected, first64.reshape(expected.shape), spread, precision)
    with np.errstate(invalid="ignore"):
        same_inf = np.isinf(first64) & (first64 == again64)
        change = np.where(same_inf, 0.0, np.abs(again64 - first64)).reshape(expected.shape)
    change[np.isnan(change)] = np.inf
    if (change <= allowed).all():
        return None
    scale = float(np.abs(first64[np.isfinite(first64)]).max(initial=0.0))
    largest = float(change.max(initial=0.0))
    return _Moved(trial, largest / scale if scale > 0 else np.inf, float(allowed.max(initial=0.0)) / scale)


_FEEDBACK = (
    "derive {name} from the forward computation's values (the chain rule, in numpy or torch operations), "
    "without .grad, backward(), torch.autograd, torch.func, forward-mode AD or torch's backward nodes"
)
_BY_HAND = (
    "derive {name} from the forward computation's values by the chain rule, in real numbers: a numerical "
    "derivative (finite differences, the complex step) checks a derivation, it does not replace one"
)


def checked(judged: ReturnResult, spec: ReturnSpec, checks: Checks) -> ReturnResult:
    """`judged` (from every trial of the ordinary worker), graded on the checked worker's trials too: no
    points where a check did not complete, nor where the return changed there beyond rounding."""
    if not checks.trials:
        return judged  # nothing checked: a replay, a run of one trial
    name = judged.name
    if checks.run is CheckRun.NOT_HERE:
        note = (
            f"not checked here that {name} is derived by hand, not taken from autograd: that check runs in "
            "a worker of its own when your hand-in is graded"
        )
        return replace(judged, message=f"{judged.message}; {note}")
    if judged.score == 0:
        return judged  # wrong anyway (every return of a pass that stopped early): its own verdict
    refused = _refused(name, checks)
    if refused is not None:
        trial, seen = refused
        message = (
            f"{name}: computed as a numerical derivative (finite differences or the complex step), which "
            f"this course refuses in what is to be derived by hand: on trial {trial}, run again in a "
            f"process of its own, the grader saw {seen}"
        )
        failed = min(judged.trials, judged.failed_trials + 1)
        return _zero(
            replace(judged, failed_trials=failed), Verdict.NUMERICAL, message, _BY_HAND.format(name=name)
        )
    why_not = ((t, _not_completed(name, checks.checked, t)) for t in checks.trials)
    incomplete = [(t, why) for t, why in why_not if why is not None]
    if incomplete:
        trial, why = incomplete[0]
        message = (
            f"{name}: the check that {name} is derived by hand did not complete (trial {trial}, run again "
            f"where autograd's results are altered: {why}), and a return whose check could not run earns no "
            "points. Make the function run to its end whatever autograd gives"
        )
        failed = min(judged.trials, judged.failed_trials + len(incomplete))
        return _zero(replace(judged, failed_trials=failed), Verdict.ERROR, message, "")
    moved = [m for t in checks.trials if (m := _moved(spec, checks, t)) is not None]
    if not moved:
        note = (
            f"also gave the same {name} on the {counted(len(checks.trials), 'trial')} run again where the "
            "grader secretly altered autograd's gradients: derived by hand"
        )
        return replace(judged, message=f"{judged.message}; {note}")
    judged = replace(judged, failed_trials=min(judged.trials, judged.failed_trials + len(moved)))
    first = moved[0]
    size = f"by {first.change:.2g} of its largest entry" if first.change < 0.01 else f"by {first.change:.0%}"
    if not np.isfinite(first.change):
        size = "to another shape, type or non-finite values"
    others = f" (and on {counted(len(moved) - 1, 'other trial')})" if len(moved) > 1 else ""
    seen = (
        f"on trial {first.trial}, run again with the same inputs in a process where the grader had altered "
        f"every gradient autograd gives, {name} changed {size}{others}"
    )
    if np.isfinite(first.envelope) and np.isfinite(first.change):
        seen += f", where rounding allows {first.envelope:.1g}"
    returned = checks.ordinary.returned(name)
    got = {index: returned[index].array for index in returned}
    changed = changed_answer(name, checks.references, got, checks.again)
    if changed is not None:
        # Answers that change between identical calls say nothing of where they came from: no accusation.
        message = f"{seen}; " + changed.words(
            name, "so a changed answer is no sign of autograd: it earns no points as logic"
        )
        return _zero(judged, Verdict.LOGIC, message, "")
    message = (
        f"{name} changed when only autograd's results changed: it comes from autograd, not from your own "
        f"derivation ({seen})"
    )
    return _zero(judged, Verdict.AUTOGRAD, message, _FEEDBACK.format(name=name))


def _zero(judged: ReturnResult, verdict: Verdict, message: str, feedback: str) -> ReturnResult:
    return replace(
        judged,
        verdict=verdict,
        score=0.0,
        message=message,
        speaks_of_envelopes=False,
        summary="",
        misconception=None,
        feedback=feedback,
        failing_entries=(),
        case=None,
    )
