"""The two steps of a run: the first pass comes back as a value, the reruns are planned from it by a pure
function, and the second pass brings back exactly what was asked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, TRANSPOSED_GRAPH2, write_source

from grader.exercise.reference import References, compute_references
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.handin.discover import submission_from_path
from grader.handin.prepare import prepare
from grader.judging.reruns.plan import plan_reruns
from grader.judging.reruns.scaling import HAS_EXTENDED
from grader.outcomes import Failure, FailureKind, Verdict
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Pass, RerunRequest, Returned, TrialOutput
from grader.sandbox.runner import RunningWorker

TRIALS = 12


@pytest.fixture(scope="module")
def graph2_refs() -> tuple[Exercise, References]:
    exercise = load_exercise(GRAPH2)
    return exercise, compute_references(exercise, make_trials(exercise, 0, TRIALS))


def _first_pass(exercise: Exercise, references: References, path: Path) -> tuple[RunningWorker, Pass]:
    worker = RunningWorker(exercise, prepare(submission_from_path(path, exercise.spec.entry)))
    worker.send(references.trials)
    return worker, worker.first_pass()


def test_a_correct_first_pass_asks_for_no_rerun(
    graph2_refs: tuple[Exercise, References], tmp_path: Path
) -> None:
    exercise, references = graph2_refs
    worker, first = _first_pass(exercise, references, write_source(tmp_path / "ok.py", CORRECT_GRAPH2))
    try:
        assert sorted(first.outputs) == [t.index for t in references.trials] and first.stopped is None
        plan = plan_reruns(exercise, references, first)
        # nothing to rerun (the autograd check runs in the first pass, judging/provenance.py)
        assert plan.request == RerunRequest() and plan.probes == ()
        assert all(c.verdict is Verdict.PASS for judged in plan.comparisons.values() for c in judged.values())
        report = worker.rerun(plan.request)
    finally:
        worker.close()
    assert report.first is first and not report.reruns.outputs and not report.reruns.failures


def test_trials_beyond_rounding_are_rerun_and_come_back_at_float64(
    graph2_refs: tuple[Exercise, References], tmp_path: Path
) -> None:
    exercise, references = graph2_refs
    float32 = TRANSPOSED_GRAPH2.replace("return f, W.grad,", "return f, W.grad.float(),")
    worker, first = _first_pass(exercise, references, write_source(tmp_path / "t.py", float32))
    try:
        plan = plan_reruns(exercise, references, first)
        # The plan is a function of the first pass alone: the same pass, the same plan.
        assert plan_reruns(exercise, references, first).request == plan.request
        assert plan.request.trials == tuple(t.index for t in references.trials)  # each is wrong
        report = worker.rerun(plan.request)
    finally:
        worker.close()
    assert sorted(report.reruns.outputs) == list(plan.request.trials)
    rerun = report.reruns.outputs[0].by_name["auto_grad"]
    assert isinstance(rerun, Returned) and rerun.dtype == "float64"  # .float() lifted in the rerun


def test_every_trial_beyond_rounding_is_rerun_and_float64_ones_above_float64(
    graph2_refs: tuple[Exercise, References],
) -> None:
    """No limit: which trials are rerun must not depend on how many there are, or a verdict would."""
    exercise, _ = graph2_refs
    many = compute_references(exercise, make_trials(exercise, 0, 420))
    outputs = {}
    for trial in many.trials:  # a transposed user_grad in float64, a float32 auto_grad off by a factor
        values = dict(many.expected[trial.index])
        values["user_grad"] = values["user_grad"].T.copy()
        values["auto_grad"] = (2 * values["auto_grad"]).astype(np.float32)
        outputs[trial.index] = _output(trial.index, values)
    plan = plan_reruns(exercise, many, Pass(outputs))
    wrong = plan.comparisons["user_grad"]
    beyond = sorted(t for t, c in wrong.items() if c.verdict is Verdict.LOGIC)
    assert len(beyond) > 400
    assert list(plan.request.trials) == [t.index for t in many.trials]  # auto_grad is wrong in each
    if HAS_EXTENDED:
        assert list(plan.request.extended) == beyond  # float64 code: rerun above float64
    else:
        assert plan.request.extended == ()


def test_a_first_pass_that_stopped_asks_for_nothing(graph2_refs: tuple[Exercise, References]) -> None:
    exercise, references = graph2_refs
    stopped = Pass(stopped=Failure(FailureKind.IMPORT, "SyntaxError"))
    plan = plan_reruns(exercise, references, stopped)
    assert plan.request == RerunRequest() and all(not judged for judged in plan.comparisons.values())


def _output(index: int, arrays: Mapping[str, np.ndarray]) -> TrialOutput:
    by_name = {
        name: Returned(ReturnedArray(name=name, ok=True, dtype="float64", source="numpy"), array)
        for name, array in arrays.items()
    }
    return TrialOutput(index, by_name, 0.0)
