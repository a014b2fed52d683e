"""Benchmark: what isolation costs per submission, in each layer, and against another checkout.

Usage: .venv/bin/python bench/isolation_cost.py [--students 40] [--rounds 3] [--trials 10] [--against DIR]

A class of `--students` copies of the correct graph2 solution is graded with `grader run -j 1` (warm
workers: what a class pays per hand-in) and, separately, with a single student (the fixed cost); the
per-submission cost is the slope between them. Each layer (bubblewrap where it works, and
GRADER_ISOLATION=base) is measured, round after round so that the machine's swings hit all alike, and the
fastest round is kept. `--against DIR` measures another checkout of the grader (its own .venv) in the same
rounds: the cost of the isolation a change added, as a ratio. Only the command line is used, so any
version of the grader can be measured.
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


def make_class(folder: Path, students: int, source: Path) -> Path:
    exercises = folder / "exercises"
    shutil.copytree(source / "exercises" / "graph2", exercises / "graph2")
    for k in range(students):
        (folder / "submissions" / f"s{k:03d}").mkdir(parents=True)
        shutil.copyfile(
            source / "exercises" / "graph2" / "solution.py", folder / "submissions" / f"s{k:03d}" / "hw.py"
        )
    return exercises


def timed(checkout: Path, exercises: Path, base: bool, trials: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if base:
        env["GRADER_ISOLATION"] = "base"
    # `python -m` puts the working directory first on the path: the checkout's own grader is the one run.
    own = checkout / ".venv" / "bin" / "python"
    python = own if own.exists() else Path(sys.executable)
    book = exercises.parent / "book.sqlite"
    book.unlink(missing_ok=True)
    command = [str(python), "-m", "grader", "run", str(exercises), "-j", "1", "--trials", str(trials)]
    started = time.perf_counter()
    subprocess.run(
        [*command, "--gradebook", str(book)], cwd=checkout, env=env, capture_output=True, check=False
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=10)
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
    print(
        f"grader run -j 1, {args.students} students x {args.trials} trials, fastest of {args.rounds} rounds"
    )
    slopes = {}
    for name in checkouts:
        for layer in layers:
            fixed, total = best[(name, layer, "one")], best[(name, layer, "big")]
            slope = (total - fixed) / (args.students - 1)
            slopes[(name, layer)] = slope
            print(f"  {name:8s} {layer:10s} fixed {fixed:6.2f} s   per submission {1000 * slope:6.1f} ms")
    if args.against:
        for layer in layers:
            ratio = slopes[("this", layer)] / slopes[("against", layer)]
            print(f"  {layer}: this checkout costs {ratio:.2f}x the other per submission")


if __name__ == "__main__":
    main()
