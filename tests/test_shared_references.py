"""A class's references: computed once, by the first grading that needs them, after its worker was given
the trials (so the warm workers run while the grader imports torch and computes them); a failure is every
grading's, and the class run reports the exercise and grades the others."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, write_source

from grader.classrun import plan, run_class
from grader.errors import GraderError
from grader.exercise import reference_cache, shared
from grader.exercise.expected import References
from grader.exercise.reference import compute_references
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial, make_trials
from grader.gradebook import Gradebook
from grader.outcomes import Verdict
from grader.sandbox.runner import RunningWorker

TRIALS = 6


def test_concurrent_gradings_compute_the_references_once(
    graph2: Exercise, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def slowly(exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        calls.append(seed)
        time.sleep(0.3)  # the others ask meanwhile
        return compute_references(exercise, trials)

    monkeypatch.setattr(shared, "computed_references", slowly)
    references = SharedReferences(graph2, 4, make_trials(graph2, 4, TRIALS))
    assert not references.ready
    with ThreadPoolExecutor(max_workers=4) as threads:
        got = list(threads.map(lambda _: references.get(), range(4)))
    assert calls == [4] and all(g is got[0] for g in got) and references.ready
    assert [t.index for t in got[0].trials] == list(range(TRIALS))


def test_a_failure_is_raised_to_every_grading_and_computed_once(
    graph2: Exercise, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        calls.append(seed)
        raise GraderError(f"{exercise.id}: its graph fails on its own inputs")

    monkeypatch.setattr(shared, "computed_references", failing)
    references = SharedReferences(graph2, 0, make_trials(graph2, 0, TRIALS))
    for _ in range(3):
        with pytest.raises(GraderError, match="fails on its own inputs"):
            references.get()
    assert len(calls) == 1 and not references.ready
    assert isinstance(references.failure, GraderError)


def _class(root: Path, students: int) -> list[tuple[str, Path]]:
    for i in range(students):
        write_source(root / f"s{i}" / "hw.py", CORRECT_GRAPH2 + f"    # s{i}\n")
    return [(f"s{i}", root / f"s{i}") for i in range(students)]


def test_a_class_run_gives_its_first_worker_the_trials_before_computing_the_references(
    graph2: Exercise, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the grader does first, in order: the workers' jobs, then the references (torch's import and
    the Monte Carlo spread, seconds that the warm workers used to wait out)."""
    events: list[str] = []
    lock = threading.Lock()
    real_send, real_compute = RunningWorker.send, reference_cache.computed_references

    def send(self: RunningWorker, trials: Sequence[Trial]) -> None:
        with lock:
            events.append("send")
        real_send(self, trials)

    def compute(exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        with lock:
            events.append("compute")
        return real_compute(exercise, seed, trials)

    monkeypatch.setattr(RunningWorker, "send", send)
    monkeypatch.setattr(shared, "computed_references", compute)
    monkeypatch.setattr("grader.classrun.stored_references", lambda *_: None)  # as on a class's first run
    jobs = plan([graph2], _class(tmp_path / "submissions", 3), 0, TRIALS)
    book = Gradebook(tmp_path / "book.sqlite")
    outcome = run_class(jobs, book, book.start_run("test"), 0, TRIALS, 2)
    book.close()
    assert events[0] == "send" and events.count("compute") == 1 and events.count("send") == 3, events
    assert [r.student for r in outcome.results] == ["s0", "s1", "s2"]
    assert all(r.verdict is Verdict.PASS for result in outcome.results for r in result.returns)


def test_a_class_run_reports_an_exercise_whose_references_fail_once_and_grades_the_rest(
    graph2: Exercise, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        raise GraderError(f"{exercise.id}: its graph fails on its own inputs")

    monkeypatch.setattr(shared, "computed_references", failing)
    monkeypatch.setattr("grader.classrun.stored_references", lambda *_: None)
    jobs = plan([graph2], _class(tmp_path / "submissions", 3), 0, TRIALS)
    book = Gradebook(tmp_path / "book.sqlite")
    outcome = run_class(jobs, book, book.start_run("test"), 0, TRIALS, 2)
    assert outcome.results == [] and outcome.graded == 0
    assert [str(e) for e in outcome.broken] == ["graph2: its graph fails on its own inputs"]
    assert all(book.stored(job.key) is None for job in jobs)  # nothing recorded: graded once it is fixed
    book.close()
