"""Benchmark: grading a class — per-submission cost and class throughput, side by side in one run.

Usage: .venv/bin/python bench/class_throughput.py [--students 100] [--trials 1000] [--jobs 1 2]

A class of graph2 submissions (the correct solution, each file slightly different so that none is taken
from the gradebook) is graded by the real `grader run` once per `-j` value, each with a fresh gradebook;
then `grader run` is repeated with nothing changed (every result from the gradebook). Printed: wall
time, submissions per second, seconds per submission, and the speed-up of each -j over -j 1.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_class(folder: Path, students: int) -> Path:
    exercises = folder / "exercises"
    shutil.copytree(ROOT / "exercises" / "graph2", exercises / "graph2")
    solution = (ROOT / "exercises" / "graph2" / "solution.py").read_text(encoding="utf-8")
    for i in range(students):
        student = folder / "submissions" / f"student{i:03d}"
        student.mkdir(parents=True)
        (student / "graph2.py").write_text(f"{solution}\n# student {i}\n", encoding="utf-8")
    return exercises


def timed_run(exercises: Path, gradebook: Path, trials: int, jobs: int) -> float:
    command = [sys.executable, "-m", "grader", "run", str(exercises), "--trials", str(trials)]
    command += ["-j", str(jobs), "--gradebook", str(gradebook), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"grader run failed ({done.returncode}):\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        exercises = make_class(folder, args.students)
        rows = []
        for jobs in args.jobs:
            seconds = timed_run(exercises, folder / f"gradebook-j{jobs}.sqlite", args.trials, jobs)
            rows.append((f"-j {jobs}", seconds))
        last = args.jobs[-1]
        unchanged = timed_run(exercises, folder / f"gradebook-j{last}.sqlite", args.trials, last)
        rows.append(("re-run, nothing changed", unchanged))
    print(f"{args.students} graph2 submissions x {args.trials} trials, one fresh worker process each")
    print(f"{'':26} {'wall s':>8} {'subm/s':>8} {'s/subm':>8} {'speed-up':>9}")
    first = rows[0][1]
    for label, seconds in rows:
        rate, each, speed_up = args.students / seconds, seconds / args.students, first / seconds
        print(f"{label:26} {seconds:8.1f} {rate:8.2f} {each:8.3f} {speed_up:8.2f}x")


if __name__ == "__main__":
    main()
