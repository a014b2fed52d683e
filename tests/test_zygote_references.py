"""References computed in a fork of a warm zygote: the same as the grader's own, bit for bit, an
instructor's reference file included (sent as text: the sandbox cannot read it); several exercises in one
fork; whatever cannot be computed there is left to the grader (None); the zygote serves hand-ins after it;
and neither a class run's grader process nor a cold `grader check`'s ever imports torch (real CLI, watched
from outside with -X importtime)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, exercise_folder, write_source

from grader.exercise.expected import DeferredSpreads, References
from grader.exercise.reference import compute_references
from grader.exercise.reference_cache import lookup
from grader.exercise.settings import CACHE_ENV, ReferenceCache, Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import Trial, make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict
from grader.sandbox.warm import WorkerPool, Zygote
from grader.sandbox.zygote_references import (
    _same_trials,
    computed_all_in_zygote,
    computed_in_zygote,
    read_answer,
)

TRIALS = 8
BROKEN = (("id: reciprocal", "id: broken"), ("entry: reciprocal", "entry: broken"), ("1 / a_np", "a_np[9]"))


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    pool = WorkerPool(limit=1)
    yield pool
    pool.close()


def _assert_the_graders_own(
    got: References | None, exercise: Exercise, trials: list[Trial], stored: bool = False
) -> None:
    assert got is not None, exercise.id
    if stored:  # read back from the cache: copies, the same value for value
        assert _same_trials(got.trials, trials)
    else:
        assert got.trials == tuple(trials)  # the grader's own trials, not the copies that came back
    mine = compute_references(exercise, trials)
    for index, expected in mine.expected.items():
        for name, array in expected.items():
            assert np.array_equal(got.expected[index][name], array, equal_nan=True)
            assert np.array_equal(got.spread[index][name], mine.spread[index][name], equal_nan=True)


# cs231n.a2.dropout: an instructor's reference.py, which the fork runs from the text the grader sent.
@pytest.mark.parametrize("exercise_id", ["graph2", "reciprocal", "cs231n.a2.batchnorm", "cs231n.a2.dropout"])
def test_the_zygotes_references_are_the_graders_own(
    exercise_id: str, pool: WorkerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    exercise = load_exercise(exercise_folder(exercise_id))
    trials = make_trials(exercise, 3, TRIALS)
    _assert_the_graders_own(
        computed_in_zygote(pool, pool.acquire(), ReferenceCache.from_environment(), exercise, 3, trials),
        exercise,
        trials,
    )
    assert len(pool.idle) == 1  # given back, to serve the hand-ins
    # Stored as the fork's bytes came, and read back as any cache file: the same references again.
    _assert_the_graders_own(
        lookup(ReferenceCache.from_environment(), exercise, 3, TRIALS), exercise, trials, stored=True
    )


def test_several_exercises_in_one_fork_each_the_graders_own(pool: WorkerPool, tmp_path: Path) -> None:
    """Two processes take the exercises in turns; one that fails there is the grader's to compute (None),
    the others come back all the same, each in its place."""
    names = ["graph2", "cs231n.a3.rnn", "cs231n.a2.conv_naive", "reciprocal"]
    exercises = [load_exercise(exercise_folder(name)) for name in names]
    exercises.insert(
        2, load_exercise(copy_exercise(tmp_path / "broken", BROKEN, source=exercise_folder("reciprocal")))
    )
    asked = [(exercise, 5, make_trials(exercise, 5, TRIALS)) for exercise in exercises]
    got = computed_all_in_zygote(pool, pool.acquire(), ReferenceCache.from_environment(), asked)
    assert got[2] is None
    for (exercise, _, trials), references in zip(asked, got, strict=True):
        if exercise.id != "broken":
            _assert_the_graders_own(references, exercise, trials)
    assert len(pool.idle) == 1


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        ((3).to_bytes(8, "little") + b"abc", b"abc"),
        ((0).to_bytes(8, "little"), b""),
        ((3).to_bytes(8, "little") + b"ab", None),  # the fork ended before its whole answer
        ((5).to_bytes(4, "little"), None),  # or within its length
        ((1 << 40).to_bytes(8, "little") + b"abc", None),  # beyond any answer's length
    ],
)
def test_an_answer_cut_wrong_is_refused(sent: bytes, read: bytes | None) -> None:
    """The fork's answer is its length and its bytes, exactly: anything else is nothing."""
    reading, writing = os.pipe()
    try:
        os.write(writing, sent)
        os.close(writing)
        assert read_answer(reading, time.monotonic() + 5) == read
    finally:
        os.close(reading)


def test_an_answer_that_never_comes_is_nothing() -> None:
    reading, writing = os.pipe()
    try:
        os.write(writing, (3).to_bytes(8, "little") + b"a")
        assert read_answer(reading, time.monotonic() + 0.2) is None
    finally:
        os.close(reading)
        os.close(writing)


