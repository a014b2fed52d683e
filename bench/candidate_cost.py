"""Benchmark: what the mistake families derived from the graph (judging/naming/families.py: terms, paths,
axes; judging/naming/backward_slips.py: slips of a backward by hand) add to naming.

Usage: .venv/bin/python bench/candidate_cost.py [--repeats 3] [EXERCISE_FOLDER ...]

For each exercise: how many candidates diagnose() tries per return, and how long computing them on its
16-trial sample takes (what the first failing hand-in of a class pays; the rest share them), with and
without the derived families. Then the time of grade() on a known-wrong hand-in whose return is named,
with and without. Naming runs only for returns judged logic: an all-pass hand-in pays nothing
(bench/classification_cost.py measures that path; bench/naming_cost.py a class of failing hand-ins).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.naming import diagnosis, mistakes
from grader.judging.naming.slips import GraphSlip

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "exercises/cs231n/a3/lstm_step": "wrong/gates_ifgo.py",
    "exercises/cs231n/a2/conv_naive": "wrong/dx_assigned.py",
    "exercises/cs231n/a3/rnn_step": "wrong/tanh_prime_prev_h.py",
    "exercises/cs231n/a3/temporal_affine": "wrong/dw_reshape.py",
    "exercises/cs231n/a2/spatial_groupnorm": "wrong/per_channel_groups.py",
}


def _none(_: Exercise) -> Iterator[GraphSlip]:
    return iter(())


def candidates(exercise: Exercise, without: bool) -> tuple[int, float]:
    """How many candidates the sample holds (all returns), and the seconds to compute them."""
    trials = make_trials(exercise, 0, 16)
    references = compute_references(exercise, trials)
    sample = tuple(t.index for t in trials)
    with _without_families() if without else contextlib.nullcontext():
        started = time.perf_counter()
        found = diagnosis._compute_candidates(exercise, references, sample, None)
        took = time.perf_counter() - started
    return sum(len(v) for v in found.values()), took


def graded(exercise: Exercise, wrong: Path, without: bool) -> tuple[float, float, list[str]]:
    """grade()'s seconds, those of diagnose() within it (every logic return's), and the names given."""
    diagnosis._candidates_of = type(diagnosis._candidates_of)(16)  # cold: as the first hand-in of a class
    spent = [0.0]
    real = diagnosis.diagnose

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    families = _without_families() if without else contextlib.nullcontext()
    with mock.patch.object(diagnosis, "diagnose", timed), families:
        started = time.perf_counter()
        result = grade(exercise, submission_from_path(wrong, exercise.spec.entry), Settings(0, None))
        took = time.perf_counter() - started
    return took, spent[0], sorted({(r.misconception or "-")[:60] for r in result.returns})


@contextlib.contextmanager
def _without_families() -> Iterator[None]:
    with (
        mock.patch.object(mistakes, "graph_families", _none),
        mock.patch.object(mistakes, "backward_slips", _none),
    ):
        yield


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("folders", nargs="*", default=list(CASES))
    args = parser.parse_args()
    for folder in args.folders:
        exercise = load_exercise(ROOT / folder / "exercise.yaml")
        row = []
        for without in (True, False):
            counted = [candidates(exercise, without) for _ in range(args.repeats)]
            seconds = statistics.median(t for _, t in counted)
            row.append(f"{counted[0][0]:4d} candidates {seconds:6.2f} s")
        print(f"{exercise.id:32s} sample, before: {row[0]}   after: {row[1]}")
        wrong = CASES.get(folder)
        if wrong is None:
            continue
        for without, when in ((True, "before"), (False, "after")):
            runs = [graded(exercise, ROOT / folder / wrong, without) for _ in range(args.repeats)]
            took = statistics.median(t for t, _, _ in runs)
            naming = statistics.median(d for _, d, _ in runs)
            print(f"{'':32s} grade({wrong}) {when}: {took:6.2f} s, diagnose {naming:5.2f} s, {runs[0][2]}")


if __name__ == "__main__":
    main()
