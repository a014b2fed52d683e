"""The student's randomness, seeded from (run seed, trial): the same command draws the same numbers, and a
trial replayed alone draws what it drew in the whole run.

Every global generator a library may draw from is seeded before the import and at the start of every
trial: Python's (`random._inst`, behind the `random` module's functions), numpy's legacy one
(`np.random.mtrand._rand`, behind `np.random.*`, which scipy and scikit-learn draw from directly) and
torch's CPU one (`torch.default_generator`, which its own operations draw from: dropout, `nn.Linear`'s
initialisation). Seeding them all costs a small part of a graph2 call, Python's generator the most of it
(see docs/benchmarks.md). Seeding them lazily, at a trial's first draw through the modules' functions,
saved that cost but missed every draw that reaches a generator directly: such a trial drew other numbers
in a whole run than replayed alone. Nor can a trial that draws nothing skip its seeding: a generator left
as the last trial left it is state a hand-in reads without drawing (`np.random.get_state()`, a method of
the object numpy's functions are bound to), and a checked trial would start from one state in the
ordinary worker, which runs every trial, and from another in the autograd check's, which runs a few: a
difference between its two runs that the hand-in's answer could follow (judging/provenance.py).
Stdlib and numpy only: imported by the worker.
"""

from __future__ import annotations

import _random
import random
import sys

import numpy as np

# The legacy generator every trial seeds: numpy imports its random package on first use, which each forked
# worker paid again (a visible part of a graph2 hand-in's worker); imported here, the zygote pays it once.
import numpy.random

_LEGACY = np.random.mtrand._rand  # numpy's global generator, which np.random.seed seeds
# random.seed(value) exactly, for an int, without its Python-level checks (half its cost).
_SEED_PYTHON = _random.Random.seed


def trial_seed(seed: int, trial: int | None) -> int:
    """The value every generator is seeded with for `trial` of a run seeded `seed` (None: the import)."""
    return seed if trial is None else (seed + (trial + 1) * 2654435761) % (1 << 32)


def seed_randomness(seed: int, trial: int | None) -> None:
    """Seed the global generators for `trial` of a run seeded `seed` (None: before the import)."""
    value = trial_seed(seed, trial)
    _SEED_PYTHON(random._inst, value)
    random._inst.gauss_next = None  # type: ignore[attr-defined]
    _LEGACY.seed(value)  # its own method: the module's `seed` may be the student's by now
    torch = sys.modules.get("torch")
    if torch is not None:
        # Not contextlib.suppress: a context manager object for every trial costs more than the seed.
        # torch.manual_seed would cost far more than all of this: it seeds every device's generator.
        try:  # noqa: SIM105
            torch.default_generator.manual_seed(value)
        except Exception:  # a torch without a default generator: nothing of it to seed
            pass
