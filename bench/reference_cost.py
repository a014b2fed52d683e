"""Benchmark: what each exercise's references cost (expected values and Monte Carlo envelope).

Usage: .venv/bin/python bench/reference_cost.py [--against cca1a1c] [--rounds 1] [exercise folders...]
       (default: exercises/cs231n/a2, exercises/cs231n/a3 and exercises/mac0460/graph2)

Per exercise, at its default trial count and seed 0: the trials, the groups of trials of one size, the
batches the Monte Carlo pass evaluates (sizes padded together where that changes no value), and the CPU
seconds of compute_references in this process (torch imported and warmed up beforehand, so this is the
computation alone: a cold `grader check` adds torch's import, 2.2 s of CPU here, once). With --against,
also the CPU of the same computation by that commit's grader/exercise/reference.py (imported beside this
one, its exercises folder extracted with `git archive`), one after the other for each exercise, and the
ratio old / new; the fastest of --rounds each (a shared machine only ever adds time).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from reference_compare import _old, _old_exercises  # noqa: E402

from grader.exercise import reference  # noqa: E402
from grader.exercise.spec import Exercise, load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402

DEFAULT = ("exercises/cs231n/a2", "exercises/cs231n/a3", "exercises/mac0460/graph2")


def _cpu(call: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def _folders(given: list[Path]) -> list[Path]:
    found: list[Path] = []
    for folder in given or [ROOT / d for d in DEFAULT]:
        found.extend(sorted(p.parent for p in folder.rglob("exercise.yaml")))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--against", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    old = _old(args.against) if args.against else None
    old_root = _old_exercises(args.against) if args.against else None
    warm = load_exercise(ROOT / "exercises" / "mac0460" / "graph2")
    reference.compute_references(warm, make_trials(warm, 0, 20))  # torch's first calls, once
    header = f"{'exercise':34s} {'trials':>6s} {'groups':>6s} {'batches':>7s} {'cpu s':>6s}"
    print(header + (f" {'old cpu s':>9s} {'old/new':>7s}" if old else ""))
    totals: dict[str, list[float]] = {}
    for folder in _folders(args.folders):
        exercise = load_exercise(folder)
        trials = make_trials(exercise, 0, exercise.spec.trials)
        groups = len({t.size_key for t in trials})
        expected = reference.reference_returns(exercise, trials)
        batches = len(reference._envelope_batches(exercise, trials, expected))
        new = _cpu(partial(reference.compute_references, exercise, trials), args.rounds)
        line = f"{exercise.id:34s} {len(trials):6d} {groups:6d} {batches:7d} {new:6.2f}"
        course = ".".join(exercise.id.split(".")[:2])
        total = totals.setdefault(course, [0.0, 0.0])
        total[0] += new
        if old is not None and old_root is not None:
            then: Exercise = load_exercise(old_root / folder.resolve().relative_to(ROOT))
            before = _cpu(partial(old.compute_references, then, trials), args.rounds)
            total[1] += before
            line += f" {before:9.2f} {before / new:7.1f}"
        print(line, flush=True)
    for course, (new_total, old_total) in totals.items():
        line = f"{course + ' (all)':34s} {'':6s} {'':6s} {'':7s} {new_total:6.2f}"
        if old is not None:
            line += f" {old_total:9.2f} {old_total / new_total:7.1f}"
        print(line)


if __name__ == "__main__":
    main()
