"""Benchmark: `grader check` of a correct graph2 (1000 trials) vs the seed's bare loop, as whole commands.

Usage: .venv/bin/python bench/check_vs_seed.py [--repeats 7]
Runs are interleaved so that machine noise hits both alike; reports medians and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRADER = [
    sys.executable,
    "-m",
    "grader",
    "check",
    "exercises/mac0460/graph2",
    "exercises/mac0460/graph2/solution.py",
    "--trials",
    "1000",
]
SEED = [sys.executable, str(ROOT / "bench" / "seed_loop.py")]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    timed(SEED)  # warm the file cache for both
    timed(GRADER)
    grader_times, seed_times = [], []
    for _ in range(repeats):
        seed_times.append(timed(SEED))
        grader_times.append(timed(GRADER))
    grader_median, seed_median = statistics.median(grader_times), statistics.median(seed_times)
    print(f"seed loop (1000 iterations, own process): median {seed_median:.2f} s  {sorted(seed_times)}")
    print(f"grader check (1000 trials, whole command): median {grader_median:.2f} s  {sorted(grader_times)}")
    print(f"ratio grader/seed: {grader_median / seed_median:.2f} (acceptance: at most 2.0)")


if __name__ == "__main__":
    main()
