"""A class run's jobs, one per student, seen from a backend that grades nothing (results made at once):
what each job holds, in which order jobs come, and what the gradebook keeps of each task's end. The real
backends are tested end to end in test_classrun.py, test_killed_grader.py and test_cluster.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, exercise_folder, write_source

from grader.classrun import ClassRun, plan
from grader.exercise.settings import Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise, load_exercise
from grader.gradebook import Gradebook
from grader.grading import not_started
from grader.jobs import Job, Task, TaskResult, Unfinished
from grader.outcomes import FailureKind

TRIALS = 3
RECIPROCAL = "def reciprocal(a_np):\n    return 1 / a_np\n"


class _Instant:
    """Grades nothing: each task's result made at once (or Unfinished for the tasks named in `fail`), the
    jobs it was handed kept in order."""

    slots = 2

    def __init__(self, fail: frozenset[tuple[str, str]] = frozenset()) -> None:
        self.jobs: list[tuple[str, list[str]]] = []
        self.fail = fail

    def prestart(self, count: int) -> None:
        pass

    def share(self, references: SharedReferences) -> None:
        pass

    def submit(
        self, job: Job, settings: Settings, references: Mapping[str, SharedReferences]
    ) -> Future[tuple[TaskResult, ...]]:
        assert set(references) == {task.exercise.id for task in job.tasks}
        self.jobs.append((job.student, [task.exercise.id for task in job.tasks]))
        for shared in references.values():
            shared.get()  # as a real grading does: what waits on them (who handed in nothing) goes ahead
        future: Future[tuple[TaskResult, ...]] = Future()
        future.set_result(tuple(self._end(task, settings) for task in job.tasks))
        return future

    def _end(self, task: Task, settings: Settings) -> TaskResult:
        if (task.student, task.exercise.id) in self.fail:
            return Unfinished("the grader failed on this submission (not the student's fault): boom")
        message = f"graded {task.student} on {task.exercise.id}"
        return not_started(task.exercise, task.student, task.path, settings, message)

    def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def exercises(graph2: Exercise) -> list[Exercise]:
    return [graph2, load_exercise(exercise_folder("reciprocal"))]


def _class(root: Path) -> list[tuple[str, Path]]:
    """ana hands in both exercises, in two files; ben graph2 only; cid nothing."""
    write_source(root / "ana" / "graph2.py", CORRECT_GRAPH2)
    write_source(root / "ana" / "reciprocal.py", RECIPROCAL)
    write_source(root / "ben" / "hw.py", CORRECT_GRAPH2)
    write_source(root / "cid" / "notes.py", "x = 1\n")
    return [(name, root / name) for name in ("ana", "ben", "cid")]


def test_a_job_is_a_students_hand_in_with_the_exercises_it_attempts_in_order(
    exercises: list[Exercise], tmp_path: Path
) -> None:
    settings = Settings(0, TRIALS)
    tasks = plan(exercises, _class(tmp_path / "class"), settings)
    backend = _Instant()
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, backend=backend)
    assert backend.jobs == [("ana", ["graph2", "reciprocal"]), ("ben", ["graph2"])]  # cid: nothing to run
    # One result per (student, exercise), by student then exercise, whatever the jobs' order.
    assert [(r.student, r.exercise) for r in outcome.results] == [
        (s, e) for s in ("ana", "ben", "cid") for e in ("graph2", "reciprocal")
    ]
    assert (outcome.graded, outcome.reused, outcome.interrupted, outcome.broken) == (6, 0, False, ())
    book = Gradebook(tmp_path / "book.sqlite")
    assert all(book.stored(task.key) is not None for task in tasks)
    book.close()
    # Run again: everything from the gradebook, no job.
    again = _Instant()
    with ClassRun(tmp_path / "book.sqlite", "again", settings) as run:
        second = run.grade(tasks, backend=again)
    assert again.jobs == [] and (second.graded, second.reused) == (0, 6)
    assert second.results == outcome.results


def test_a_task_the_grader_fails_on_is_reported_alone_and_graded_again_next_run(
    exercises: list[Exercise], tmp_path: Path
) -> None:
    settings = Settings(0, TRIALS)
    tasks = plan(exercises, _class(tmp_path / "class"), settings)
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, backend=_Instant(fail=frozenset({("ana", "reciprocal")})))
    by_task = {(r.student, r.exercise): r for r in outcome.results}
    failure = by_task["ana", "reciprocal"].error
    assert failure is not None and failure.kind is FailureKind.INTERNAL and "boom" in failure.message
    assert by_task["ana", "graph2"].error is not None  # the job's other task: its own result, kept
    assert "graded ana on graph2" in by_task["ana", "graph2"].error.message
    book = Gradebook(tmp_path / "book.sqlite")
    kept = {(t.student, t.exercise.id) for t in tasks if book.stored(t.key) is not None}
    assert ("ana", "reciprocal") not in kept and ("ana", "graph2") in kept
    assert book.stopped(book.start_run("next")) == {}  # not in flight: the run finished
    book.close()
    backend = _Instant()
    with ClassRun(tmp_path / "book.sqlite", "again", settings) as run:
        run.grade(tasks, backend=backend)
    assert backend.jobs == [("ana", ["reciprocal"])]


def test_a_task_in_flight_when_a_run_died_is_graded_alone_after_every_other_job(
    exercises: list[Exercise], tmp_path: Path
) -> None:
    settings = Settings(0, TRIALS)
    tasks = plan(exercises, _class(tmp_path / "class"), settings)
    book = Gradebook(tmp_path / "book.sqlite")
    dead = book.start_run("grader run (killed)")
    suspect = next(t for t in tasks if (t.student, t.exercise.id) == ("ana", "graph2"))
    book.grading(dead, suspect.key, stopped=0)
    book.close()
    with sqlite3.connect(tmp_path / "book.sqlite") as db:  # as a run whose process is gone has it
        db.execute("UPDATE runs SET pid = ? WHERE id = ?", (2**22 + 12345, dead))
    backend = _Instant()
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, backend=backend)
    assert backend.jobs == [("ana", ["reciprocal"]), ("ben", ["graph2"]), ("ana", ["graph2"])]
    assert len(outcome.results) == 6
    with sqlite3.connect(tmp_path / "book.sqlite") as db:
        assert db.execute("SELECT * FROM in_flight").fetchall() == []  # graded: nothing left to blame
