"""Benchmark: how much of the Monte Carlo rounding envelope judging needs (issue 41's third decision).

Usage: .venv/bin/python bench/envelope_settled.py [--file FILE] EXERCISE...

The envelope of an entry is eps · (4 · (|expected| + max|expected|) + 16 · spread) + 4 · tiny
(judging/compare.py), so without the Monte Carlo spread it is at least L = eps · 4 · (|expected| +
max|expected|) + 4 · tiny: an entry whose error is at most L is within its envelope, whatever the spread.
For each exercise, its solution (or `--file`) is called on the default check's trials (seed 0, the spec's
count) in this process as the worker calls it (worker/trial.py run_trial), and printed:

- the trials on which every entry of every return is within L (settled without the spread), and the
  unsettled ones by return;
- the CPU of the exercise's references as computed now (exact values and the spread for every trial)
  and of the exact values alone (reference.reference_returns).

Needs the references of seed 0 in the cache ($GRADER_CACHE_DIR, or grader prepare): the trials' inputs
and expected values are read from there.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.exercise import reference_cache  # noqa: E402
from grader.exercise.reference import compute_references, reference_returns  # noqa: E402
from grader.exercise.settings import ReferenceCache  # noqa: E402
from grader.exercise.spec import Exercise, load_exercise  # noqa: E402
from grader.judging.compare import Precision, entry_errors  # noqa: E402
from grader.sandbox import runner  # noqa: E402
from grader.sandbox.protocol import Run  # noqa: E402
from grader.sandbox.worker import loop as worker_loop  # noqa: E402
from grader.sandbox.worker import trial as worker_trial  # noqa: E402
from grader.sandbox.worker.channel import Converted  # noqa: E402


class Returned:
    """What run_trial gives, by trial: each return's array (None where it is a problem)."""

    def __init__(self) -> None:
        self.by_trial: dict[int, dict[str, np.ndarray | None]] = {}

    def send(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None:
        trial = header.get("trial")
        if isinstance(trial, int):
            self.by_trial[trial] = {}

    def starting(self, trial: int) -> None:
        pass

    def queue(self, trial: int, run: Run, seconds: float, returns: list[Converted]) -> None:
        self.by_trial[trial] = {name: array for name, _, _, _, array in returns}


def returned(exercise: Exercise, file: Path, trials: Any) -> Returned:
    for path in exercise.support_paths:
        sys.path.insert(0, str(path))
    spec = importlib.util.spec_from_file_location(f"handin_{exercise.id.replace('.', '_')}", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    job = runner.calls_job(exercise, None, 0)
    job["limits"] = {"memory_mb": 0}
    functions = [getattr(module, call["entry"]) for call in job["calls"]]
    sink = Returned()
    for trial in trials:
        worker_trial.run_trial(sink, functions, trial.index, dict(trial.inputs), job, file.parent, Run.FIRST)
    return sink


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercises", type=Path, nargs="+")
    parser.add_argument("--file", type=Path, help="the hand-in to call (default: each exercise's solution)")
    args = parser.parse_args()
    worker_loop.prepare(torch=False)
    torch.set_num_threads(1)  # as in the zygote's fork that computes references
    cache = ReferenceCache.from_environment()
    totals = {"settled": 0, "trials": 0, "full": 0.0, "exact": 0.0}
    for folder in args.exercises:
        exercise = load_exercise(folder)
        references = reference_cache.lookup(cache, exercise, 0, exercise.spec.trials)
        if references is None:
            raise SystemExit(f"{exercise.id}: no references of seed 0 in {cache.folder}: grader prepare it")
        file = args.file or exercise.root / str(exercise.spec.solution)
        sink = returned(exercise, file, references.trials)
        settled, unsettled = 0, dict.fromkeys(exercise.return_names, 0)
        for trial in references.trials:
            got = sink.by_trial.get(trial.index, {})
            within = True
            for name, expected in references.expected[trial.index].items():
                array = got.get(name)
                if array is None or np.shape(array) != np.shape(expected):
                    within, unsettled[name] = False, unsettled[name] + 1
                    continue
                error, bound = entry_errors(
                    np.asarray(expected, dtype=np.float64),
                    np.asarray(array, dtype=np.float64),
                    np.zeros(np.shape(expected)),
                    Precision.FLOAT64,
                )
                if not (error <= bound).all():
                    within, unsettled[name] = False, unsettled[name] + 1
            settled += within
        reference_returns(exercise, references.trials[:5])  # torch's first use, not the exercise's time
        started = time.process_time()
        compute_references(exercise, references.trials)
        full = time.process_time() - started
        started = time.process_time()
        reference_returns(exercise, references.trials)
        exact = time.process_time() - started
        count = len(references.trials)
        totals["settled"] += settled
        totals["trials"] += count
        totals["full"] += full
        totals["exact"] += exact
        shown = {name: n for name, n in unsettled.items() if n}
        print(
            f"{exercise.id}: {settled}/{count} trials settled without the spread (unsettled by return: "
            f"{shown or 'none'}); references {full:.2f} s CPU, exact values alone {exact:.2f} s",
            flush=True,
        )
    print(
        f"all: {totals['settled']}/{totals['trials']} trials settled; references {totals['full']:.2f} s CPU, "
        f"exact values alone {totals['exact']:.2f} s"
    )


if __name__ == "__main__":
    main()
