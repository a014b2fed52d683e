"""Benchmark: what isolation costs per submission, bubblewrap against the base layer.

Usage: .venv/bin/python bench/isolation_cost.py [--repeats 7] [--trials 10]

Each run is a whole `grader check` of the correct graph2 solution, as a student would type it, with
GRADER_ISOLATION unset (bubblewrap, where it works) or set to `base`; runs are interleaved so that machine
noise hits both alike. With few trials the figure is the per-submission cost: start-up and isolation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(trials: int, base: bool) -> tuple[float, str]:
    env = dict(os.environ)
    env.pop("GRADER_ISOLATION", None)
    if base:
        env["GRADER_ISOLATION"] = "base"
    command = [
        sys.executable,
        "-m",
        "grader",
        "check",
        "exercises/graph2",
        "exercises/graph2/solution.py",
        "--trials",
        str(trials),
        "--json",
    ]
    started = time.perf_counter()
    out = subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, json.loads(out)["isolation"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    timed(args.trials, base=False)  # warm the file cache
    sandboxed, plain = [], []
    levels = set()
    for _ in range(args.repeats):
        seconds, level = timed(args.trials, base=False)
        sandboxed.append(seconds)
        levels.add(level)
        seconds, level = timed(args.trials, base=True)
        plain.append(seconds)
        levels.add(level)
    s, p = statistics.median(sandboxed), statistics.median(plain)
    print(f"default isolation: median {s:.3f} s  {[round(t, 3) for t in sorted(sandboxed)]}")
    print(f"base layer:        median {p:.3f} s  {[round(t, 3) for t in sorted(plain)]}")
    print(f"bubblewrap costs {1000 * (s - p):+.0f} ms per submission ({s / p:.2f}x)")
    for level in sorted(levels):
        print(f"  seen: {level}")


if __name__ == "__main__":
    main()
