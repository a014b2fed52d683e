"""Benchmark: what grading a real assignment costs a student and a course, beside the student's own code.

Usage: .venv/bin/python bench/course_speed.py [--courses a2 a3 graph2] [--students 20] [--jobs 2]
       [--repeats 3] [--against COMMIT]

For each course, the bundled solutions of its exercises merged into one file as a student hands it in
(CS231n A2's layers.py: 12 exercises; A3's rnn_layers.py: 7; graph2's solution.py: 1), and measured side
by side in one run, as CPU of the whole process tree (a cgroup's accounting: the zygotes, sandboxes and
workers the grader starts and kills are counted, which getrusage misses) and wall time:

- cold check: `grader check COURSE FILE` with an empty reference cache (the references are computed);
- cached check: the same again, the references read from the cache;
- the handout's first check: `grader handout COURSE OUT`, then `grader check OUT FILE` with an empty cache
  (what a handout carries decides: references shipped with it, or none);
- start-up: `python -c "import torch"`, what a torch import costs;
- the student's own calls: the CPU spent inside the student's functions while the grader runs them
  (the in-process `grader.check` of every exercise, each call timed by the thread's CPU clock): the
  code's own cost, whatever grader runs it;
- a class of `--students` copies of the file (each a little different, so none is taken from the
  gradebook as another's), `grader run COURSE --seed 0` with the cache warm (`grader prepare` first:
  whole references), per student.

Each check runs `--repeats` times (3), in turns with the other checkout: its figure is the median.
Ratios printed: the class run per student over the student's calls; with `--against COMMIT`, every figure
of that commit's grader too (a git worktree, its own exercises), measured in the same run, and this
checkout's CPU over that commit's. Needs to create a cgroup (root, Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from handin_cost import CpuGroup
from library_cost import ROOT

COURSES = {
    "a2": ROOT / "exercises" / "cs231n" / "a2",
    "a3": ROOT / "exercises" / "cs231n" / "a3",
    "graph2": ROOT / "exercises" / "mac0460" / "graph2",
}

# Run in a fresh interpreter: every exercise of the course whose entry the file defines, checked in this
# process with the student's functions wrapped in a CPU clock.
STUDENT_CALLS = """
import importlib.util, json, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)  # as in the worker
import grader
from grader.exercise.spec import discover_exercises, load_exercise
course, handin = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(handin.parent))
spec = importlib.util.spec_from_file_location("handin", handin)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
spent = [0.0]
def clocked(function):
    def call(*args, **kwargs):
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[0] += time.thread_time() - started
    call.__name__ = function.__name__
    return call
exercises = 0
for folder in discover_exercises(course):
    exercise = load_exercise(folder)
    names = [exercise.spec.entry] + [then.entry for then in exercise.spec.then]
    if not all(hasattr(module, name) for name in names):
        continue
    exercises += 1
    checked = grader.check(exercise, *[clocked(getattr(module, name)) for name in names])
    if checked.score != checked.max_score:
        raise SystemExit(f"{exercise.id}: {checked.score}/{checked.max_score}, not a correct solution")
print(json.dumps({"exercises": exercises, "cpu": spent[0]}))
"""


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float


def merged(course: Path, folder: Path) -> Path:
    """The course's bundled solutions in one file, as a student hands them in."""
    solutions = sorted(course.glob("*/solution.py"))
    if (course / "solution.py").is_file():
        solutions = [course / "solution.py"]
    handin = folder / ("handin.py" if len(solutions) > 1 else "solution.py")
    handin.write_text("\n\n".join(path.read_text() for path in solutions))
    return handin


@dataclass(frozen=True)
class Tree:
    """A checkout whose grader is measured: this one, or another's commit (`--against`)."""

    label: str
    root: Path
    env: dict[str, str]  # what makes `python -m grader` that checkout's


def measured(group: CpuGroup, command: list[str], env: dict[str, str]) -> Measured:
    old = dict(os.environ)
    os.environ.update(env)
    try:
        wall, cpu, done = group.run(command)
    finally:
        os.environ.clear()
        os.environ.update(old)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return Measured(wall, cpu)


