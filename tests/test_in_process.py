"""The in-process runner against the sandboxed worker: the same trials and reruns of the same code give
the same passes, return for return, array for array, failure for failure."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import GRAPH2, write_source

from grader.exercise.spec import load_exercise
from grader.exercise.trials import make_trial, make_trials, student_seed
from grader.handin.discover import submission_from_path
from grader.handin.prepare import prepare
from grader.outcomes import FailureKind
from grader.sandbox.in_process import InProcessRunner
from grader.sandbox.report import Pass, RerunRequest, Returned, WorkerReport
from grader.sandbox.runner import RunningWorker

# Returns of every form (a Python float, a float32 tensor, a list, a float32 numpy array), one trial
# that raises, one whose return is of no usable type, and randomness drawn from the global generators.
SOURCE = """
    import numpy as np
    import torch


    def graph2(W_np, x_np, b_np):
        d = W_np.shape[0]
        if d == 3:
            raise ValueError(f"no d of {d}")
        if d == 4:
            return 0.0, "W", W_np
        W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np, dtype=torch.float32) + torch.tensor(b_np)).sum()
        f.backward()
        noise = np.random.rand(*W_np.shape) * 0 + np.random.rand()
        return f.item(), W.grad, (W_np * noise).astype(np.float32).tolist()
"""
TRIALS = 8
REQUEST = RerunRequest(trials=(1, 2, 3), probes=(make_trial(load_exercise(GRAPH2), 7, 40),), extended=(1,))


def _ran(runner: Any) -> WorkerReport:
    exercise = load_exercise(GRAPH2)
    runner.send(make_trials(exercise, 0, TRIALS))
    try:
        runner.first_pass()
        report: WorkerReport = runner.rerun(REQUEST)
        return report
    finally:
        runner.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[WorkerReport, WorkerReport]:
    exercise = load_exercise(GRAPH2)
    path = write_source(tmp_path_factory.mktemp("in_process") / "sol.py", SOURCE)
    seed = student_seed(exercise, 0)
    sandboxed = _ran(RunningWorker(exercise, prepare(submission_from_path(path, "graph2")), seed=seed))
    spec = importlib.util.spec_from_file_location("in_process_sol", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    in_process = _ran(InProcessRunner(exercise, [module.graph2], seed, path.parent))
    return sandboxed, in_process


def _described(passed: Pass) -> dict[int, Any]:
    found: dict[int, Any] = {}
    for index, output in passed.outputs.items():
        found[index] = {
            name: (item.description, item.array.dtype, item.array.tolist())
            if isinstance(item, Returned)
            else item
            for name, item in output.by_name.items()
        }
    for index, failure in passed.failures.items():
        found[index] = (failure.kind, failure.message, failure.traceback, failure.trial)
    return found


@pytest.mark.parametrize("run", ["first", "reruns", "extended"])
def test_each_pass_is_the_sandboxed_workers(reports: tuple[WorkerReport, WorkerReport], run: str) -> None:
    sandboxed, in_process = (getattr(report, run) for report in reports)
    assert _described(in_process) == _described(sandboxed)
    assert in_process.stopped is None and sandboxed.stopped is None


def test_the_passes_hold_every_kind_of_answer(reports: tuple[WorkerReport, WorkerReport]) -> None:
    _, in_process = reports
    first = in_process.first
    assert sorted([*first.outputs, *first.failures]) == list(range(TRIALS))
    failure = next(iter(first.failures.values()))
    assert failure.kind is FailureKind.EXCEPTION and failure.message == "ValueError: no d of 3"
    assert 'File "sol.py", line 8, in graph2' in failure.traceback
    items = [item for output in first.outputs.values() for item in output.by_name.values()]
    assert {type(item).__name__ for item in items} == {"Returned", "ReturnProblem"}
    dtypes = {item.dtype for item in items if isinstance(item, Returned)}
    assert dtypes >= {"float32", "float64"}
    assert 40 in in_process.reruns.outputs  # the probe
    assert in_process.isolation.line == "graded in this Python process: no sandbox, your own machine"
    grad = in_process.reruns.outputs[1].by_name["auto_grad"]
    assert isinstance(grad, Returned) and grad.array.dtype == np.float64  # lifted, as in the sandbox


def test_what_the_code_prints_is_kept_as_the_sandbox_keeps_it(tmp_path: Path) -> None:
    exercise = load_exercise(GRAPH2)
    namespace: dict[str, Any] = {}
    exec("def graph2(W_np, x_np, b_np):\n    print('x' * 50000)\n    return 0.0, W_np, W_np\n", namespace)
    report = _ran(InProcessRunner(exercise, [namespace["graph2"]], 0, tmp_path))
    reruns = (REQUEST.trials, REQUEST.probes, REQUEST.extended)
    calls = TRIALS + sum(len(run) for run in reruns)
    assert report.output_bytes == 50001 * calls
    assert len(report.stdout) < 70_000 and report.stdout.endswith("more bytes not shown]")
