"""Whether a return the exercise asks to be derived by hand came from torch's autograd.

The values cannot tell: a gradient copied from `W.grad` is as right as autograd. What can: on a trial or
two the worker runs the function again with every gradient autograd computes scaled (worker.py,
`_autograd_scaled`). A return derived by hand comes back bit for bit the same (the student's randomness is
seeded per trial); one taken from autograd (`.grad`, `autograd.grad`, `torch.func`, a backward pass run by
`backward(dout)`) moves with it. Forward computations in torch are untouched: only autograd's outputs
count.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from grader.exercise.spec import Exercise
from grader.outcomes import Verdict
from grader.results import ReturnResult
from grader.sandbox.protocol import AUTOGRAD_SCALE
from grader.sandbox.report import Pass, Returned

PROVENANCE_TRIALS = 2  # the first trials that returned every by-hand return: one moved return suffices
# A return moved by more than this share of its largest entry came from autograd: a copy moves by
# AUTOGRAD_SCALE - 1 = 1/8 of it (a return half from autograd, half by hand, by 1/16), a hand derivation
# by nothing.
MOVED = 1 / 32


def trials_to_check(exercise: Exercise, first: Pass) -> tuple[int, ...]:
    """The trials to run again with autograd scaled: none where no return is to be derived by hand."""
    names = [r.name for r in exercise.spec.returns if r.by_hand]
    if not names:
        return ()
    outputs = first.outputs
    usable = (i for i in sorted(outputs) if all(type(outputs[i].by_name[n]) is Returned for n in names))
    return tuple(itertools.islice(usable, PROVENANCE_TRIALS))


@dataclass(frozen=True)
class Copied:
    """A by-hand return that moved with autograd's results."""

    trial: int
    moved: float  # its largest change, as a share of its largest entry


def copied_from_autograd(name: str, first: Pass, provenance: Pass) -> Copied | None:
    for index, output in sorted(provenance.outputs.items()):
        again, before = output.by_name[name], first.outputs[index].by_name[name]
        if not (isinstance(again, Returned) and isinstance(before, Returned)):
            continue
        if again.array.shape != before.array.shape:
            return Copied(index, np.inf)  # a hand derivation returns the same shape however autograd goes
        a, b = (x.array.astype(np.float64) for x in (before, again))
        finite = np.isfinite(a) & np.isfinite(b)
        scale = float(np.abs(a[finite]).max(initial=0.0))
        change = float(np.abs(b - a)[finite].max(initial=0.0))
        if scale > 0 and change > MOVED * scale:
            return Copied(index, change / scale)
    return None


def checked(judged: ReturnResult, first: Pass, provenance: Pass) -> ReturnResult:
    """`judged`, or verdict autograd with no points where it moved with autograd's results."""
    copied = copied_from_autograd(judged.name, first, provenance)
    if copied is None:
        return judged
    moved = f"by {copied.moved:.1%}" if np.isfinite(copied.moved) else "to another shape"
    message = (
        f"{judged.name} changed when autograd's results were scaled by {AUTOGRAD_SCALE:g} (trial "
        f"{copied.trial}: it moved {moved}): it was computed by autograd, not derived by hand"
    )
    feedback = (
        f"derive {judged.name} from the forward computation's values (the chain rule, in numpy or torch "
        "operations), without .grad, backward(), torch.autograd or torch.func"
    )
    return replace(
        judged,
        verdict=Verdict.AUTOGRAD,
        score=0.0,
        message=message,
        misconception=None,
        feedback=feedback,
        failing_entries=(),
        case=None,
    )
