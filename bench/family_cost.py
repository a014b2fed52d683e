"""Benchmark: what the graph's mistake families (judging/families.py) add to naming a failing return.

Usage: .venv/bin/python bench/family_cost.py [--repeats 3] [--exercises ID ...]

For every bundled exercise, the graph variants naming evaluates (the standard graph slips and the
mutants) without and with the families; for the chosen exercises (default: the two largest graphs), the
seconds `diagnose` spends computing its candidates on the 16 sample trials, the first time a class's
failing hand-in needs them (they are cached for the next ones). Naming runs only for logic returns: an
all-pass hand-in costs nothing more (bench/classification_cost.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from grader.exercise.reference import compute_references
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.judging import diagnosis, families, mistakes, slips

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("cs231n.a3.lstm_step", "cs231n.a2.spatial_groupnorm")


def _none(_: Exercise) -> Iterator[slips.GraphSlip]:
    return iter(())


def _graphs(exercise: Exercise) -> tuple[int, int]:
    before = sum(1 for _ in mistakes.graph_mutants(exercise)) + sum(
        1 for _ in mistakes._changed_terms(exercise)
    )
    for ret in exercise.spec.returns:
        before += sum(1 for _ in mistakes._wrong_inputs(exercise, ret))
    return before, before + sum(1 for _ in families.graph_families(exercise))


def _seconds(exercise: Exercise, with_families: bool, repeats: int) -> float:
    references = compute_references(exercise, make_trials(exercise, 0, 200))
    sample = tuple(t.index for t in references.trials[:16])
    times = []
    for _ in range(repeats):
        with mock.patch.object(
            mistakes, "graph_families", families.graph_families if with_families else _none
        ):
            started = time.perf_counter()
            diagnosis._compute_candidates(exercise, references, sample, None)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--exercises", nargs="*", default=list(DEFAULT))
    args = parser.parse_args()
    loaded = {}
    total_before = total_after = 0
    for spec in sorted(ROOT.glob("exercises/**/exercise.yaml")):
        exercise = load_exercise(spec.parent)
        loaded[exercise.spec.id] = exercise
        before, after = _graphs(exercise)
        total_before, total_after = total_before + before, total_after + after
        print(f"{exercise.spec.id:45s} graph candidates {before:4d} -> {after:4d}")
    every = f"all {len(loaded)} exercises"
    print(f"{every:45s} graph candidates {total_before:4d} -> {total_after:4d}")
    for name in args.exercises:
        without = _seconds(loaded[name], False, args.repeats)
        with_ = _seconds(loaded[name], True, args.repeats)
        print(f"{name:45s} candidates on 16 trials: {without:.2f} s without families, {with_:.2f} s with")


if __name__ == "__main__":
    main()
