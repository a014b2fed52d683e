"""Whether a hand-in's worker needs torch: its zygote imports torch for it (warm.py), else the worker is
numpy's alone, torch out of its view of the installed packages (course_view.py).

torch's import is most of what a worker costs to start (about a second of CPU, docs/benchmarks.md), and
CS231n's and CS224n's hand-ins are numpy code. A worker needs torch where an exercise it serves hands
an input out as a tensor, or where student code could import it: the hand-in's files or the exercise's
support files name it anywhere (the word `torch`, in code, a string or a comment: a notebook's JSON
too). What names it nowhere and imports it all the same (a name built from pieces) finds no torch: its
worker says so (worker/imports.py), and the grading runs the hand-in again in a worker with torch, once
(`asked_for`): its later workers, the autograd check's among them, have torch too. Where the isolation
cannot wall torch off, or the course declares a package that requires torch, the worker gets torch
whatever this says (warm.Zygote.torch_for, the view).

Nothing here is a defence: a hand-in that names torch gets it, as every hand-in did before. What keeps
the by-hand check is that a worker without torch cannot import it (the walls), and one with torch has
autograd made wrong in its checked worker (worker/autograd_check.py).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # launch.py reads files with it before anything heavy is imported
    from grader.exercise.spec import Exercise
    from grader.handin.prepare import Prepared

WORD = b"torch"
# A folder read beyond this many files or bytes is taken to need torch: deciding must stay cheap
# (CS231n's support package is 9 files, 80 kB).
_FOLDER_FILES = 200
_FOLDER_BYTES = 8 << 20


# Hand-ins whose worker without torch was asked for it, by their files' digest: for the rest of this
# grader's process, every worker of theirs has torch. What a hand-in gains by asking falsely is the worker
# it would have had by writing the word.
_ASKED: set[str] = set()


def asked_for(handin: Prepared) -> None:
    """The hand-in imported torch in a worker without it: its workers from now on have torch."""
    _ASKED.add(_digest(handin))


def _digest(handin: Prepared) -> str:
    digest = hashlib.sha256()
    for path, content in handin.files:
        digest.update(path.encode() + b"\0" + len(content).to_bytes(8, "little") + content)
    return digest.hexdigest()


def needed(handin: Prepared, exercises: Sequence[Exercise]) -> bool:
    """Whether the worker serving `handin` on `exercises` needs torch."""
    if _ASKED and _digest(handin) in _ASKED:
        return True
    if any(spec.type == "torch" for exercise in exercises for spec in exercise.spec.inputs.values()):
        return True
    if mentions_torch(content for _, content in handin.files):
        return True
    return any(files_need_torch(tuple(exercise.support_paths)) for exercise in exercises)


def mentions_torch(contents: Iterable[bytes]) -> bool:
    return any(WORD in content for content in contents)


@lru_cache(maxsize=64)
def files_need_torch(paths: tuple[Path, ...]) -> bool:
    """Whether the files at `paths` (folders read through) name torch, or are too many to read."""
    seen = size = 0
    for path in paths:
        for file in _files(path):
            seen += 1
            try:
                content = file.read_bytes()
            except OSError:
                continue  # staging it fails the same way, and says so
            size += len(content)
            if WORD in content or seen > _FOLDER_FILES or size > _FOLDER_BYTES:
                return True
    return False


def _files(path: Path) -> Iterable[Path]:
    if not path.is_dir():
        yield path
        return
    for folder, folders, names in os.walk(path):
        folders[:] = [f for f in folders if f != "__pycache__"]
        for name in names:
            yield Path(folder) / name
