"""`grader prepare`: the references of a seed (or a pool of secret seeds) stored before grading."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from grader.commands.common import load_all
from grader.commands.outcome import Outcome
from grader.errors import GraderError, UsageError
from grader.exercise.settings import CACHE_ENV, ReferenceCache, Settings
from grader.exercise.spec import Exercise
from grader.exercise.trials import DEFAULT_SEED
from grader.report.terminal import safe
from grader.text import counted


def prepare(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    """Store every exercise's references for the seed (or the pool's seeds) and trials a grading will use;
    one broken exercise is told and skipped, the others are prepared."""
    from grader.exercise import seed_pool
    from grader.exercise.preparation import Status
    from grader.exercise.preparation import prepare as prepared

    pool = None
    if args.ship and args.pool is not None:
        raise UsageError("--ship and --pool: a pool's seeds are secret, they never travel; give one of them")
    if args.pool is not None:
        if args.seed is not None:
            raise UsageError("--seed and --pool: a pool draws its own secret seeds; give one or the other")
        seed_pool.make_folder(args.pool)
        pool = seed_pool.kept_or_new(args.pool, args.pool_size, args.trials)
    seeds = list(pool.seeds) if pool is not None else [DEFAULT_SEED if args.seed is None else args.seed]
    exercises, broken = load_all(args.exercises, errors)
    counts = dict.fromkeys(Status, 0)
    cache = ReferenceCache.from_environment()
    cache = cache.at(args.pool) if args.pool is not None else cache
    folder = cache.folder
    if folder is None:
        off = f"the reference cache is off ({CACHE_ENV} is empty)"
        raise UsageError(f"{off}: nothing would keep the references; name a folder there, or --pool DIR")
    runs = [Settings(seed, args.trials, cache=cache) for seed in seeds]
    for exercise in exercises:
        for done in prepared(exercise, runs):
            counts[done.status] += 1
            # A pool's seeds are secret: named by their place in it, never printed.
            seed = f"seed {seeds.index(done.seed) + 1} of the pool" if pool else f"seed {done.seed}"
            what = f"{safe(done.exercise)}: {seed}, {counted(done.trials, 'trial')}:"
            if done.status is Status.FAILED:
                errors.print(f"[bold red]{what} failed[/] — {safe(done.error)}")
            elif done.status is Status.COMPUTED:
                console.print(f"{what} computed in {done.seconds:.1f} s")
            else:
                console.print(f"[dim]{what} already stored[/]")
        if args.ship:
            shipped = _shipped(exercise, cache)
            if shipped is None:
                counts[Status.FAILED] += 1
                errors.print(f"[bold red]{safe(exercise.id)}: not shipped[/] — its references failed above")
            else:
                console.print(
                    f"{safe(exercise.id)}: grader check's references shipped in {safe(str(shipped))}"
                )
    if pool is not None:
        seed_pool.write_pool(folder, pool)  # last: a pool is only ever read whole
    failed = counts[Status.FAILED] + len(broken)
    console.print(
        f"{counts[Status.COMPUTED]} computed, {counts[Status.STORED]} already stored, {failed} failed; "
        f"in {safe(str(folder))}" + (f" (a pool of {len(seeds)} secret seeds)" if pool is not None else "")
    )
    return Outcome.of([], broken=failed > 0)


def _shipped(exercise: Exercise, cache: ReferenceCache) -> Path | None:
    """The default check's references written beside the exercise (shipped_references.py); None where
    they cannot be computed (the exercise's failure was told with its preparation)."""
    from grader.exercise import shipped_references
    from grader.exercise.preparation import public_references

    try:
        references = public_references(exercise, cache)
    except GraderError:
        return None
    return shipped_references.ship(exercise, DEFAULT_SEED, references)
