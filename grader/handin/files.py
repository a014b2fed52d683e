"""A hand-in's files, read as a hostile student may have left them: regular files inside it, or nothing.

Git-based hand-ins keep symbolic links, and a link named `graph2.py` that points at the exercise's
solution would otherwise be graded as the student's work (or leak what it points at into an error
message). So every file is opened one path component at a time, relative to the folder above it, with
O_NOFOLLOW: a link anywhere on the way, or a file that is not a regular one (a FIFO would block the
grader, a device would read forever), is the student's error, named, and never read. Sizes are capped
before anything is read.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from grader.errors import UsageError

MAX_FILE_BYTES = 8 << 20  # a hand-in's .py file or notebook; course notebooks with outputs stay below 4 MiB
MAX_FILES = 500  # files of a hand-in folder taken for grading
_SKIPPED_DIRS = {"__pycache__"}
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO never blocks open


class HandInError(UsageError):
    """Something in a student's hand-in the grader will not read: the student's error, naming it."""


def kind_of(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def check_regular(path: Path) -> None:
    """`path` itself (not what a link there points at) is a regular file."""
    mode = _lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise HandInError(f"{path}: {kind_of(mode)}, not a file: hand in the file itself")


def read(root: Path, relative: str) -> bytes:
    """The bytes of `root/relative`, every component opened without following links; HandInError if any
    is a link, the file is not a regular one, or it is larger than MAX_FILE_BYTES."""
    parts = Path(relative).parts
    if not parts or any(part in ("", ".", "..") for part in parts) or Path(relative).is_absolute():
        raise HandInError(f"{root / relative}: not a path inside the hand-in")
    with contextlib.ExitStack() as stack:
        folder = _open(root, None, _DIRECTORY, root)
        stack.callback(os.close, folder)
        for k, part in enumerate(parts[:-1]):
            folder = _open(part, folder, _DIRECTORY, root.joinpath(*parts[: k + 1]))
            stack.callback(os.close, folder)
        path = root / relative
        fd = _open(parts[-1], folder, _FILE, path)
        stack.callback(os.close, fd)
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise HandInError(f"{path}: {kind_of(status.st_mode)}, not a file: remove it from the hand-in")
        if status.st_size > MAX_FILE_BYTES:
            size, limit = status.st_size >> 20, MAX_FILE_BYTES >> 20
            raise HandInError(f"{path}: {size} MiB, more than the {limit} MiB a file may have")
        os.set_blocking(fd, True)
        chunks = []
        left = MAX_FILE_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # it grew while being read
            raise HandInError(f"{path}: more than the {MAX_FILE_BYTES >> 20} MiB a file may have")
        return b"".join(chunks)


def walk(root: Path, suffixes: tuple[str, ...]) -> list[str]:
    """The files below `root` with one of `suffixes`, as paths relative to it, sorted; hidden entries and
    __pycache__ skipped. A link or special file with such a suffix is a HandInError naming it; links to
    folders are never followed."""
    found: list[str] = []

    def visit(folder: Path, relative: tuple[str, ...]) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise HandInError(f"{folder}: cannot be listed ({exc.strerror})") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = folder / entry.name
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                if entry.name not in _SKIPPED_DIRS:
                    visit(path, (*relative, entry.name))
            elif entry.name.endswith(suffixes):  # anything else is never read, links to folders included
                if not stat.S_ISREG(mode):
                    raise HandInError(f"{path}: {kind_of(mode)}, not a file: hand in the file itself")
                found.append("/".join((*relative, entry.name)))
                if len(found) > MAX_FILES:
                    raise HandInError(f"{root}: more than {MAX_FILES} files to grade in this hand-in")

    visit(root, ())
    return sorted(found)


def _lstat(path: Path) -> os.stat_result:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        raise HandInError(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise HandInError(f"{path}: cannot be read ({exc.strerror})") from None


def _open(name: str | Path, folder: int | None, flags: int, shown: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
                raise HandInError(f"{shown}: a symbolic link; hand in the file itself") from None
        raise HandInError(f"{shown}: cannot be read ({exc.strerror})") from None
