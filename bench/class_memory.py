"""Benchmark: the peak memory of a class run, at several class sizes, side by side in one run.

Usage: .venv/bin/python bench/class_memory.py [--students 40 160] [--trials 1000] [--jobs 2]

For each size a class of graph2 hand-ins (each file a little different: none comes from the gradebook) is
graded by the real `grader run`, while this script samples, every 0.1 s, the proportional set size (PSS,
/proc/PID/smaps_rollup: shared pages split among the processes that map them, so that the warm zygotes'
shared torch is counted once) of the grader and every process below it: workers, zygotes, their children.
Printed: each size's peak and median PSS, and the peak's ratio to the smallest class's. Linux only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from class_throughput import make_class


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        tree.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return tree


def tree_pss_kb(root: int) -> int:
    """The PSS of `root` and all its descendants, in kB."""
    tree, total, stack = _children(), 0, [root]
    while stack:
        pid = stack.pop()
        stack += tree.get(pid, [])
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue  # a worker that ended between the listing and the read
        total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
    return total


def sampled_run(exercises: Path, gradebook: Path, trials: int, jobs: int) -> list[int]:
    command = [sys.executable, "-m", "grader", "run", str(exercises), "--trials", str(trials)]
    command += ["-j", str(jobs), "--gradebook", str(gradebook), "--json"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples = []
    while process.poll() is None:
        samples.append(tree_pss_kb(process.pid))
        time.sleep(0.1)
    if process.returncode not in (0, 1):
        raise SystemExit(
            f"grader run failed ({process.returncode}):\n{process.stderr.read() if process.stderr else ''}"
        )
    return [s for s in samples if s > 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[40, 160])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    peaks: dict[int, tuple[int, float]] = {}
    for students in args.students:
        with tempfile.TemporaryDirectory() as scratch:
            exercises = make_class(Path(scratch), students)
            samples = sampled_run(exercises, Path(scratch) / "gradebook.sqlite", args.trials, args.jobs)
        peaks[students] = (max(samples), statistics.median(samples))
    print(f"graph2 x {args.trials} trials, -j {args.jobs}: PSS of the grader and its processes")
    print(f"{'students':>9} {'peak MB':>9} {'median MB':>10} {'peak vs first':>14}")
    first = peaks[args.students[0]][0]
    for students, (peak, median) in peaks.items():
        print(f"{students:>9} {peak / 1024:9.0f} {median / 1024:10.0f} {peak / first:13.2f}x")


if __name__ == "__main__":
    main()
