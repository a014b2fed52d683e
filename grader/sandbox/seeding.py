"""The student's randomness, seeded from (run seed, trial): the same command draws the same numbers, and a
trial replayed alone draws what it drew in the whole run.

Python's, numpy's and torch's global generators are seeded before the import and before every trial.
Seeding Python's generator costs 4.2 µs and numpy's 1.5 µs (2026-12-03), a tenth of a graph2 call, for
code that nearly never draws from either: in the sandboxed worker (`defer()`) the two are seeded at the
trial's first use of them instead, through their module's functions, which is the same sequence of
numbers. torch is seeded at once (1 µs): its generator is also drawn from by its own operations (dropout,
`nn.Linear`'s initialisation), which no wrapper sees.
Stdlib and numpy only: imported by the worker.
"""

from __future__ import annotations

import _random
import functools
import random
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

# The legacy generator every trial seeds: numpy imports its random package on first use, which each forked
# worker paid again (13 ms of CPU per hand-in, 5% of a graph2 hand-in's worker); imported here, the zygote
# pays it once.
import numpy.random

_LEGACY = np.random.mtrand._rand  # numpy's global generator, which np.random.seed seeds
# random.seed(value) exactly, for an int, without its Python-level checks (half its cost).
_SEED_PYTHON = _random.Random.seed


def trial_seed(seed: int, trial: int | None) -> int:
    """The value every generator is seeded with for `trial` of a run seeded `seed` (None: the import)."""
    return seed if trial is None else (seed + (trial + 1) * 2654435761) % (1 << 32)


class _Pending:
    """The seed Python's and numpy's generators still owe the running trial, when deferred."""

    deferred = False
    value: int | None = None


_pending = _Pending()


def seed_randomness(seed: int, trial: int | None) -> None:
    """Seed the global generators for `trial` of a run seeded `seed` (None: before the import)."""
    value = trial_seed(seed, trial)
    if _pending.deferred:
        _pending.value = value
    else:
        _seed_python_and_numpy(value)
    torch = sys.modules.get("torch")
    if torch is not None:
        # Not contextlib.suppress: a context manager object for every trial costs more than the seed.
        # torch.manual_seed would cost 280 µs: it seeds every device's generator.
        try:  # noqa: SIM105
            torch.default_generator.manual_seed(value)
        except Exception:  # a torch without a default generator: nothing of it to seed
            pass


def _seed_python_and_numpy(value: int) -> None:
    _SEED_PYTHON(random._inst, value)
    random._inst.gauss_next = None  # type: ignore[attr-defined]
    _LEGACY.seed(value)  # its own method: the module's `seed` may be the student's by now


def _settle() -> None:
    value = _pending.value
    if value is not None:
        _pending.value = None
        _seed_python_and_numpy(value)


def defer() -> None:
    """From now on, Python's and numpy's generators are seeded at a trial's first use of them.

    Every function of `random` and `numpy.random` that uses their global generator (seed, getstate and
    set_state included) is replaced by one that seeds it first if the trial has not yet: code that reaches
    the generators through them, as student code does, sees exactly the numbers eager seeding gives. For
    one process only (the sandboxed worker's zygote): a grader process's own draws would take the seed.
    """
    if _pending.deferred:
        return
    _pending.deferred = True
    python = random._inst
    _wrap(random, lambda value: getattr(value, "__self__", None) is python)
    # Module functions, not the generator's methods, that use its state: numpy's `seed` among them.
    shared = {"seed", "get_bit_generator", "set_bit_generator", "ranf", "sample"}
    for module in (np.random, np.random.mtrand):
        _wrap(module, lambda value: getattr(value, "__self__", None) is _LEGACY)
        _wrap(module, lambda value: getattr(value, "__name__", None) in shared)


def _wrap(module: Any, chosen: Callable[[Any], bool]) -> None:
    for name, value in list(vars(module).items()):
        if not name.startswith("_") and callable(value) and chosen(value):
            setattr(module, name, _seeding_first(value))


def _seeding_first(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def seeded(*args: Any, **kwargs: Any) -> Any:
        if _pending.value is not None:
            _settle()
        return function(*args, **kwargs)

    return seeded