def course_figures(
    group: CpuGroup,
    trees: list[Tree],
    name: str,
    handin: Path,
    folder: Path,
    students: int,
    jobs: int,
    repeats: int,
) -> list[dict[str, Measured]]:
    """Every figure of one course, for each checkout: the checks `repeats` times, the checkouts in turns
    (machine noise hits both alike), each figure the median of its runs; the class once."""
    grader = [sys.executable, "-P", "-m", "grader"]  # -P: the checkout PYTHONPATH names, not the cwd's
    runs: list[dict[str, list[Measured]]] = [{} for _ in trees]
    for number, tree in enumerate(trees):
        course = tree.root / COURSES[name].relative_to(ROOT)
        # A student's first check of the course's handout: an empty cache, whatever the handout carries
        made = [*grader, "handout", str(course), str(folder / f"handout{number}")]
        measured(group, made, {**tree.env, "GRADER_CACHE_DIR": str(folder / f"cache{number}")})
    for round_ in range(repeats):
        for number, tree in enumerate(trees):
            course = tree.root / COURSES[name].relative_to(ROOT)
            cache = {**tree.env, "GRADER_CACHE_DIR": str(folder / f"cold{number}-{round_}")}
            check = [*grader, "check", str(course), str(handin)]
            figures = runs[number]
            figures.setdefault("cold check", []).append(measured(group, check, cache))
            figures.setdefault("cached check", []).append(measured(group, check, cache))
            empty = {**tree.env, "GRADER_CACHE_DIR": str(folder / f"student{number}-{round_}")}
            first = [*grader, "check", str(folder / f"handout{number}"), str(handin)]
            figures.setdefault("handout's first check", []).append(measured(group, first, empty))
    klass = folder / "class"
    for index in range(students):
        student = klass / f"s{index:02d}"
        student.mkdir(parents=True)
        (student / handin.name).write_text(handin.read_text() + f"\n# student {index}\n")
    for number, tree in enumerate(trees):
        course = tree.root / COURSES[name].relative_to(ROOT)
        cache = {**tree.env, "GRADER_CACHE_DIR": str(folder / f"cold{number}-0")}
        # Whole references for the class, as an instructor's `grader prepare` stores them: a cold check
        # of numpy code keeps those with the spreads it needed only, which a class run does not take.
        measured(group, [*grader, "prepare", str(course), "--seed", "0"], cache)
        run = [*grader, "run", str(course), "--submissions", str(klass), "--seed", "0"]
        run += ["-j", str(jobs), "--gradebook", str(folder / f"gb{number}.sqlite")]
        whole = measured(group, run, cache)
        runs[number]["class, per student"] = [Measured(whole.wall / students, whole.cpu / students)]
    return [
        {
            figure: Measured(statistics.median(m.wall for m in ms), statistics.median(m.cpu for m in ms))
            for figure, ms in figures.items()
        }
        for figures in runs
    ]


def student_calls(name: str, handin: Path, cache: Path) -> float:
    calls = subprocess.run(
        [sys.executable, "-c", STUDENT_CALLS, str(COURSES[name]), str(handin)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GRADER_CACHE_DIR": str(cache)},
    )
    return float(json.loads(calls.stdout.splitlines()[-1])["cpu"])


def other_checkout(commit: str, folder: Path) -> Tree:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit],
        check=True,
        capture_output=True,
    )
    # PYTHONPATH comes before site-packages (this checkout's editable install); the zygote is told its
    # root by the grader that starts it.
    return Tree(commit, folder, {"PYTHONPATH": str(folder)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--courses", nargs="+", default=list(COURSES), choices=list(COURSES))
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each check, in turns; the median")
    parser.add_argument("--against", metavar="COMMIT", help="measure this commit's grader too, side by side")
    args = parser.parse_args()
    group = CpuGroup()
    with tempfile.TemporaryDirectory(prefix="grader-course-") as tmp:
        trees = [Tree("this checkout", ROOT, {})]
        if args.against:
            trees.append(other_checkout(args.against, Path(tmp) / "against"))
        try:
            startup = measured(group, [sys.executable, "-c", "import torch"], {})
            print(f"start-up (import torch): {startup.cpu:.2f} s CPU")
            labels = " | ".join(t.label for t in trees)
            print(f"course | figure | {labels}" + (" | this / against" if len(trees) > 1 else ""))
            for name in args.courses:
                folder = Path(tmp) / name
                folder.mkdir()
                handin = merged(COURSES[name], folder)
                figures = course_figures(
                    group, trees, name, handin, folder, args.students, args.jobs, args.repeats
                )
                # The median of several runs: one run's figure moved by up to 45% (A3: 0.19-0.33 s), and
                # every ratio below with it.
                calls = sorted(
                    student_calls(name, handin, folder / "cold0-0") for _ in range(max(3, args.repeats))
                )
                own = statistics.median(calls)
                spread = f"{calls[0]:.2f}-{calls[-1]:.2f}"
                print(
                    f"{name} | the student's calls | {own:.2f} s CPU (median of {len(calls)}: {spread})",
                    flush=True,
                )
                for figure in figures[0]:
                    cells = [f"{f[figure].cpu:.2f} CPU {f[figure].wall:.2f} wall" for f in figures]
                    ratio = (
                        f" | {figures[0][figure].cpu / figures[1][figure].cpu:.2f}"
                        if len(figures) > 1
                        else ""
                    )
                    print(f"{name} | {figure} | " + " | ".join(cells) + ratio, flush=True)
                for f, tree in zip(figures, trees, strict=True):
                    per = f["class, per student"].cpu
                    print(
                        f"{name} | class per student / the student's calls ({tree.label}) | {per / own:.2f}x",
                        flush=True,
                    )
        finally:
            group.remove()
            if len(trees) > 1:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees[1].root)], check=False
                )


if __name__ == "__main__":
    main()
