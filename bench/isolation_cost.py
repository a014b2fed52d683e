"""Benchmark: what isolation costs per submission, in each layer, and against another checkout.

Usage: .venv/bin/python bench/isolation_cost.py [--students 40] [--rounds 3] [--trials 10] [--against DIR]

A class of `--students` copies of the correct graph2 solution is graded with `grader run -j 1` (warm
workers: what a class pays per hand-in) and, separately, with a single student (the fixed cost); the
per-submission cost is the slope between them. Each layer (bubblewrap where it works, and
GRADER_ISOLATION=base) is measured, round after round so that the machine's swings hit all alike, and the
fastest round is kept. `--against DIR` measures another checkout of the grader (its own .venv) in the same
rounds: the cost of the isolation a change added, as a ratio. Beside the class run, the same hand-in is
graded `--repeats` times in one process through one warm slot (`grade()` with shared references): the
per-submission cost without the command's own work. Both work with any version of the grader.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Grades the solution N times through one warm slot of the checkout given (imports moved in its history).
_WARM_LOOP = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from grader.grading import grade
try:
    from grader.exercise.spec import load_exercise
    from grader.exercise.trials import make_trials
    from grader.exercise.reference import compute_references
    from grader.handin.discover import submission_from_path
    from grader.sandbox.warm import WorkerPool
except ImportError:
    from grader.spec import load_exercise
    from grader.trials import make_trials
    from grader.reference import compute_references
    from grader.submissions import submission_from_path
    from grader.warm import WorkerPool
import inspect
if "settings" in inspect.signature(grade).parameters:  # since grading takes one Settings for its run
    from grader.exercise.settings import Settings
    seed = Settings(0)
else:
    seed = 0
exercise = load_exercise(Path(sys.argv[1]) / "exercises/mac0460/graph2")
references = compute_references(exercise, make_trials(exercise, 0, int(sys.argv[2])))
pool = WorkerPool(limit=1)
hand_in = submission_from_path(Path(sys.argv[1]) / "exercises/mac0460/graph2/solution.py", "graph2")
for _ in range(3):
    grade(exercise, hand_in, seed, references=references, pool=pool)
started = time.perf_counter()
for _ in range(int(sys.argv[3])):
    grade(exercise, hand_in, seed, references=references, pool=pool)
print((time.perf_counter() - started) / int(sys.argv[3]))
pool.close()
"""


def make_class(folder: Path, students: int, source: Path) -> Path:
    exercises = folder / "exercises"
    course = source / "exercises" / "mac0460"
    shutil.copytree(course / "graph2", exercises / "graph2")
    shutil.copytree(course / "_support", exercises / "_support")  # the helpers graph2's spec names
    for k in range(students):
        (folder / "submissions" / f"s{k:03d}").mkdir(parents=True)
        shutil.copyfile(course / "graph2" / "solution.py", folder / "submissions" / f"s{k:03d}" / "hw.py")
    return exercises


def timed(checkout: Path, exercises: Path, base: bool, trials: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if base:
        env["GRADER_ISOLATION"] = "base"
    python = python_of(checkout)  # `python -m` puts the working directory first: the checkout's grader runs
    book = exercises.parent / "book.sqlite"
    book.unlink(missing_ok=True)
    command = [str(python), "-m", "grader", "run", str(exercises), "-j", "1", "--trials", str(trials)]
    started = time.perf_counter()
    subprocess.run(
        [*command, "--gradebook", str(book)], cwd=checkout, env=env, capture_output=True, check=False
    )
    return time.perf_counter() - started


def warm_loop(checkout: Path, base: bool, trials: int, repeats: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if base:
        env["GRADER_ISOLATION"] = "base"
    command = [str(python_of(checkout)), "-c", _WARM_LOOP, str(checkout), str(trials), str(repeats)]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def python_of(checkout: Path) -> Path:
    own = checkout / ".venv" / "bin" / "python"
    return own if own.exists() else Path(sys.executable)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=40, help="gradings of the in-process loop")
    parser.add_argument("--against", type=Path, help="another checkout (its .venv, or this one's)")
    args = parser.parse_args()
    checkouts = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    layers = {"base": True} | ({"bubblewrap": False} if shutil.which("bwrap") else {})
    with tempfile.TemporaryDirectory() as scratch:
        big = make_class(Path(scratch) / "big", args.students, ROOT)
        one = make_class(Path(scratch) / "one", 1, ROOT)
        best: dict[tuple[str, str, str], float] = {}
        for _ in range(args.rounds):
            for name, checkout in checkouts.items():
                for layer, base in layers.items():
                    for size, exercises in (("one", one), ("big", big)):
                        seconds = timed(checkout, exercises, base, args.trials)
                        key = (name, layer, size)
                        best[key] = min(best.get(key, seconds), seconds)
                    seconds = warm_loop(checkout, base, args.trials, args.repeats)
                    best[(name, layer, "warm")] = min(best.get((name, layer, "warm"), seconds), seconds)
    print(
        f"grader run -j 1, {args.students} students x {args.trials} trials, fastest of {args.rounds} rounds"
    )
    slopes = {}
    for name in checkouts:
        for layer in layers:
            fixed, total = best[(name, layer, "one")], best[(name, layer, "big")]
            slope = (total - fixed) / (args.students - 1)
            slopes[(name, layer)] = slope
            warm = 1000 * best[(name, layer, "warm")]
            print(
                f"  {name:8s} {layer:10s} fixed {fixed:6.2f} s   per submission {1000 * slope:6.1f} ms"
                f"   in-process warm slot {warm:6.1f} ms"
            )
    if args.against:
        for layer in layers:
            ratio = slopes[("this", layer)] / slopes[("against", layer)]
            warm = best[("this", layer, "warm")] / best[("against", layer, "warm")]
            print(
                f"  {layer}: this checkout costs {ratio:.2f}x the other per hand-in ({warm:.2f}x in-process)"
            )


if __name__ == "__main__":
    main()
