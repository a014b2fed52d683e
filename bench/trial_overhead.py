"""Benchmark: what the worker's trial loop adds to the student's own calls, and where it goes.

Usage: .venv/bin/python bench/trial_overhead.py [--exercise exercises/mac0460/graph2] [--trials 1000]
       [--loops 15]

The exercise's solution runs in this process as the sandboxed worker runs it (worker/trial.py run_trial: the
trial's seeding, fresh copies of its inputs, the deadlines, each return converted and queued on a
result channel whose frames another process reads away), beside a bare loop calling the same function on the
same inputs, and beside the bare loop with the worker's steps added one at a time (fresh copies of the
inputs, seeding, converting the returns, queueing them). Printed: the CPU time of each (the fastest of
`--loops`, alternating), and a sampling profile of the worker's loop (a SIGPROF every 0.5 ms of CPU):
the share of samples in the student's function and in each of the worker's steps below `run_trial`.
No sandbox, no grader: only the worker's own cost.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.exercise.spec import load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402
from grader.sandbox import runner, seeding  # noqa: E402
from grader.sandbox.protocol import PROGRESS, Run  # noqa: E402
from grader.sandbox.worker import channel as worker_channel  # noqa: E402
from grader.sandbox.worker import loop as worker_loop  # noqa: E402
from grader.sandbox.worker import returns  # noqa: E402
from grader.sandbox.worker import trial as worker_trial  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", type=Path, default=ROOT / "exercises" / "mac0460" / "graph2")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--loops", type=int, default=15)
    args = parser.parse_args()
    exercise = load_exercise(args.exercise)
    job = runner.calls_job(exercise, None, 0)
    if len(job["calls"]) != 1 or not all(isinstance(arg, str) for arg in job["calls"][0]["args"]):
        raise SystemExit(f"{exercise.id}: an exercise of one call on its inputs only, such as graph2")
    worker_loop.prepare(torch=True)
    trials = make_trials(exercise, 0, args.trials)
    job["limits"] = {"memory_mb": 0}
    read, write = os.pipe()
    # The grader's end of the result pipe, read away by another process as the grader's would be: a
    # thread of this one would take the GIL from the loop at every frame, and count in its CPU time.
    drain = subprocess.Popen(["cat"], stdin=read, stdout=subprocess.DEVNULL)
    os.close(read)
    progress = os.memfd_create("progress")
    os.ftruncate(progress, PROGRESS.size)
    channel = worker_channel.Channel(write, progress)
    solution = exercise.root / str(exercise.spec.solution)
    folder = solution.parent
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("handin", solution)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, exercise.spec.entry)
    calls = [[t.inputs[name] for name in job["calls"][0]["args"]] for t in trials]

    names = job["returns"]

    def bare() -> None:
        for call in calls:
            function(*call)

    # The worker's steps added to the bare loop one at a time: what each costs beside the student's code,
    # whose speed they change too (the generators' states and the copies displace what it keeps in cache).
    def copies() -> None:
        for call in calls:
            function(*[array.copy() for array in call])

    def seeded() -> None:
        for trial, call in zip(trials, calls, strict=True):
            seeding.seed_randomness(0, trial.index)
            function(*[array.copy() for array in call])

    def converted() -> None:
        for trial, call in zip(trials, calls, strict=True):
            seeding.seed_randomness(0, trial.index)
            returned = function(*[array.copy() for array in call])
            [returns.converted(n, v) for n, v in zip(names, returned, strict=True)]

    def queued() -> None:
        for trial, call in zip(trials, calls, strict=True):
            seeding.seed_randomness(0, trial.index)
            returned = function(*[array.copy() for array in call])
            results = [returns.converted(n, v) for n, v in zip(names, returned, strict=True)]
            channel.queue(trial.index, Run.FIRST, 0.0001, results)
        channel.flush()

    def wrapped() -> None:
        for trial in trials:
            channel.starting(trial.index)
            inputs = dict(trial.inputs)
            worker_trial.run_trial(channel, [function], trial.index, inputs, job, folder, Run.FIRST)
        channel.flush()

    loops = {
        "bare": bare,
        "+ fresh copies": copies,
        "+ seeding": seeded,
        "+ converting": converted,
        "+ queueing": queued,
        "worker": wrapped,
    }
    spent: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.loops):
        for name, loop in loops.items():
            started = time.process_time()
            loop()
            spent[name].append(time.process_time() - started)
    fastest = {name: min(times) for name, times in spent.items()}
    print(f"{exercise.id}, {args.trials} trials, fastest of {args.loops} loops (CPU):")
    print(f"  the function alone  {fastest['bare'] * 1000:7.1f} ms")
    previous = fastest["bare"]
    for name in list(loops)[1:-1]:
        print(f"  {name:<18}  {fastest[name] * 1000:7.1f} ms  ({(fastest[name] - previous) * 1000:+.1f} ms)")
        previous = fastest[name]
    ratio = fastest["worker"] / fastest["bare"]
    print(f"  in the worker loop  {fastest['worker'] * 1000:7.1f} ms  ({ratio:.2f}x)")

    steps: collections.Counter[str] = collections.Counter()
    student = str(solution)

    def sample(signum: int, frame: FrameType | None) -> None:
        chain: list[Any] = []
        while frame is not None:
            chain.append(frame.f_code)
            frame = frame.f_back
        for depth, code in enumerate(chain):
            if code.co_filename == student:
                steps["the student's function"] += 1
                return
            if code.co_name == "_run_trial":
                below = chain[depth - 1] if depth else code
                steps[f"{Path(below.co_filename).name}:{below.co_name}"] += 1
                return
        steps[f"{Path(chain[0].co_filename).name}:{chain[0].co_name}" if chain else "?"] += 1

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
    for _ in range(args.loops):
        wrapped()
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    total = sum(steps.values())
    print(f"where the worker loop's CPU goes ({total} samples):")
    for step, count in steps.most_common(12):
        print(f"  {100 * count / total:5.1f}%  {step}")
    drain.terminate()
    drain.wait()


if __name__ == "__main__":
    main()
