"""Benchmark: one class graded here (`grader run -j 2`) and on a 2-worker Dask cluster on loopback,
side by side in one run, as a ratio.

Usage: .venv/bin/python bench/cluster_overhead.py [--students 40] [--trials 1000] [--rounds 1] [--preload]

A class of graph2 submissions (the correct solution, each file slightly different) is graded by the real
`grader run`, each time with a fresh gradebook: with `-j 2` on this machine, and with `--cluster` on a
scheduler and two one-thread `dask worker` processes started here for the benchmark. The cluster's first
run is cold (its worker processes import the grader and torch, and start their zygotes); the next ones
find the zygotes warm, as a second `grader run` on a cluster that stays up does. Printed: each one's wall
time and its ratio to local. With `--rounds N` each runs N times, one after another, and the fastest
counts (a shared machine only ever adds time). Every run reads the class's references from a cache that
a first, untimed local run fills. With `--preload` the workers start with `--preload grader.cluster.preload`
(their zygotes start with them), so that the first run is the first run on a cluster started ahead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAPH2 = ROOT / "exercises" / "mac0460" / "graph2"
DASK = Path(sys.executable).parent / "dask"


def make_class(folder: Path, students: int) -> Path:
    exercises = folder / "exercises"
    shutil.copytree(GRAPH2, exercises / "graph2")
    shutil.copytree(GRAPH2.parent / "_support", exercises / "_support")  # the course's helpers it imports
    solution = (GRAPH2 / "solution.py").read_text(encoding="utf-8")
    for i in range(students):
        student = folder / "submissions" / f"student{i:03d}"
        student.mkdir(parents=True)
        (student / "graph2.py").write_text(f"{solution}\n# student {i}\n", encoding="utf-8")
    return exercises


def timed_run(exercises: Path, gradebook: Path, trials: int, where: list[str]) -> float:
    gradebook.unlink(missing_ok=True)
    command = [sys.executable, "-m", "grader", "run", str(exercises), "--trials", str(trials), *where]
    command += ["--gradebook", str(gradebook), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:  # every submission is correct
        raise SystemExit(f"grader run {' '.join(where)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


@contextmanager
def loopback_cluster(folder: Path, workers: int, preload: bool = False) -> Iterator[str]:
    """A scheduler and `workers` one-thread workers on 127.0.0.1; its address, until the block ends."""
    import distributed

    scheduler_file = folder / "scheduler.json"
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> None:
        log = (folder / f"dask-{len(started)}.log").open("wb")
        command = [str(DASK), *args]
        started.append(subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True))

    try:
        start(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--scheduler-file",
            str(scheduler_file),
            "--no-dashboard",
        )
        while not scheduler_file.exists():
            time.sleep(0.05)
        address: str = json.loads(scheduler_file.read_text(encoding="utf-8"))["address"]
        for _ in range(workers):
            warm = ["--preload", "grader.cluster.preload"] if preload else []
            start("worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard", *warm)
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        if preload:
            time.sleep(10)  # a cluster started ahead of grading: its zygotes' torch imports are done
        yield address
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--preload", action="store_true", help="workers start their zygotes at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        folder = Path(tmp)
        exercises = make_class(folder, args.students)
        book = folder / "book.sqlite"
        # Every run reads the references from one cache, filled first: the first run to compute them
        # would otherwise pay for the others, and the cluster's cold run is the first on the cluster.
        os.environ["GRADER_CACHE_DIR"] = str(folder / "cache")
        timed_run(exercises, book, args.trials, ["-j", "2"])
        with loopback_cluster(folder, 2, args.preload) as address:
            times: dict[str, list[float]] = {"local -j 2": [], "cluster, cold": [], "cluster, warm": []}
            times["cluster, cold"].append(timed_run(exercises, book, args.trials, ["--cluster", address]))
            for _ in range(args.rounds):
                times["local -j 2"].append(timed_run(exercises, book, args.trials, ["-j", "2"]))
                times["cluster, warm"].append(timed_run(exercises, book, args.trials, ["--cluster", address]))
    local = min(times["local -j 2"])
    print(
        f"{args.students} students x graph2, {args.trials} trials, {os.cpu_count()} cores; fastest of each:"
    )
    for name, runs in times.items():
        best = min(runs)
        print(
            f"  {name:<14} {best:6.2f} s  ({args.students / best:5.2f} submissions/s)"
            f"  {best / local:4.2f}x local"
        )


if __name__ == "__main__":
    main()
