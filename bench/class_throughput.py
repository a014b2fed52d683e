"""Benchmark: grading a class — per-submission cost and class throughput, side by side in one run.

Usage: .venv/bin/python bench/class_throughput.py [--students 100] [--trials 1000] [--jobs 1 2] [--rounds 1]

A class of graph2 submissions (the correct solution, each file slightly different so that none is taken
from the gradebook) is graded by the real `grader run` once per `-j` value and worker kind, each with a
fresh gradebook: warm workers (the default: forked from a zygote that imported torch once) and a fresh
Python process per submission (GRADER_FRESH_WORKERS=1). Then `grader run` is repeated with nothing
changed (every result from the gradebook). Printed: wall time, submissions per second, seconds per
submission, the speed-up of warm over fresh at the same -j, and of each -j over -j 1 of the same kind.

With `--rounds N` every configuration runs N times, the rounds one after another (so that a slow spell of
the machine falls on all of them alike); the table shows each one's fastest run, from which the speed-ups
are computed, and the range of its runs. A shared machine only ever adds time to a run.
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


def make_class(folder: Path, students: int) -> Path:
    exercises = folder / "exercises"
    course = ROOT / "exercises" / "mac0460"
    # graph2 with the course's helpers beside it, as its spec names them (../_support/util.py)
    shutil.copytree(course / "graph2", exercises / "graph2")
    shutil.copytree(course / "_support", exercises / "_support")
    solution = (course / "graph2" / "solution.py").read_text(encoding="utf-8")
    for i in range(students):
        student = folder / "submissions" / f"student{i:03d}"
        student.mkdir(parents=True)
        (student / "graph2.py").write_text(f"{solution}\n# student {i}\n", encoding="utf-8")
    return exercises


def timed_run(exercises: Path, gradebook: Path, trials: int, jobs: int, fresh: bool = False) -> float:
    command = [sys.executable, "-m", "grader", "run", str(exercises), "--trials", str(trials)]
    command += ["-j", str(jobs), "--gradebook", str(gradebook), "--json"]
    env = dict(os.environ, GRADER_FRESH_WORKERS="1" if fresh else "0")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"grader run failed ({done.returncode}):\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    runs: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        exercises = make_class(folder, args.students)
        for round_number in range(args.rounds):
            for kind in ("fresh", "warm"):
                for jobs in args.jobs:
                    gradebook = folder / f"gradebook-{kind}-j{jobs}-{round_number}.sqlite"
                    wall = timed_run(exercises, gradebook, args.trials, jobs, kind == "fresh")
                    runs.setdefault((kind, jobs), []).append(wall)
        last = args.jobs[-1]
        unchanged = timed_run(exercises, folder / f"gradebook-warm-j{last}-0.sqlite", args.trials, last)
    seconds = {config: min(walls) for config, walls in runs.items()}
    print(f"{args.students} graph2 submissions x {args.trials} trials, {os.cpu_count()} cores", end="")
    print(f", fastest of {args.rounds} rounds" if args.rounds > 1 else "")
    print(f"{'':24} {'wall s':>8} {'subm/s':>8} {'s/subm':>8} {'vs fresh':>9} {'vs -j 1':>8}  runs (s)")
    for (kind, jobs), wall in seconds.items():
        rate, each = args.students / wall, wall / args.students
        versus_fresh = f"{seconds['fresh', jobs] / wall:8.2f}x"
        versus_one = f"{seconds[kind, args.jobs[0]] / wall:7.2f}x"
        label = f"{kind} -j {jobs}"
        spread = " ".join(f"{w:.1f}" for w in runs[kind, jobs])
        print(f"{label:24} {wall:8.1f} {rate:8.2f} {each:8.3f} {versus_fresh} {versus_one}  {spread}")
    print(f"{'re-run, nothing changed':24} {unchanged:8.1f}")


if __name__ == "__main__":
    main()
