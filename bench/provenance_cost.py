"""Benchmark: what the autograd check (returns derived by hand: a few secret trials run again in a checked
worker of their own, where autograd's results are wrong) and the reruns above float64 add to grading a
submission.

Usage: .venv/bin/python bench/provenance_cost.py [--repeats 7] [--trials 1000]

Each pair grades the same hand-in on the same references, in this one process, through the shared warm
pool (as `grader run` does), once on the exercise as bundled and once on a copy of its spec without
`by_hand` marks (no trial checked). Pairs are interleaved so that machine noise hits both alike; the
difference of medians is the cost per submission, the ratio of medians its share:
- graph2 solution (torch + numpy, user_grad by hand);
- batchnorm_backward solution (numpy, every return by hand);
- softmax_large's naive float64 softmax (every trial rerun at float64 and in extended precision) against
  its solution, to show what the reruns cost a class's unstable hand-ins.
The check's cost is the checked worker's: a fork of the warm zygote, the hand-in's import and CHECKS
trials, after the ordinary worker closed (judging/provenance.py), plus CHECKS calls run again there.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

from grader.exercise.reference import References, compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict

ROOT = Path(__file__).resolve().parent.parent


def without_by_hand(exercise: Exercise) -> Exercise:
    returns = [r.model_copy(update={"by_hand": False}) for r in exercise.spec.returns]
    return dataclasses.replace(exercise, spec=exercise.spec.model_copy(update={"returns": returns}))


def seconds(exercise: Exercise, path: Path, references: References) -> tuple[float, set[Verdict]]:
    started = time.perf_counter()
    result = grade(
        exercise, submission_from_path(path, exercise.spec.entry), Settings(0), references=references
    )
    return time.perf_counter() - started, {r.verdict for r in result.returns}


def pair(label: str, a: tuple[Exercise, Path], b: tuple[Exercise, Path], trials: int, repeats: int) -> None:
    references = compute_references(a[0], make_trials(a[0], 0, trials))
    times: dict[str, list[float]] = {"a": [], "b": []}
    verdicts = {}
    for _ in range(repeats):
        for key, (exercise, path) in (("a", a), ("b", b)):
            taken, verdicts[key] = seconds(exercise, path, references)
            times[key].append(taken)
    ma, mb = statistics.median(times["a"]), statistics.median(times["b"])
    print(
        f"{label}: {ma * 1000:.0f} ms against {mb * 1000:.0f} ms "
        f"(+{(ma - mb) * 1000:.0f} ms, {ma / mb:.2f}x); verdicts {sorted(v.value for v in verdicts['a'])} "
        f"against {sorted(v.value for v in verdicts['b'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    for exercise_id in ("graph2", "batchnorm_backward"):
        exercise = load_exercise(next((ROOT / "exercises").glob(f"*/{exercise_id}")))
        solution = exercise.path_of(exercise.spec.solution or "solution.py")
        pair(
            f"{exercise_id} solution, checked vs not",
            (exercise, solution),
            (without_by_hand(exercise), solution),
            args.trials,
            args.repeats,
        )
    large = load_exercise(next((ROOT / "exercises").glob("*/softmax_large")))
    pair(
        "softmax_large, naive float64 (every trial rerun twice) vs solution",
        (large, large.path_of("wrong/naive.py")),
        (large, large.path_of(large.spec.solution or "solution.py")),
        args.trials,
        args.repeats,
    )


if __name__ == "__main__":
    main()