def test_what_the_sandbox_cannot_compute_is_left_to_the_grader(pool: WorkerPool, tmp_path: Path) -> None:
    """A graph that fails on its own inputs is told by the grader's own computation, with its message; so
    is an instructor's reference file that reads a file beside it (not in the sandbox). The zygote serves a
    hand-in after either."""
    folder = copy_exercise(tmp_path / "dropout", source=exercise_folder("cs231n.a2.dropout"))
    (folder / "scale.txt").write_text("1.0\n", encoding="utf-8")
    reference = folder / "reference.py"
    reads = "import pathlib\nSCALE = float(pathlib.Path(__file__).with_name('scale.txt').read_text())\n"
    reference.write_text(reads + reference.read_text(encoding="utf-8"), encoding="utf-8")
    beside = load_exercise(folder)
    trials = make_trials(beside, 0, TRIALS)
    assert compute_references(beside, trials).trials == tuple(trials)  # the grader's own process reads it
    assert (
        computed_in_zygote(pool, pool.acquire(), ReferenceCache.from_environment(), beside, 0, trials) is None
    )
    broken = load_exercise(copy_exercise(tmp_path / "broken", BROKEN, source=exercise_folder("reciprocal")))
    assert (
        computed_in_zygote(
            pool, pool.acquire(), ReferenceCache.from_environment(), broken, 0, make_trials(broken, 0, TRIALS)
        )
        is None
    )
    exercise = load_exercise(exercise_folder("graph2"))
    path = write_source(tmp_path / "hw.py", CORRECT_GRAPH2)
    result = grade(exercise, submission_from_path(path, "graph2"), Settings(0, TRIALS), pool=pool)
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
        assert "2 hand-ins graded" in done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
        assert "grader.classrun" in imported and "torch" not in imported, f"{run} run imported torch"


@pytest.mark.parametrize("library", [True, False], ids=["folder", "one exercise"])
def test_a_cold_check_never_imports_torch_in_the_graders_process(tmp_path: Path, library: bool) -> None:
    """`grader check` of a whole file (a folder of exercises, one with an instructor's reference file) or
    of one exercise, with an empty cache: every reference computed in a fork of the zygote that then serves
    the hand-in; the grader's own process imports no torch, and grades all the same."""
    exercises = tmp_path / "exercises"
    copy_exercise(exercises / "graph2")
    copy_exercise(exercises / "dropout", source=exercise_folder("cs231n.a2.dropout"))
    dropout = (exercise_folder("cs231n.a2.dropout") / "solution.py").read_text(encoding="utf-8")
    handed = write_source(tmp_path / "layers.py", CORRECT_GRAPH2)
    handed.write_text(handed.read_text(encoding="utf-8") + "\n\n" + dropout, encoding="utf-8")
    target = exercises if library else exercises / "dropout"
    command = [sys.executable, "-X", "importtime", "-m", "grader", "check", str(target), str(handed)]
    command += ["--trials", str(TRIALS)]
    environment = {**os.environ, "GRADER_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=environment, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "grader.grading" in imported and "torch" not in imported
    assert len(list((tmp_path / "cache").glob("*.npz"))) == (2 if library else 1)  # stored for the next


def test_deferred_spreads_come_from_the_fork_that_computed_the_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold check's references: the expected values alone, then the spreads judging asks for, computed
    by the same fork (kept for it, an instructor's reference file included), the whole pass's bit for bit;
    the pool gives its zygote back when it closes, and what is asked after that is computed elsewhere."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    pool = WorkerPool()
    names = ["graph2", "cs231n.a2.dropout", "cs231n.a3.rnn"]
    exercises = [load_exercise(exercise_folder(name)) for name in names]
    asked = [(exercise, 4, make_trials(exercise, 4, TRIALS)) for exercise in exercises]
    try:
        got = computed_all_in_zygote(
            pool, pool.acquire(references=True), ReferenceCache.from_environment(), asked, deferred=True
        )
        assert not pool.idle  # its zygote held by the fork that serves the spreads
        for (exercise, _, trials), references in zip(asked, got, strict=True):
            assert references is not None and isinstance(references.spread, DeferredSpreads)
            assert not references.spread.known()
            whole = compute_references(exercise, trials)
            references.spread.fill([1, 6])
            assert sorted(references.spread.known()) == [1, 6]
            for t in (1, 6):
                for name, spread in whole.spread[t].items():
                    assert np.array_equal(references.spread[t][name], spread, equal_nan=True)
    finally:
        pool.close()
    last = got[-1]
    assert last is not None
    whole = compute_references(exercises[-1], asked[-1][2])
    for name, spread in whole.spread[3].items():  # the server closed: another fork computes it
        assert np.array_equal(last.spread[3][name], spread, equal_nan=True)
    assert not pool.idle


@dataclass
class _Idle:
    """What the pool's choice reads of an idle zygote."""

    references: bool
    torch_loaded: bool


def test_a_references_zygote_serves_references_jobs_only() -> None:
    """The zygote a cold check's references take (torch and the references' code imported at its start) is
    never given to a hand-in's worker; a torch-free hand-in's worker takes an idle zygote without torch
    where there is one, else any."""
    pool = WorkerPool()
    serving, torch, plain = (
        cast(Zygote, _Idle(*kind)) for kind in ((True, True), (False, True), (False, False))
    )
    pool._idle.extend([plain, serving, torch])
    assert pool.acquire(torch=False) is plain
    assert pool.acquire(references=True) is serving
    assert pool.acquire(torch=False) is torch  # no torch-free one left: any that is not a references one
    pool._idle.extend([serving, plain])
    assert pool.acquire() is plain
    assert pool.idle == (serving,)
    pool._idle.clear()
