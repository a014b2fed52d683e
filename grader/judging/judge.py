"""A submission's result from its worker's report: every return judged, classified, and its mistake named.

Per return: each trial is an error (nothing usable came back), or its first-pass comparison (from the
rerun plan), with the trials beyond rounding decided by their reruns; then one verdict per return
(classify), the mistake behind a logic return (diagnosis), and whether a wrong gradient is at least the
derivative of the student's own wrong value (consistency).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from grader.exercise.spec import Exercise, ReturnSpec
from grader.handin.discover import untagged_hint
from grader.handin.prepare import Submission
from grader.judging import consistency, provenance, shapes
from grader.judging.classify import NOTHING_COMPARED, classify_return
from grader.judging.compare import Compared, Comparison
from grader.judging.naming import diagnosis
from grader.judging.reruns.plan import RerunPlan, expected_of
from grader.judging.reruns.resolve import finite_somewhere, resolve_beyond_rounding
from grader.outcomes import Failure, FailureKind, IsolationUsed, MistakeFamily, Verdict
from grader.results import NotebookUse, ReturnResult, SubmissionResult, display_path
from grader.sandbox.payload import ReturnedArray, ReturnProblem
from grader.sandbox.report import Returned, Returns, WorkerReport

if TYPE_CHECKING:
    from grader.exercise.reference import References


def judge(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    references: References,
    report: WorkerReport,
    plan: RerunPlan,
    only_trial: int | None = None,
    checks: provenance.Checks | None = None,
) -> SubmissionResult:
    """`references` and `report.first`: every trial, as the ordinary worker ran them; `checks`: the autograd
    check, by which the returns to be derived by hand are judged besides (provenance.py)."""
    trials, expected = references.trials, references.expected
    by_index = {t.index: t for t in trials}
    error = report.fatal
    if error is not None and error.kind is FailureKind.MISSING_FUNCTION:
        hint = untagged_hint(submission, exercise.spec.entry)  # the function is there, but not tagged
        error = replace(error, message=f"{error.message}; {hint}") if hint else error
    verdicts: list[tuple[ReturnSpec, ReturnResult, Compared]] = []
    for spec in exercise.spec.returns:
        comparisons, got = _judge_return(exercise, spec, references, report, plan.comparisons[spec.name])
        judged = classify_return(exercise, spec.name, comparisons, by_index, expected, got)
        verdicts.append((spec, _accepted(spec, judged, references, report), comparisons))
    # Named once every return is judged: another year's convention names a return only where the student
    # has none of the others it changes right under the exercise's own.
    right = frozenset(judged.name for _, judged, _ in verdicts if judged.verdict in _RIGHT)
    returns: list[ReturnResult] = []
    for spec, judged, comparisons in verdicts:
        if judged.verdict is Verdict.LOGIC:
            judged = _diagnosed(exercise, references, spec, report, judged, comparisons, right)
        if spec.by_hand and checks is not None:
            judged = provenance.checked(judged, spec, checks)
        returns.append(judged)
    for probe in plan.probes:
        returns = _checked_for_consistency(returns, probe, report)
    failures = report.first.failures
    first_failure = next((failures[t.index] for t in trials if t.index in failures), None)
    if error is None and failures and len(failures) == len(trials):
        error = first_failure
    return SubmissionResult(
        exercise=exercise.id,
        exercise_dir=display_path(exercise.root),
        submission=display_path(submission.path),
        student=submission.name,
        seed=seed,
        trials=len(trials),
        returns=tuple(returns),
        error=error,
        isolation=report.isolation,
        first_trial_error=first_failure,
        stdout=report.stdout,
        stderr=report.stderr,
        seconds=report.seconds,
        only_trial=only_trial,
        import_seconds=report.import_seconds,
        runs_at_import=submission.runs_at_import,
        file_choice=submission.choice,
        notebook=_notebook_use(submission, report),
    )


def not_run(
    exercise: Exercise,
    submission: Submission,
    seed: int,
    trials: int,
    failure: Failure,
    isolation: IsolationUsed,
) -> SubmissionResult:
    """What `judge` makes of a hand-in stopped by `failure` before its first trial (no file attempts the
    exercise, or the hand-in cannot be used), built without references and without walking the trials:
    every return errs on all of them, and none has a failing case, since nothing ran to show.

    A class's library holds exercises nobody hands in: their results cost nothing this way.
    """
    problem = not_run_text(failure)
    returns = tuple(
        ReturnResult(
            name=spec.name,
            verdict=Verdict.ERROR,
            trials=trials,
            failed_trials=trials,
            message=problem,
            points=exercise.points(spec.name),
            score=0.0,
            precision=NOTHING_COMPARED,
            max_ratio=0.0,
        )
        for spec in exercise.spec.returns
    )
    return SubmissionResult(
        exercise=exercise.id,
        exercise_dir=display_path(exercise.root),
        submission=display_path(submission.path),
        student=submission.name,
        seed=seed,
        trials=trials,
        returns=returns,
        error=failure,
        isolation=isolation,
        runs_at_import=submission.runs_at_import,
        file_choice=submission.choice,
    )


def not_run_text(fatal: Failure) -> str:
    """Why a trial was never called: what stopped the whole submission first."""
    return f"not run: {fatal.kind} ({fatal.message})"


def _notebook_use(submission: Submission, report: WorkerReport) -> NotebookUse | None:
    if not submission.has_notebook:
        return None
    selection = submission.notebook
    return NotebookUse(
        cells=selection.cells,
        tag=selection.tag if selection.cells == "tagged" else "",
        left_out=submission.left_out,
        refused=submission.refused,
        skipped_imports=report.skipped_imports,
        failed_cells=report.failed_cells,
    )


def _judge_return(
    exercise: Exercise, spec: ReturnSpec, references: References, report: WorkerReport, compared: Compared
) -> tuple[Compared, Mapping[int, np.ndarray]]:
    """Every trial of one return judged; the arrays compared, by trial."""
    first, fatal = report.first, report.fatal
    arrays = first.returned(spec.name)
    judged = dict(compared.others)
    if len(arrays) < len(references.trials):  # some trial returned no array for it: each one says why
        for trial in references.trials:
            if trial.index in arrays:
                continue
            output = first.outputs.get(trial.index)
            if output is None:
                failure = first.failures.get(trial.index)
                if failure is not None:
                    problem, brief = _failure_text(failure), _failure_brief(failure)
                    judged[trial.index] = Comparison(trial.index, Verdict.ERROR, problem=problem, brief=brief)
                else:
                    problem = not_run_text(fatal) if fatal is not None else "no result"
                    judged[trial.index] = Comparison(trial.index, Verdict.ERROR, problem=problem, ran=False)
                continue
            item = output.by_name[spec.name]
            if isinstance(item, ReturnProblem):
                judged[trial.index] = Comparison(
                    trial.index, Verdict.ERROR, problem=f"{spec.name} {item.problem}"
                )
    got = _Arrays(arrays, references.expected, spec.name)
    judged.update(resolve_beyond_rounding(exercise, spec, references, report, compared, got))
    return finite_somewhere(compared.with_others(judged)), got


class _Arrays(Mapping[int, np.ndarray]):
    """The arrays of a return by trial, in the expected shape where the shape rule grades them so
    (shapes.py): looked up for the few trials that fail, not copied out for all."""

    def __init__(
        self, returned: Mapping[int, Returned], expected: Mapping[int, Mapping[str, np.ndarray]], name: str
    ) -> None:
        self._returned, self._expected, self._name = returned, expected, name

    def __getitem__(self, trial: int) -> np.ndarray:
        array = self._returned[trial].array
        due = self._expected[trial][self._name].shape
        return array.reshape(due) if array.shape != due and shapes.fits(due, array.shape) else array

    def __iter__(self) -> Iterator[int]:
        return iter(self._returned)

    def __len__(self) -> int:
        return len(self._returned)


def _accepted(
    spec: ReturnSpec, judged: ReturnResult, references: References, report: WorkerReport
) -> ReturnResult:
    """A return taken in another form than the array due (another shape the shape rule grades, a list, a
    tuple, a Python number where an array is due) is graded as the array it describes; the message says
    which, on the first trial that shows it, so the student knows what the exercise asks for."""
    arrays = report.first.returned(spec.name)
    expected = references.expected
    # Looked for only where they can be: another shape (compared without a Returned per trial, and as
    # whole columns where the pass's are those due), a Python value.
    joined = arrays.joined()
    due_rows = expected_of(references, spec.name, arrays.trials)[2].shape_rows if joined is not None else None
    reshaped = (
        None
        if joined is not None and due_rows is not None and np.array_equal(joined[1], due_rows)
        else next(
            (
                trial
                for trial, array in zip(arrays.trials, arrays.arrays, strict=True)
                if array.shape != (due := expected[trial][spec.name].shape) and shapes.fits(due, array.shape)
            ),
            None,
        )
    )
    loose = {reshaped: arrays[reshaped]} if reshaped is not None else {}
    python = (
        {i: item for i, item in arrays.items() if item.python is not None}
        if any(d.python is not None for d in _descriptions(arrays))
        else {}
    )
    for note, items in ((_loose_shape_note, loose), (_array_like_note, python)):
        for index, item in items.items():
            text = note(spec, item, references.expected[index][spec.name])
            if text is not None:
                judged = replace(judged, message=f"{judged.message}; {text}")
                break
    return judged


def _descriptions(arrays: Returns) -> list[ReturnedArray]:
    """The distinct descriptions among a return's arrays: a frame's trials share theirs, so a thousand
    trials have a few, found without a Python loop over them."""
    described = arrays.descriptions
    return list(dict(zip(map(id, described), described, strict=True)).values())


def _loose_shape_note(spec: ReturnSpec, item: Returned, due: np.ndarray) -> str | None:
    return shapes.note(due.shape, item.array.shape)


def _array_like_note(spec: ReturnSpec, item: Returned, due: np.ndarray) -> str | None:
    kind = item.python
    if kind is None:
        return None  # a numpy array or scalar, a torch tensor
    if kind in ("float", "int", "bool") and due.ndim == 0:
        return None  # a number where a number is due
    return f"returned a {kind}; graded as the array it describes"


# Right under the exercise's own convention: the maths is right, whatever the rounding.
_RIGHT = frozenset({Verdict.PASS, Verdict.PRECISION, Verdict.INSTABILITY})


def _diagnosed(
    exercise: Exercise,
    references: References,
    spec: ReturnSpec,
    report: WorkerReport,
    judged: ReturnResult,
    comparisons: Compared,
    right: frozenset[str],
) -> ReturnResult:
    arrays = report.first.returned(spec.name)
    found = diagnosis.diagnose(exercise, references, spec, arrays, comparisons.others, right)
    declared = exercise.spec.conventions or any(m.return_ == spec.name for m in exercise.spec.misconceptions)
    if declared:  # how far each declared mistake was: validate says
        judged = replace(judged, near_misses=diagnosis.near_misses(exercise, references, spec, arrays))
    if found is None:
        return judged
    return replace(judged, misconception=found.name, mistake_family=found.family, feedback=found.feedback)


def _checked_for_consistency(
    returns: list[ReturnResult], probe: consistency.ConsistencyProbe, report: WorkerReport
) -> list[ReturnResult]:
    """A wrong gradient that is the derivative of the student's own, wrong, value is named so: the
    forward computation is what to fix first."""
    by_name = {r.name: r for r in returns}
    value, gradient = probe.pair.value.name, probe.pair.gradient.name
    output = report.first.outputs.get(probe.trial)
    if output is None or by_name[value].verdict is not Verdict.LOGIC:
        return returns
    item = output.by_name[gradient]
    reruns = report.reruns.outputs
    values = {
        index: found.array
        for index in (probe.plus.index, probe.minus.index)
        if index in reruns and isinstance(found := reruns[index].by_name[value], Returned)
    }
    if not isinstance(item, Returned) or consistency.consistent(probe, item.array, values) is not True:
        return returns
    judged = by_name[gradient]
    why = (
        f"finite differences of the {value} you return agree with your {gradient}: it is the right "
        f"derivative of the function you computed, but that function is not the exercise's. Fix the "
        f"computation of {value} first."
    )
    if judged.mistake_family is MistakeFamily.CONVENTION:
        return returns  # right for the function computed, another year's: the convention's name says it all
    if judged.misconception is None:
        name = f"the derivative of your own {value}, which is wrong"
        judged = replace(judged, misconception=name, mistake_family=MistakeFamily.OWN_VALUE, feedback=why)
    else:  # the name says how it is wrong; this says where the mistake is
        told = judged.feedback.rstrip(". ")
        judged = replace(judged, feedback=f"{told}. Also, {why}" if told else why)
    return [judged if r.name == gradient else r for r in returns]


def _failure_text(failure: Failure) -> str:
    where = failure.where
    return f"{failure.message} ({where})" if where else failure.message


def _failure_brief(failure: Failure) -> str:
    """`_failure_text` with a message of several lines (torch's: a summary, then hints and an operator's
    whole signature) cut to its first; "" for a message of one line."""
    if "\n" not in failure.message:
        return ""
    return _failure_text(replace(failure, message=failure.message.splitlines()[0] + " …"))
