"""The `grader` command's first step: for `check`, `repro` and a local `run`, the sandboxed workers'
zygotes start before anything else is imported, so that their imports (torch's, the longest step of a
check, where the checked file names torch) overlap the grader's own imports (pydantic, yaml, rich: a
few hundred milliseconds) and its loading of the exercises (without it, a class run over the bundled
library started its zygotes only after loading its 46 specs).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import NoReturn

from grader.collector import collect_seldom


def entry() -> None:
    collect_seldom()
    count = zygotes_to_start(sys.argv[1:])
    if count:
        from grader.sandbox.warm import shared_pool

        # A sandbox that cannot start fails again when the command needs it, where the error is reported.
        with contextlib.suppress(Exception):
            shared_pool().prestart(count, torch=torch_at_start(sys.argv[1:]))
    from grader.cli import entry as command

    command()


def zygotes_to_start(argv: list[str]) -> int:
    """How many zygotes the command needs at once, started before its imports: one for `check` and
    `repro`; for `run` on this machine, its `-j`, but no more than its class folder holds students with
    something a hand-in is made of (what nobody handed in needs no worker). A guess from the words
    alone: the real parser still judges them, and a wrong guess costs time only (zygotes unused, or
    started later by the class run itself)."""
    if argv[:1] in (["check"], ["repro"]):
        return 1
    if argv[:1] != ["run"]:
        return 0
    parser = _Quiet(add_help=False)
    parser.add_argument("exercises", nargs="?")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    for option in ("--submissions", "--cluster", "--seed", "--trials", "--gradebook", "--out", "--html"):
        parser.add_argument(option)
    parser.add_argument("--roster")
    try:
        args, _ = parser.parse_known_args(argv[1:])
    except ValueError:  # a malformed -j, say: the real parser says what is wrong
        return 0
    if args.cluster is not None or args.exercises is None or args.jobs < 1:
        return 0
    folder = Path(args.submissions or Path(args.exercises).resolve().parent / "submissions")
    if not _changed_since_graded(folder, args.gradebook):
        return 0  # a run again over what the gradebook holds: the class run starts what it needs
    return _handing_in(folder, up_to=args.jobs)


def torch_at_start(argv: list[str]) -> bool:
    """Whether the zygote imports torch at once: for a `check` or `repro` of a file that names torch
    (torch_use.py), whose worker will need it. Otherwise it is imported where a job needs it: an exercise's
    references, or a hand-in of a class run that names torch."""
    if argv[:1] not in (["check"], ["repro"]):
        return False
    parser = _Quiet(add_help=False)
    parser.add_argument("exercise")
    parser.add_argument("file")
    for option in ("--trials", "--seed", "--trial"):
        parser.add_argument(option)
    try:
        args, _ = parser.parse_known_args(argv[1:])
    except ValueError:
        return False
    from grader.sandbox.torch_use import files_need_torch

    return files_need_torch((Path(args.file),))


class _Quiet(argparse.ArgumentParser):
    """A parser that raises instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


# What a hand-in is made of (handin.discover.SUFFIXES, not imported here: it imports the notebook reader).
HANDIN_SUFFIXES = (".py", ".ipynb")
GRADEBOOK_SUFFIX = ".gradebook.sqlite"  # gradebook.SUFFIX, not imported here: it imports pydantic


def _changed_since_graded(folder: Path, gradebook: str | None) -> bool:
    """Whether the class folder may hold hand-ins its gradebook has not graded: no gradebook yet, or a
    student's entry, or an entry in a student's folder, changed after the gradebook last did. Zygotes
    started for a run with nothing to grade only competed with it: an unchanged run of 10 students took
    longer with them than without (see docs/benchmarks.md)."""
    try:
        resolved = folder.resolve()
        book = Path(gradebook) if gradebook else resolved.parent / f"{resolved.name}{GRADEBOOK_SUFFIX}"
        graded = max(os.stat(path).st_mtime for path in (book, Path(f"{book}-wal")) if os.path.exists(path))
    except (OSError, ValueError):  # no gradebook yet (max of nothing)
        return True
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.stat(follow_symlinks=False).st_mtime > graded:
                    return True
                if entry.is_dir(follow_symlinks=False):
                    with os.scandir(entry.path) as inside:
                        if any(i.stat(follow_symlinks=False).st_mtime > graded for i in inside):
                            return True
    except OSError:
        return True
    return False


def _handing_in(folder: Path, up_to: int) -> int:
    """The students of the class folder with something a hand-in could be made of, counted up to
    `up_to`: a .py or notebook file of their own, or in their folder one of them or a folder (where the
    files may be)."""
    found = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if found == up_to:
                    break
                if entry.name.startswith((".", "_")):
                    continue
                if not entry.is_dir(follow_symlinks=False):
                    found += entry.name.endswith(HANDIN_SUFFIXES) or entry.is_symlink()
                    continue
                with os.scandir(entry.path) as inside:
                    found += any(i.name.endswith(HANDIN_SUFFIXES) or i.is_dir() for i in inside)
    except OSError:
        return 0
    return found
