"""Benchmark: `grader check` of a correct graph2 (1000 trials) vs the seed's bare loop, as whole commands.

Usage: .venv/bin/python bench/check_vs_seed.py [--repeats 7] [--cold]
Runs are interleaved so that machine noise hits both alike; reports medians and their ratio.
The references are cached in a temporary folder, filled by the warm-up run (a second check: no torch in
the grader's process); with --cold every check starts from an empty one (a first check: computed, stored).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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


def timed(command: list[str], cache: str | None = None) -> float:
    env = dict(os.environ) if cache is None else {**os.environ, "GRADER_CACHE_DIR": cache}
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="every check computes its references")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grader-bench-cache-") as folder:
        timed(SEED)  # warm the file cache for both
        timed(GRADER, folder)
        grader_times, seed_times = [], []
        for _ in range(args.repeats):
            seed_times.append(timed(SEED))
            grader_times.append(timed(GRADER, tempfile.mkdtemp(dir=folder) if args.cold else folder))
    grader_median, seed_median = statistics.median(grader_times), statistics.median(seed_times)
    print(f"seed loop (1000 iterations, own process): median {seed_median:.2f} s  {sorted(seed_times)}")
    kind = "references computed" if args.cold else "references cached"
    print(f"grader check (1000 trials, {kind}): median {grader_median:.2f} s  {sorted(grader_times)}")
    print(f"ratio grader/seed: {grader_median / seed_median:.2f} (target: at most 0.9 cached)")


if __name__ == "__main__":
    main()
