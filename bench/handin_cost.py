"""Benchmark: what grading a hand-in costs beside the student's own code, in CPU time; and the fixed cost.

Usage: .venv/bin/python bench/handin_cost.py [--students 10 40 160] [--trials 1000] [--jobs 2] [--rounds 1]

(1) A class of graph2 hand-ins (library_cost.make_class: the correct solution, each file a little
different) is graded by the real `grader run` over a folder holding graph2 alone, at each class size, with
a fresh gradebook. The CPU time of the grader and of every process below it (zygotes, sandboxes, workers)
is read from a cgroup's CPU accounting (v1 `cpuacct`, v2 `cpu.stat`) the run is started in: it counts the
processes the grader kills too, which `getrusage` misses. A least-squares line through the class sizes
gives the fixed cost and the cost per hand-in, in wall time and in CPU time.
(2) The student's own code: the hand-in's graph2 called on the same trials' inputs (the grader's own
`make_trials`), one call after another in one Python process, after its imports, with torch on one
thread as in the worker: its CPU time per loop of all the trials, five loops after every class run.
Printed: both lines, and the CPU per hand-in over the student's code's CPU (acceptance: at most 1.5),
against the mean loop and against the fastest. The mean is the like-for-like figure: the slope averages
over every hand-in of a run, and on this machine the fastest loop is ~25% below the mean (2026-12-02:
0.194 s fastest, 0.264 s mean of 20 loops), which the fastest would charge to the grader.
Needs to create a cgroup (root, Linux); with `--rounds N` each size runs N times and the fastest counts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from library_cost import ROOT, check_full_marks, children_cpu, line, make_class

_V1 = Path("/sys/fs/cgroup/cpuacct")
_V2 = Path("/sys/fs/cgroup")

STUDENT_LOOP = """
import sys, time
sys.path.insert(0, sys.argv[2])
import importlib.util
from pathlib import Path
from grader.exercise.spec import load_exercise
from grader.exercise.trials import make_trials

import torch

torch.set_num_threads(1)  # as in the worker (worker.prepare): a second thread's spinning is not the code's
exercise = load_exercise(Path(sys.argv[1]))
spec = importlib.util.spec_from_file_location("handin", sys.argv[3])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
trials = make_trials(exercise, 0, int(sys.argv[4]))
calls = [[t.inputs[name] for name in exercise.spec.args] for t in trials]
module.graph2(*calls[0])  # torch's first-use set-up, which a class's zygote pays once too
for _ in range(5):
    started = time.process_time()
    for call in calls:
        module.graph2(*call)
    print(time.process_time() - started)
"""


class CpuGroup:
    """A cgroup whose CPU accounting covers a command and everything it starts."""

    def __init__(self) -> None:
        name = f"grader-bench-{uuid.uuid4().hex[:8]}"
        self.v1 = _V1.is_dir()
        self.path = (_V1 if self.v1 else _V2) / name
        self.path.mkdir()
        self.waited = 0.0  # the last command's CPU as getrusage counts it (what its processes waited for)

    def run(self, command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
        """Wall and CPU seconds of `command`, and how it ended."""
        procs = str(self.path / "cgroup.procs")
        before, waited = self._usage(), children_cpu()
        started = time.perf_counter()
        # The child joins the group before it runs anything: its whole tree is counted.
        shell = ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *command]
        done = subprocess.run(shell, capture_output=True, text=True, check=False)
        self.waited = children_cpu() - waited
        return time.perf_counter() - started, self._usage() - before, done

    def _usage(self) -> float:
        if self.v1:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6

    def remove(self) -> None:
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[10, 40, 160])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    group = CpuGroup()
    wall: dict[int, float] = {}
    cpu: dict[int, float] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            classes = {count: make_class(folder / f"class-{count}", count) for count in args.students}
            alone = next(iter(classes.values()))[0]
            handin = next(iter(classes.values()))[1] / "student000" / "graph2.py"
            student = [sys.executable, "-c", STUDENT_LOOP, str(alone / "graph2"), str(ROOT), str(handin)]
            student.append(str(args.trials))
            student_cpu = []
            for round_number in range(args.rounds):
                for count, (exercises, submissions) in classes.items():
                    gradebook = folder / f"gradebook-{count}-{round_number}.sqlite"
                    command = [sys.executable, "-m", "grader", "run", str(exercises)]
                    command += ["--submissions", str(submissions), "--trials", str(args.trials)]
                    command += ["-j", str(args.jobs), "--gradebook", str(gradebook), "--json"]
                    seconds, used, done = group.run(command)
                    if done.returncode not in (0, 1):
                        raise SystemExit(f"grader run failed ({done.returncode}):\n{done.stderr}")
                    check_full_marks(done.stdout, "graph2")
                    # getrusage misses the sandboxes the grader kills: nearly all of it is the grader's own
                    print(f"  {count} students: {used:.2f} s CPU in all, {group.waited:.2f} s by getrusage")
                    wall[count] = min(wall.get(count, seconds), seconds)
                    cpu[count] = min(cpu.get(count, used), used)
                    # After every class, not once: this machine's speed drifts within minutes, and the
                    # fastest of all is the one compared.
                    _, _, done = group.run(student)
                    if done.returncode != 0:
                        raise SystemExit(f"the student's loop failed:\n{done.stderr}")
                    student_cpu += [float(word) for word in done.stdout.split()]
    finally:
        group.remove()
    print(f"graph2 hand-ins x {args.trials} trials, grader run -j {args.jobs}", end="")
    print(f", {os.cpu_count()} cores", end="")
    print(f", fastest of {args.rounds} rounds" if args.rounds > 1 else "")
    print(f"{'students':>8} {'wall s':>8} {'CPU s':>8} {'CPU s/hand-in':>14}")
    for count in args.students:
        print(f"{count:8d} {wall[count]:8.2f} {cpu[count]:8.2f} {cpu[count] / count:14.3f}")
    own, fastest = sum(student_cpu) / len(student_cpu), min(student_cpu)
    print(f"the student's code alone: {own:.3f} s CPU per hand-in ({args.trials} calls), mean of", end="")
    print(f" {len(student_cpu)} loops; the fastest {fastest:.3f} s")
    if len(args.students) > 1:
        fixed_wall, slope_wall = line([(count, wall[count]) for count in args.students])
        fixed_cpu, slope_cpu = line([(count, cpu[count]) for count in args.students])
        print(f"wall: fixed {fixed_wall:.2f} s + {slope_wall:.3f} s per hand-in")
        print(f"CPU:  fixed {fixed_cpu:.2f} s + {slope_cpu:.3f} s per hand-in")
        ratio = f"per hand-in CPU / the student's code: {slope_cpu / own:.2f} (acceptance: at most 1.5)"
        print(f"{ratio}; / its fastest loop: {slope_cpu / fastest:.2f}")


if __name__ == "__main__":
    main()
