"""A class's references: computed once, by the first grading that needs them, after its worker was given
the trials (so the warm workers run while the grader imports torch and computes them); a failure is every
grading's, and the class run reports the exercise and grades the others."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, exercise_folder, write_source

from grader.classrun import ClassRun, plan
from grader.errors import GraderError
from grader.exercise import reference_cache, shared
from grader.exercise.expected import References
from grader.exercise.reference import compute_references
from grader.exercise.settings import CACHE_ENV, ReferenceCache, Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import Trial, make_trials
from grader.gradebook import Gradebook
from grader.outcomes import Verdict

TRIALS = 6
# The graph indexes past its input's end on every trial: the references fail, as an author's mistake would.
BROKEN = (("id: reciprocal", "id: broken"), ("entry: reciprocal", "entry: broken"), ("1 / a_np", "a_np[9]"))


def test_concurrent_gradings_compute_the_references_once(
    graph2: Exercise, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def slowly(_: ReferenceCache, exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        calls.append(seed)
        time.sleep(0.3)  # the others ask meanwhile
        return compute_references(exercise, trials)

    monkeypatch.setattr(shared, "computed_references", slowly)
    references = SharedReferences(graph2, Settings(4), make_trials(graph2, 4, TRIALS))
    assert not references.ready
    with ThreadPoolExecutor(max_workers=4) as threads:
        got = list(threads.map(lambda _: references.get(), range(4)))
    assert calls == [4] and all(g is got[0] for g in got) and references.ready
    assert [t.index for t in got[0].trials] == list(range(TRIALS))


def test_a_failure_is_raised_to_every_grading_and_computed_once(
    graph2: Exercise, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(_: ReferenceCache, exercise: Exercise, seed: int, trials: Sequence[Trial]) -> References:
        calls.append(seed)
        raise GraderError(f"{exercise.id}: its graph fails on its own inputs")

    monkeypatch.setattr(shared, "computed_references", failing)
    references = SharedReferences(graph2, Settings(0), make_trials(graph2, 0, TRIALS))
    for _ in range(3):
        with pytest.raises(GraderError, match="fails on its own inputs"):
            references.get()
    assert len(calls) == 1 and not references.ready
    assert isinstance(references.failure, GraderError)


def _class(root: Path, students: int) -> list[tuple[str, Path]]:
    for i in range(students):
        write_source(root / f"s{i}" / "hw.py", CORRECT_GRAPH2 + f"    # s{i}\n")
    return [(f"s{i}", root / f"s{i}") for i in range(students)]


def test_a_class_run_computes_the_references_in_a_zygote_and_keeps_them(
    graph2: Exercise, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in the grader's process (which would import torch for them), and exactly what it would
    compute: the cache holds them for the next run."""
    here: list[str] = []

    def in_this_process(
        cache: ReferenceCache, exercise: Exercise, seed: int, trials: Sequence[Trial]
    ) -> References:
        here.append(exercise.id)
        return reference_cache.computed_references(cache, exercise, seed, trials)

    monkeypatch.setattr(shared, "computed_references", in_this_process)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))  # as on a class's first run
    settings = Settings(0, TRIALS)
    tasks = plan([graph2], _class(tmp_path / "submissions", 3), settings)
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, 2)
    assert here == []
    assert [r.student for r in outcome.results] == ["s0", "s1", "s2"]
    assert all(r.verdict is Verdict.PASS for result in outcome.results for r in result.returns)
    kept = reference_cache.stored_references(ReferenceCache.from_environment(), graph2, 0, TRIALS)
    assert kept is not None
    computed = compute_references(graph2, make_trials(graph2, 0, TRIALS))
    for index, expected in computed.expected.items():
        for name, array in expected.items():
            assert np.array_equal(kept.expected[index][name], array)
            assert np.array_equal(kept.spread[index][name], computed.spread[index][name])


def test_a_class_run_reports_an_exercise_whose_references_fail_once_and_grades_the_rest(
    graph2: Exercise, tmp_path: Path
) -> None:
    """Its graph fails on its own inputs (in the zygote, and again here, which says why): reported once,
    nothing of it recorded, and graph2 graded for the same students."""
    broken = load_exercise(copy_exercise(tmp_path / "broken", BROKEN, source=exercise_folder("reciprocal")))
    students = _class(tmp_path / "submissions", 3)
    for name, folder in students:
        write_source(folder / "more.py", f"def broken(a_np):\n    return 1  # {name}\n")
    settings = Settings(0, TRIALS)
    tasks = plan([broken, graph2], students, settings)
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, 2)
    assert [(r.student, r.exercise) for r in outcome.results] == [(s, "graph2") for s, _ in students]
    assert len(outcome.broken) == 1 and "broken" in str(outcome.broken[0])
    book = Gradebook(tmp_path / "book.sqlite")
    assert all(book.stored(task.key) is None for task in tasks if task.exercise is broken)
    assert [task.exercise.id for task in tasks if book.stored(task.key) is not None] == ["graph2"] * 3
    book.close()
