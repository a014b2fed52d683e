"""The `grader` command's first step: how many sandboxes it starts before its own imports."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from grader.gradebook import SUFFIX, default_path
from grader.handin.discover import SUFFIXES
from grader.launch import GRADEBOOK_SUFFIX, HANDIN_SUFFIXES, zygotes_to_start


@pytest.fixture
def course(tmp_path: Path) -> Path:
    (tmp_path / "exercises").mkdir()
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    (tmp_path / "submissions" / "bob").mkdir()
    return tmp_path


def test_a_check_needs_one() -> None:
    assert zygotes_to_start(["check", "exercises/mac0460/graph2", "mine.py"]) == 1
    assert zygotes_to_start(["repro", "graph2", "mine.py", "--trial", "3"]) == 1


def test_a_class_run_needs_its_jobs_once_someone_handed_something_in(course: Path) -> None:
    exercises = str(course / "exercises")
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 0  # every student's folder is empty
    (course / "submissions" / "alice" / "notes.txt").write_text("", encoding="utf-8")
    (course / "submissions" / "README.md").write_text("", encoding="utf-8")
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 0  # nothing a hand-in is made of
    (course / "submissions" / "dave" / "src").mkdir(parents=True)  # files in a folder of their own
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 1
    (course / "submissions" / "dave" / "src").rmdir()
    (course / "submissions" / "bob" / "graph2.py").write_text("", encoding="utf-8")
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 1  # no more than students handing in
    (course / "submissions" / "alice" / "graph2.ipynb").write_text("", encoding="utf-8")
    for student in ("carol", "dave", "erin"):
        (course / "submissions" / f"{student}.py").write_text("", encoding="utf-8")
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 2
    assert zygotes_to_start(["run", "--seed", "3", exercises, "--jobs=3", "--json"]) == 3
    assert zygotes_to_start(["run", exercises, "-j4", "--out", "out", "--per-return"]) == 4
    assert zygotes_to_start(["run", exercises, "-j", "64"]) == 5


def test_a_class_folder_given_or_beside_the_exercises(course: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "carol.py").write_text("", encoding="utf-8")  # a student handing in a single file
    exercises = str(course / "exercises")
    assert zygotes_to_start(["run", exercises, "-j", "2", "--submissions", str(elsewhere)]) == 1
    assert zygotes_to_start(["run", exercises, "-j", "2", "--submissions", str(tmp_path / "none")]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "EXERCISES", "--cluster", "tcp://127.0.0.1:8786"],  # the cluster's workers grade
        ["run", "EXERCISES", "-j", "many"],
        ["run", "EXERCISES", "-j"],
        ["run"],
        ["report", "EXERCISES"],
        ["validate", "EXERCISES"],
        [],
    ],
)
def test_nothing_started_for_other_commands_or_words_that_do_not_parse(
    argv: list[str], course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (course / "submissions" / "alice" / "graph2.py").write_text("", encoding="utf-8")
    argv = [str(course / "exercises") if word == "EXERCISES" else word for word in argv]
    assert zygotes_to_start(argv) == 0
    assert capsys.readouterr() == ("", "")  # the real parser says what is wrong, once


def test_what_a_hand_in_is_made_of_is_what_discovery_reads() -> None:
    assert HANDIN_SUFFIXES == SUFFIXES


def test_what_the_gradebook_is_named_is_what_the_gradebook_names_it() -> None:
    assert GRADEBOOK_SUFFIX == SUFFIX


def test_a_run_again_over_what_the_gradebook_holds_starts_nothing(course: Path, tmp_path: Path) -> None:
    exercises = str(course / "exercises")
    now = time.time()

    def aged(path: Path, seconds_ago: float) -> None:
        os.utime(path, (now - seconds_ago, now - seconds_ago))

    handin = course / "submissions" / "bob" / "graph2.py"
    handin.write_text("", encoding="utf-8")
    aged(handin, 300)
    for folder in (course / "submissions", course / "submissions" / "alice", course / "submissions" / "bob"):
        aged(folder, 300)
    book = default_path(course / "submissions")
    book.write_bytes(b"")
    aged(book, 200)  # graded after the hand-in was
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 0
    aged(handin, 100)  # the student handed in again since
    assert zygotes_to_start(["run", exercises, "-j", "2"]) == 1
    other = tmp_path / "elsewhere.sqlite"  # --gradebook: that one's time counts
    other.write_bytes(b"")
    aged(other, 50)
    assert zygotes_to_start(["run", exercises, "-j", "2", "--gradebook", str(other)]) == 0
    (course / "submissions" / "carol.py").write_text("", encoding="utf-8")  # a new student, now
    assert zygotes_to_start(["run", exercises, "-j", "2", "--gradebook", str(other)]) == 2
