"""Reading hand-ins as a hostile student leaves them (grader/handin/files.py), and student text made safe
to show (grader/text.py)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, write_source
from hypothesis import given
from hypothesis import strategies as st

from grader.gradebook import submission_hash
from grader.handin import files, notebooks
from grader.handin.discover import discover_students, submission_from_path
from grader.handin.files import HandInError
from grader.text import valid_unicode, visible


def test_a_regular_file_is_read_and_a_link_to_one_is_refused(tmp_path: Path) -> None:
    secret = write_source(tmp_path / "elsewhere" / "solution.py", "SECRET = 1\n")
    hand_in = tmp_path / "hw"
    write_source(hand_in / "own.py", "x = 1\n")
    (hand_in / "copied.py").symlink_to(secret)
    assert files.read(hand_in, "own.py") == b"x = 1\n"
    with pytest.raises(HandInError, match=r"copied\.py: a symbolic link") as refused:
        files.read(hand_in, "copied.py")
    assert "SECRET" not in str(refused.value)


def test_a_link_anywhere_on_the_way_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_source(real / "inner.py", "x = 1\n")
    hand_in = tmp_path / "hw"
    hand_in.mkdir()
    (hand_in / "pkg").symlink_to(real, target_is_directory=True)
    with pytest.raises(HandInError, match="symbolic link"):
        files.read(hand_in, "pkg/inner.py")
    with pytest.raises(HandInError, match="not a path inside"):
        files.read(hand_in, "../real/inner.py")


def test_a_fifo_is_refused_without_blocking_the_grader(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "hw.py")
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            files.read(tmp_path, "hw.py")
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], HandInError) and "named pipe" in str(outcome[0])


def test_a_file_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with (tmp_path / "hw.py").open("wb") as big:
        big.truncate(files.MAX_FILE_BYTES + 1)
    with pytest.raises(HandInError, match="MiB"):
        files.read(tmp_path, "hw.py")


def test_walking_a_folder_skips_hidden_entries_and_never_follows_a_link(tmp_path: Path) -> None:
    hand_in = tmp_path / "hw"
    for name in ("a.py", "sub/b.py", ".git/c.py", "__pycache__/d.py", ".hidden.py", "notes.txt"):
        write_source(hand_in / name, "x = 1\n")
    (hand_in / "data").symlink_to(tmp_path, target_is_directory=True)  # a folder link: never entered
    assert files.walk(hand_in, (".py",)) == ["a.py", "sub/b.py"]
    (hand_in / "sub" / "linked.py").symlink_to(hand_in / "a.py")
    with pytest.raises(HandInError, match=r"linked\.py: a symbolic link"):
        files.walk(hand_in, (".py",))


def test_a_submission_is_read_once_and_its_bytes_are_what_is_hashed(tmp_path: Path) -> None:
    path = write_source(tmp_path / "hw" / "graph2.py", CORRECT_GRAPH2)
    submission = submission_from_path(path.parent, "graph2")
    assert submission.contents == (path.read_bytes(),)
    before = submission_hash(submission, path.parent)
    path.write_text("changed later\n", encoding="utf-8")  # nothing reads the file again
    assert submission_hash(submission, path.parent) == before


def test_an_unusable_hand_in_is_graded_again_once_mended(tmp_path: Path) -> None:
    hand_in = tmp_path / "hw"
    hand_in.mkdir()
    (hand_in / "graph2.py").symlink_to(tmp_path / "nowhere.py")
    broken = submission_hash(None, hand_in)
    (hand_in / "graph2.py").unlink()
    write_source(hand_in / "graph2.py", CORRECT_GRAPH2)
    assert submission_hash(None, hand_in) != broken


def test_a_linked_student_is_listed_and_told_so(tmp_path: Path) -> None:
    write_source(tmp_path / "class" / "ana" / "hw.py", CORRECT_GRAPH2)
    (tmp_path / "class" / "ben").symlink_to(tmp_path / "class" / "ana", target_is_directory=True)
    students = dict(discover_students(tmp_path / "class"))
    assert sorted(students) == ["ana", "ben"]
    with pytest.raises(HandInError, match="symbolic link"):
        submission_from_path(students["ben"], "graph2")


def test_notebooks_the_parser_cannot_hold_are_refused_in_words(tmp_path: Path) -> None:
    huge = json.dumps({"cells": [], "nbformat": 4, "x": 1}).replace("1}", "9" * 5000 + "}")
    with pytest.raises(notebooks.NotebookError, match="5000 digits"):
        notebooks.convert(huge.encode(), tmp_path / "nb.ipynb")
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(notebooks.NotebookError, match="nested too deeply"):
        notebooks.convert(deep.encode(), tmp_path / "nb.ipynb")


def test_a_helper_the_parser_cannot_hold_does_not_stop_the_hand_in(tmp_path: Path) -> None:
    write_source(tmp_path / "hw" / "graph2.py", CORRECT_GRAPH2)
    (tmp_path / "hw" / "helper.py").write_text("x = " + " + ".join(["1"] * 200_000) + "\n", encoding="utf-8")
    submission = submission_from_path(tmp_path / "hw", "graph2")
    assert submission.files[0] == "graph2.py"


@given(st.text())
def test_visible_text_has_no_control_characters_and_is_valid_utf8(text: str) -> None:
    shown = visible(text)
    shown.encode("utf-8")  # no lone surrogate
    assert all(c in "\n\t" or (ord(c) >= 0x20 and not 0x7F <= ord(c) <= 0x9F) for c in shown)
    valid = valid_unicode(text)
    valid.encode("utf-8")
    assert len(valid) == len(text)


def test_escape_sequences_are_shown_not_obeyed() -> None:
    assert visible("\x1b[2Jscore 10/10\r\n") == "\\x1b[2Jscore 10/10\\x0d\n"
    assert visible("plain\ttext\n") == "plain\ttext\n"
    assert valid_unicode("a\ud800b") == "a\ufffdb"
