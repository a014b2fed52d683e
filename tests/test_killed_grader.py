"""A hand-in that kills the grader does not sink every rerun (issue 30, part of family 3): the gradebook
records what is in flight; a rerun grades those alone, after the rest of the class, and a hand-in found in
flight a second time is that student's error, not graded again. Simulated from outside: the real
`grader run` SIGKILLed (as the OOM killer would) while a slow hand-in is in flight."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, grader_command, grader_in_background, write_source

TRIALS = 10
CLASS = ("a", "b", "c_killer", "d", "e", "f")
KILLER = "c_killer"
LAYERS = ("bubblewrap", "base")
# Right, but slow enough (10 trials: 5 s) to be in flight when the test kills the grader.
SLOW_GRAPH2 = CORRECT_GRAPH2.replace(
    "    def graph2(W_np, x_np, b_np):\n",
    "    def graph2(W_np, x_np, b_np):\n        __import__('time').sleep(0.5)\n",
)

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")


def _env(layer: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRADER_ISOLATION", None)
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return env


def _class(root: Path) -> tuple[Path, Path]:
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    for student in CLASS:
        write_source(
            root / "submissions" / student / "hw.py", SLOW_GRAPH2 if student == KILLER else CORRECT_GRAPH2
        )
    return exercises, root / "book.sqlite"


def _query(book: Path, sql: str) -> list[tuple[object, ...]]:
    try:
        with sqlite3.connect(book) as db:
            return db.execute(sql).fetchall()
    except sqlite3.Error:  # not created yet, or not yet initialised
        return []


def _in_flight(book: Path) -> dict[str, int]:
    """Who the gradebook says is being graded, and how many stopped runs each was in flight in before."""
    return {str(s): int(str(n)) for s, n in _query(book, "SELECT student, stopped FROM in_flight")}


def _graded(book: Path) -> set[str]:
    return {str(s) for (s,) in _query(book, "SELECT student FROM results")}


def _killed_while(
    exercises: Path, book: Path, layer: str, ready: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`grader run -j 2` SIGKILLed, process group and all, once `ready` (a condition on the gradebook)
    holds: the grader dies as when the OOM killer takes it."""
    conditions = {
        "killer in flight": lambda: KILLER in _in_flight(book),
        "killer alone": lambda: _in_flight(book).get(KILLER) == 1,
    }
    command: list[str | Path] = ["run", exercises, "--trials", str(TRIALS), "-j", "2", "--gradebook", book]
    with monkeypatch.context() as patch:  # the background grader inherits this process's environment
        patch.delenv("GRADER_ISOLATION", raising=False)
        if layer == "base":
            patch.setenv("GRADER_ISOLATION", "base")
        process = grader_in_background(command, book.parent, conditions[ready], timeout=300)
    assert conditions[ready](), f"never {ready}"
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _run(exercises: Path, book: Path, layer: str) -> tuple[int, dict[str, dict[str, object]], str]:
    done = subprocess.run(
        [
            *grader_command(),
            "run",
            str(exercises),
            "--trials",
            str(TRIALS),
            "-j",
            "2",
            "--json",
            "--gradebook",
            str(book),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=book.parent,
        env=_env(layer),
        check=False,
        stdin=subprocess.DEVNULL,
    )
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    return done.returncode, results, done.stderr


@pytest.mark.parametrize("layer", LAYERS)
def test_a_hand_in_that_kills_the_grader_twice_is_an_error_and_the_class_is_graded(
    tmp_path: Path, layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    exercises, book = _class(tmp_path)
    _killed_while(exercises, book, layer, "killer in flight", monkeypatch)
    assert KILLER not in _graded(book)
    beside = set(_in_flight(book))  # the killer, and whoever was in flight beside it (-j 2)
    # The rerun grades the rest of the class first; those in flight when it died alone, one at a time,
    # after them: when the killer kills the grader again, everyone else is in the gradebook but those
    # who were in flight beside it the first time and come after it (graded by the next run).
    _killed_while(exercises, book, layer, "killer alone", monkeypatch)
    assert _graded(book) >= set(CLASS) - beside
    twice = {student for student, stopped in _in_flight(book).items() if stopped == 1}
    assert twice == {KILLER}  # alone: nobody else is in flight a second time
    code, results, stderr = _run(exercises, book, layer)
    assert code == 1, stderr
    assert set(results) == set(CLASS)
    for student in set(CLASS) - {KILLER}:
        assert results[student]["score"] == 10, results[student]
    killer = results[KILLER]
    assert killer["score"] == 0
    error = killer["error"]
    assert isinstance(error, dict) and error["kind"] == "internal"
    assert "grading this hand-in stopped the grader twice" in error["message"]
    assert "it was not graded again" in error["message"]
    assert _in_flight(book) == {}
    # Not retried forever: the next run keeps that result; a new hand-in is graded as any other.
    _, again, stderr = _run(exercises, book, layer)
    assert again[KILLER]["error"] == error
    assert f"0 hand-ins graded, {len(CLASS)} unchanged" in " ".join(stderr.split())
    write_source(exercises.parent / "submissions" / KILLER / "hw.py", CORRECT_GRAPH2)
    code, mended, stderr = _run(exercises, book, layer)
    assert code == 0, stderr
    assert mended[KILLER]["score"] == 10


def test_a_hand_in_in_flight_once_is_graded_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed once while the slow hand-in (and whoever ran beside it) was in flight, then a rerun that is
    not killed: every hand-in graded, the slow one too (once is not enough to blame it: the grader may
    have been killed by hand, or by its neighbour)."""
    exercises, book = _class(tmp_path)
    _killed_while(exercises, book, "bubblewrap", "killer in flight", monkeypatch)
    code, results, stderr = _run(exercises, book, "bubblewrap")
    assert code == 0, stderr
    assert set(results) == set(CLASS) and all(r["score"] == 10 for r in results.values())
    assert _in_flight(book) == {}


def test_a_run_still_alive_beside_this_one_stopped_nothing(tmp_path: Path) -> None:
    """Two `grader run`s on one gradebook at once: what the other has in flight is not a killed run's
    (else a hand-in graded by both would end up blamed for stopping the grader twice); what a run whose
    process is gone left in flight is."""
    from grader.gradebook import Gradebook, Key

    book = Gradebook(tmp_path / "book.sqlite")
    alive = book.start_run("grader run (alive)")
    key = Key("ana", "graph2", "h", "e", "{}")
    book.grading(alive, key, stopped=0)
    here = book.start_run("grader run (here)")
    assert book.stopped(here) == {}
    dead = book.start_run("grader run (killed)")
    book.grading(dead, Key("ben", "graph2", "h", "e", "{}"), stopped=0)
    with sqlite3.connect(tmp_path / "book.sqlite") as db:  # as a run whose process is gone has it
        db.execute("UPDATE runs SET pid = ? WHERE id = ?", (2**22 + 12345, dead))
    assert list(book.stopped(here)) == [("ben", "graph2")]
    book.close()
