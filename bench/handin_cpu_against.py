"""Benchmark: CPU per hand-in of this checkout against another, in a class, counted by the kernel.

Usage: .venv/bin/python bench/handin_cpu_against.py --against DIR [--rounds 3] [--scenarios graph2 ...]

Each scenario is a class graded by the real `grader run COURSE --submissions S --seed 0 -j 1` of each
checkout (run from the checkout's folder: `python -m` puts it first, so its grader runs, with this
interpreter where it has no .venv of its own), at two class sizes; the CPU of the whole process tree (the
grader, its zygotes, sandboxes and workers, the killed ones too) is read from a cgroup's accounting
(handin_cost.CpuGroup). The slope between the sizes is the CPU per hand-in, its fixed costs (start-up,
references: each checkout has its own cache, warmed by the first round) left out. Rounds interleave the
checkouts so that the machine's drift hits both alike; the fastest of each is kept. Scenarios:

- graph2: the bundled solution (user_grad derived by hand: an ordinary worker and a checked one);
- graph2-plain: the same with its `by_hand` mark removed (one worker: what every other hand-in pays);
- a2: CS231n A2's solutions merged into one layers.py (12 exercises in one worker, the checked ones in a
  second).

Printed: per scenario and checkout the CPU per hand-in, and this checkout's over the other's
(issue 39's acceptance: at most 1.05). Needs to create a cgroup (root, Linux).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from course_speed import merged
from handin_cost import CpuGroup
from library_cost import ROOT

GRAPH2 = ROOT / "exercises" / "mac0460" / "graph2"


def _graph2(folder: Path, by_hand: bool) -> tuple[Path, Path]:
    course = folder / "course"
    shutil.copytree(GRAPH2, course / "graph2")
    shutil.copytree(GRAPH2.parent / "_support", course / "_support")
    if not by_hand:
        spec = course / "graph2" / "exercise.yaml"
        text = spec.read_text(encoding="utf-8")
        assert ", by_hand: true}" in text
        spec.write_text(text.replace(", by_hand: true}", "}"), encoding="utf-8")
    return course, GRAPH2 / "solution.py"


def _a2(folder: Path) -> tuple[Path, Path]:
    course = ROOT / "exercises" / "cs231n" / "a2"
    return course, merged(course, folder)


SCENARIOS: dict[str, tuple[Callable[[Path], tuple[Path, Path]], tuple[int, int]]] = {
    "graph2": (lambda folder: _graph2(folder, True), (4, 16)),
    "graph2-plain": (lambda folder: _graph2(folder, False), (4, 16)),
    "a2": (_a2, (2, 6)),
}


def _class(handin: Path, folder: Path, students: int) -> Path:
    submissions = folder / f"class-{students}"
    for index in range(students):
        student = submissions / f"s{index:03d}"
        student.mkdir(parents=True)
        (student / handin.name).write_text(f"{handin.read_text()}\n# student {index}\n")
    return submissions


def _cpu(group: CpuGroup, checkout: Path, course: Path, submissions: Path, cache: Path) -> float:
    book = submissions.parent / "gradebook.sqlite"
    book.unlink(missing_ok=True)
    command = [sys.executable, "-m", "grader", "run", str(course), "--submissions", str(submissions)]
    command += ["--seed", "0", "-j", "1", "--gradebook", str(book)]
    old = dict(os.environ)
    os.environ.update(GRADER_CACHE_DIR=str(cache))
    here = Path.cwd()
    try:
        os.chdir(checkout)
        _, cpu, done = group.run(command)
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(old)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: grader run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="another checkout of the grader")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    args = parser.parse_args()
    checkouts = {"this": ROOT, "against": args.against.resolve()}
    group = CpuGroup()
    best: dict[tuple[str, str, int], float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="grader-against-") as tmp:
            scratch = Path(tmp)
            prepared = {}
            for name in args.scenarios:
                make, sizes = SCENARIOS[name]
                folder = scratch / name
                folder.mkdir()
                course, handin = make(folder)
                prepared[name] = (course, {n: _class(handin, folder, n) for n in sizes}, folder)
            for round_number in range(args.rounds + 1):  # the first warms each checkout's reference cache
                for name, (course, classes, folder) in prepared.items():
                    for checkout_name, checkout in checkouts.items():
                        cache = folder / f"cache-{checkout_name}"
                        for size, submissions in classes.items():
                            cpu = _cpu(group, checkout, course, submissions, cache)
                            key = (name, checkout_name, size)
                            if round_number > 0:
                                best[key] = min(best.get(key, cpu), cpu)
    finally:
        group.remove()
    print(f"CPU per hand-in (grader run -j 1, slope between class sizes), fastest of {args.rounds} rounds")
    for name in args.scenarios:
        small, large = SCENARIOS[name][1]
        slope = {c: (best[(name, c, large)] - best[(name, c, small)]) / (large - small) for c in checkouts}
        print(
            f"  {name:13s} this {1000 * slope['this']:7.1f} ms   against {1000 * slope['against']:7.1f} ms"
            f"   ratio {slope['this'] / slope['against']:.3f}"
        )


if __name__ == "__main__":
    main()
