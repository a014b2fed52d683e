"""Benchmark: what a course's whole exercise library costs when a class hands in one exercise of it.

Usage: .venv/bin/python bench/library_cost.py [--students 40] [--trials 1000] [--jobs 2] [--rounds 1]
       [--no-seed] [--every]

A class of graph2 hand-ins only (the correct solution, each file slightly different so that none is taken
from the gradebook, as in class_throughput.py) is graded by the real `grader run -j JOBS`, each run with a
fresh gradebook, over
  (a) the bundled exercises folder, every exercise of the library (nobody hands in the others),
  (b) a folder holding graph2 alone,
and (c) the seed's own check (seed_loop.py, as check_vs_seed.py runs it) in a fresh Python per hand-in,
JOBS at a time; with `--every`, also (d) the library graded for a class where every student hands in
every exercise (each one's solution, a file per exercise), against a fresh Python per hand-in at (c)'s
cost per hand-in (the interpreter and torch's import are most of any exercise's loop). Printed: each
one's wall time and CPU time (of every process it waited for: on a shared
machine the steadier of the two), and the ratios a/b (what the exercises nobody handed in cost;
acceptance: at most 1.3) and c/a (acceptance: at least 5).

With several `--students` counts (10 40 160) it also prints, for (a) and (b), the fixed cost and the cost
per hand-in of a line through the counts (least squares). With `--rounds N` every configuration runs N
times, round after round, and the fastest of each is compared: a shared machine only ever adds time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "exercises"
GRAPH2 = LIBRARY / "mac0460" / "graph2"
SEED = [sys.executable, str(ROOT / "bench" / "seed_loop.py")]


def make_class(folder: Path, students: int) -> tuple[Path, Path]:
    """The graph2-only exercises folder and a submissions folder of `students` graph2 hand-ins."""
    alone = folder / "alone"
    shutil.copytree(GRAPH2, alone / "graph2")
    shutil.copytree(GRAPH2.parent / "_support", alone / "_support")  # what its spec's `support:` names
    # The solution's helper is named `sigmoid`, which is also CS224n's exercise of that name: over the
    # library every hand-in would attempt it too. Renamed, the class hands in graph2 alone.
    # (torch.sigmoid stays: only the helper's own name changes)
    solution = (GRAPH2 / "solution.py").read_text(encoding="utf-8")
    solution = re.sub(r"(?<![.\w])sigmoid\(", "logistic(", solution)
    submissions = folder / f"submissions-{students}"
    for i in range(students):
        student = submissions / f"student{i:03d}"
        student.mkdir(parents=True)
        (student / "graph2.py").write_text(f"{solution}\n# student {i}\n", encoding="utf-8")
    return alone, submissions


Timing = tuple[float, float]  # wall seconds, and CPU seconds of every process it waited for


def make_every(folder: Path, students: int) -> tuple[Path, int]:
    """A submissions folder where every student hands in every bundled exercise: each one's solution,
    a file per exercise (an exercise whose entry an earlier one's file already defines is left out, so
    that no two files define the same function). Also: how many exercises each hands in."""
    solutions: dict[str, str] = {}
    entries: set[str] = set()
    for spec_file in sorted(LIBRARY.rglob("exercise.yaml")):
        spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
        solution = spec_file.parent / str(spec.get("solution", "solution.py"))
        if spec["entry"] in entries or not solution.is_file():
            continue
        entries.add(spec["entry"])
        solutions[str(spec["id"]).replace(".", "_")] = solution.read_text(encoding="utf-8")
    submissions = folder / f"every-{students}"
    for i in range(students):
        student = submissions / f"student{i:03d}"
        student.mkdir(parents=True)
        for name, code in solutions.items():
            (student / f"{name}.py").write_text(f"{code}\n# student {i}\n", encoding="utf-8")
    return submissions, len(solutions)


HANDED_IN: dict[Path, int] = {}  # (d)'s hand-ins graded, by submissions folder


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def graded(
    exercises: Path, submissions: Path, gradebook: Path, trials: int, jobs: int, every: bool = False
) -> Timing:
    command = [sys.executable, "-m", "grader", "run", str(exercises), "--submissions", str(submissions)]
    command += ["--trials", str(trials), "-j", str(jobs), "--gradebook", str(gradebook), "--json"]
    # An empty reference cache for every run: each computes its references, as a class's first run does
    # (with a shared one, the first configuration run would pay for the others).
    with tempfile.TemporaryDirectory(prefix="grader-bench-cache-") as cache:
        started, cpu = time.perf_counter(), children_cpu()
        env = {**os.environ, "GRADER_CACHE_DIR": cache}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"grader run failed ({done.returncode}):\n{done.stderr}")
    if every:
        results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        handed = [r for r in results if (r["error"] or {}).get("kind") != "not-submitted"]
        full = sum(r["score"] == r["max_score"] for r in handed)
        print(f"  (every exercise: {len(handed)} hand-ins graded, {full} at full marks)")
        HANDED_IN[submissions] = len(handed)
    else:
        check_full_marks(done.stdout, "graph2")
    return seconds, children_cpu() - cpu


def check_full_marks(json_lines: str, exercise: str) -> None:
    """Every hand-in of `exercise` got full marks: a benchmark of hand-ins that fail measures nothing."""
    results = [json.loads(line) for line in json_lines.splitlines() if line.strip()]
    graded = [r for r in results if r["exercise"] == exercise]
    wrong = [r for r in graded if r["score"] != r["max_score"]]
    if not graded or wrong:
        raise SystemExit(f"{len(wrong)} of {len(graded)} {exercise} hand-ins not at full marks: {wrong[:1]}")


def seed_loops(students: int, jobs: int) -> Timing:
    def one(_: int) -> None:
        subprocess.run(SEED, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)

    started, cpu = time.perf_counter(), children_cpu()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(students)))
    return time.perf_counter() - started, children_cpu() - cpu


def line(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """Fixed cost and cost per hand-in of the least-squares line through (students, seconds)."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return mean_y - slope * mean_x, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[40])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-seed", action="store_true", help="leave out (c), the seed's loops")
    parser.add_argument("--every", action="store_true", help="also (d): every student hands in everything")
    args = parser.parse_args()
    runs: dict[tuple[str, int], list[Timing]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        classes = {count: make_class(folder / f"class-{count}", count) for count in args.students}
        every = {count: make_every(folder / f"class-{count}", count) for count in args.students if args.every}
        for round_number in range(args.rounds):
            for count, (alone, submissions) in classes.items():
                for label, exercises in (("a", LIBRARY), ("b", alone)):
                    gradebook = folder / f"gradebook-{label}-{count}-{round_number}.sqlite"
                    timing = graded(exercises, submissions, gradebook, args.trials, args.jobs)
                    runs.setdefault((label, count), []).append(timing)
                if not args.no_seed:
                    runs.setdefault(("c", count), []).append(seed_loops(count, args.jobs))
                if count in every:
                    gradebook = folder / f"gradebook-d-{count}-{round_number}.sqlite"
                    timing = graded(LIBRARY, every[count][0], gradebook, args.trials, args.jobs, every=True)
                    runs.setdefault(("d", count), []).append(timing)
    best = {config: min(timings)[0] for config, timings in runs.items()}
    cpu = {config: min(c for _, c in timings) for config, timings in runs.items()}
    library = sum(1 for _ in LIBRARY.rglob("exercise.yaml"))
    print(f"graph2 hand-ins x {args.trials} trials, -j {args.jobs}, {os.cpu_count()} cores", end="")
    print(f", fastest of {args.rounds} rounds" if args.rounds > 1 else "")
    names = {
        "a": f"(a) grader run, library ({library} exercises)",
        "b": "(b) grader run, graph2 alone",
        "c": f"(c) seed loop, fresh Python each, {args.jobs} at a time",
        "d": "(d) grader run, library, every exercise handed in",
    }
    print(f"{'':52} {'students':>8} {'wall s':>8} {'s/hand-in':>10} {'CPU s':>8}  runs (wall s)")
    for (label, count), wall in sorted(best.items()):
        spread = " ".join(f"{w:.1f}" for w, _ in runs[label, count])
        used = cpu[label, count]
        print(f"{names[label]:52} {count:8d} {wall:8.1f} {wall / count:10.3f} {used:8.1f}  {spread}")
    for count in args.students:
        a, b = best["a", count], best["b", count]
        verdict = f"a/b {a / b:.2f} wall, {cpu['a', count] / cpu['b', count]:.2f} CPU"
        verdict += " (acceptance: at most 1.3)"
        if ("c", count) in best:
            verdict += f"; c/a {best['c', count] / a:.2f} wall, {cpu['c', count] / cpu['a', count]:.2f} CPU"
            verdict += " (acceptance: at least 5)"
        print(f"{count} students: {verdict}")
        if ("d", count) in best and ("c", count) in best:
            handins = HANDED_IN[every[count][0]]
            # The seed's loop is graph2's; another exercise's loop in a fresh Python costs about as much
            # (the interpreter and torch's import are most of it): c's time per hand-in, for each of them.
            fresh = best["c", count] / count * handins
            print(
                f"{count} students, {handins} hand-ins: {best['d', count] / handins:.3f} s per "
                f"hand-in; a fresh Python per hand-in at (c)'s cost, {fresh:.0f} s: "
                f"{fresh / best['d', count]:.1f}x"
            )
    if len(args.students) > 1:
        for label in ("a", "b"):
            fixed, slope = line([(count, best[label, count]) for count in args.students])
            print(f"{names[label]}: fixed {fixed:.2f} s + {slope:.3f} s per hand-in")


if __name__ == "__main__":
    main()
