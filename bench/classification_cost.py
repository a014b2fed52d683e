"""Benchmark: what classification adds to grading an all-pass graph2 submission over 1000 trials.

Usage: .venv/bin/python bench/classification_cost.py [--repeats 7]

Both pipelines run the same sandboxed worker on the same trials, in this one process:
- bare: float64 reference values only, and `np.allclose` per trial and return;
- classified: `grade()` as the CLI runs it: Monte Carlo rounding spread, per-entry envelopes at the
  inferred precision, rerun selection at float64 (none needed here), verdicts and messages.
Runs are interleaved so that machine noise hits both alike; the ratio of medians is the cost.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from grader.exercise.reference import reference_returns
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.handin.prepare import Submission, prepare
from grader.sandbox.report import Returned
from grader.sandbox.runner import RunningWorker

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 1000


def bare(exercise: Exercise, submission: Submission) -> float:
    started = time.perf_counter()
    worker = RunningWorker(exercise, prepare(submission))
    try:
        trials = make_trials(exercise, 0, TRIALS)
        worker.send(trials)
        expected = reference_returns(exercise, trials)
        first = worker.first_pass()
    finally:
        worker.close()
    passed = all(
        np.allclose(item.array, expected[index][item.name])
        for index, output in first.outputs.items()
        for item in output.by_name.values()
        if isinstance(item, Returned)
    )
    assert passed and len(first.outputs) == TRIALS
    return time.perf_counter() - started


def classified(exercise: Exercise, submission: Submission) -> float:
    started = time.perf_counter()
    result = grade(exercise, submission, Settings(0, TRIALS))
    assert result.passed, result
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    folder = ROOT / "exercises" / "mac0460" / "graph2"
    exercise = load_exercise(folder)
    submission = submission_from_path(folder / "solution.py", exercise.spec.entry)
    bare(exercise, submission)  # warm-up: imports, caches
    classified(exercise, submission)
    bare_times, full_times = [], []
    for _ in range(repeats):
        bare_times.append(bare(exercise, submission))
        full_times.append(classified(exercise, submission))
    b, f = statistics.median(bare_times), statistics.median(full_times)
    rows = (("bare (values + np.allclose)", b, bare_times), ("classified (grade)", f, full_times))
    for label, median, times in rows:
        print(f"{label:28s} median {median:.3f} s  {[round(t, 3) for t in sorted(times)]}")
    print(f"classification adds {100 * (f / b - 1):.1f}% (acceptance: at most 25%)")


if __name__ == "__main__":
    main()
