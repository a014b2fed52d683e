"""References computed in a fork of a warm zygote: the same as the grader's own, bit for bit; whatever
cannot be computed there is left to the grader (None); the zygote serves hand-ins after it; and a class
run's grader process never imports torch (real CLI, watched from outside with -X importtime)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, exercise_folder, write_source

from grader.exercise.reference import compute_references
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict
from grader.sandbox.warm import WorkerPool
from grader.sandbox.zygote_references import _same_trials, computed_in_zygote

TRIALS = 8
BROKEN = (("id: reciprocal", "id: broken"), ("entry: reciprocal", "entry: broken"), ("1 / a_np", "a_np[9]"))


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    pool = WorkerPool(limit=1)
    yield pool
    pool.close()


@pytest.mark.parametrize("exercise_id", ["graph2", "reciprocal", "cs231n.a2.batchnorm"])
def test_the_zygotes_references_are_the_graders_own(exercise_id: str, pool: WorkerPool) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    trials = make_trials(exercise, 3, TRIALS)
    got = computed_in_zygote(pool, pool.acquire(), exercise, 3, trials)
    assert got is not None
    assert got.trials == tuple(trials)  # the grader's own trials, not the copies that came back
    mine = compute_references(exercise, trials)
    for index, expected in mine.expected.items():
        for name, array in expected.items():
            assert np.array_equal(got.expected[index][name], array, equal_nan=True)
            assert np.array_equal(got.spread[index][name], mine.spread[index][name], equal_nan=True)
    assert len(pool.idle) == 1  # given back, to serve the hand-ins


def test_what_the_sandbox_cannot_compute_is_left_to_the_grader(pool: WorkerPool, tmp_path: Path) -> None:
    """An instructor's reference file is not in the sandbox; a graph that fails on its own inputs is told
    by the grader's own computation, with its message. The zygote serves a hand-in after either."""
    dropout = load_exercise(exercise_folder("cs231n.a2.dropout"))
    assert dropout.spec.reference_file is not None
    assert computed_in_zygote(pool, pool.acquire(), dropout, 0, make_trials(dropout, 0, TRIALS)) is None
    broken = load_exercise(copy_exercise(tmp_path / "broken", BROKEN, source=exercise_folder("reciprocal")))
    assert computed_in_zygote(pool, pool.acquire(), broken, 0, make_trials(broken, 0, TRIALS)) is None
    exercise = load_exercise(exercise_folder("graph2"))
    path = write_source(tmp_path / "hw.py", CORRECT_GRAPH2)
    result = grade(exercise, submission_from_path(path, "graph2"), 0, TRIALS, pool=pool)
    assert all(r.verdict is Verdict.PASS for r in result.returns)


def test_trials_that_came_back_changed_are_refused(graph2: Exercise) -> None:
    trials = make_trials(graph2, 0, 3)
    assert _same_trials(trials, trials)
    changed = dict(trials[1].inputs)
    name = next(iter(changed))
    changed[name] = changed[name] + 1e-12
    assert not _same_trials([trials[0], replace(trials[1], inputs=changed), trials[2]], trials)
    assert not _same_trials([trials[0], replace(trials[1], index=7), trials[2]], trials)
    assert not _same_trials(trials[:2], trials)


def test_a_class_run_never_imports_torch_in_the_graders_process(tmp_path: Path) -> None:
    copy_exercise(tmp_path / "exercises" / "graph2")
    for student in ("s0", "s1"):
        write_source(tmp_path / "submissions" / student / "hw.py", CORRECT_GRAPH2 + f"    # {student}\n")
    command = [sys.executable, "-X", "importtime", "-m", "grader", "run", "exercises"]
    command += ["--trials", str(TRIALS)]
    for run in ("first", "second"):  # references computed in a zygote, then read from the cache
        (tmp_path / "submissions.gradebook.sqlite").unlink(missing_ok=True)
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "2 graded" in done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
        assert "grader.classrun" in imported and "torch" not in imported, f"{run} run imported torch"
