"""Benchmark: what grading a real assignment costs a student and a course, beside the student's own code.

Usage: .venv/bin/python bench/course_speed.py [--courses a2 a3 graph2] [--students 20] [--jobs 2]

For each course, the bundled solutions of its exercises merged into one file as a student hands it in
(CS231n A2's layers.py: 12 exercises; A3's rnn_layers.py: 7; graph2's solution.py: 1), and measured side
by side in one run, as CPU of the whole process tree (a cgroup's accounting: the zygotes, sandboxes and
workers the grader starts and kills are counted, which getrusage misses) and wall time:

- cold check: `grader check COURSE FILE` with an empty reference cache (the references are computed);
- prepared check: the same after `grader prepare COURSE` (skipped where the command does not exist yet);
- cached check: the same again, the references read from the cache;
- start-up: `python -c "import torch"`, what every check pays once (the zygote's import);
- the student's own calls: the CPU spent inside the student's functions while the grader runs them
  (the in-process `grader.check` of every exercise, each call timed by the thread's CPU clock): the
  code's own cost, whatever grader runs it;
- a class of `--students` copies of the file (each a little different, so none is taken from the
  gradebook as another's), `grader run COURSE --seed 0` with the cache warm, per student.

Ratios printed: the cached check beyond start-up and the class run per student, over the student's calls.
Needs to create a cgroup (root, Linux).
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--courses", nargs="+", default=list(COURSES), choices=list(COURSES))
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    grader = [sys.executable, "-m", "grader"]
    has_prepare = "prepare" in subprocess.run([*grader, "--help"], capture_output=True, text=True).stdout
    group = CpuGroup()
    try:
        startup = measured(group, [sys.executable, "-c", "import torch"], {})
        print(f"start-up (import torch): {startup.cpu:.2f} s CPU")
        header = "course | cold check | prepared | cached check | student's calls | cached-startup / calls"
        print(f"{header} | class/student | class per student / calls")
        for name in args.courses:
            course = COURSES[name]
            with tempfile.TemporaryDirectory(prefix="grader-course-") as tmp:
                folder = Path(tmp)
                handin = merged(course, folder)
                cache = {"GRADER_CACHE_DIR": str(folder / "cache")}
                check = [*grader, "check", str(course), str(handin)]
                cold = measured(group, check, cache)
                prepared = None
                if has_prepare:
                    ready = {"GRADER_CACHE_DIR": str(folder / "prepared")}
                    measured(group, [*grader, "prepare", str(course)], ready)
                    prepared = measured(group, check, ready)
                cached = measured(group, check, cache)
                calls = subprocess.run(
                    [sys.executable, "-c", STUDENT_CALLS, str(course), str(handin)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, **cache},
                )
                own = json.loads(calls.stdout.splitlines()[-1])["cpu"]
                students = folder / "class"
                for index in range(args.students):
                    student = students / f"s{index:02d}"
                    student.mkdir(parents=True)
                    text = handin.read_text() + f"\n# student {index}\n"
                    (student / handin.name).write_text(text)
                run = [*grader, "run", str(course), "--submissions", str(students), "--seed", "0"]
                run += ["-j", str(args.jobs), "--gradebook", str(folder / "gb.sqlite")]
                klass = measured(group, run, cache)
                per = klass.cpu / args.students
                shown = f"{prepared.cpu:.2f}" if prepared else "-"
                print(
                    f"{name} | {cold.cpu:.2f} CPU {cold.wall:.1f} wall | {shown} | {cached.cpu:.2f} CPU "
                    f"{cached.wall:.1f} wall | {own:.2f} | {(cached.cpu - startup.cpu) / own:.2f}x | "
                    f"{per:.2f} | {per / own:.2f}x",
                    flush=True,
                )
    finally:
        group.remove()


if __name__ == "__main__":
    main()
