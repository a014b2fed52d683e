"""What the student is shown of a failure."""

from __future__ import annotations

import errno
import os
import traceback
from pathlib import Path
from typing import Any

from grader.sandbox.protocol import MAX_LOCATION_FILE, MAX_LOCATION_FUNCTION, MAX_LOCATION_LINE
from grader.sandbox.worker import seccomp
from grader.sandbox.worker.deadline import TrialTimeout

_TRACEBACK_FRAMES = 8
# The grader's own code: never the student's, even in a folder holding both (in_process.py's functions
# defined beside a checkout of the grader).
_GRADER_FILES = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def exception_line(exc: BaseException, submission_dir: Path) -> str:
    """The exception's last line(s), with the sandbox's folder stripped (a SyntaxError names its file)."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if _new_process_refused(exc):
        text += f" ({ONE_PROCESS})"
    return clip(text.replace(str(submission_dir) + os.sep, ""))


ONE_PROCESS = (
    "this exercise runs in one process: starting another (os.fork, subprocess, multiprocessing, a fresh "
    "Python) is not allowed; compute in your function itself (threads are fine)"
)
# Where the refusal of worker/seccomp.py surfaces: os.fork, os.exec*, os.posix_spawn* and os.system are
# built in (no frame of their own), so the line that called them names them; subprocess and
# multiprocessing raise from their own files. EPERM from any of them is the filter's: a process limit
# answers EAGAIN.
_STARTERS = ("fork", "exec", "spawn", "popen", "system", "subprocess", "multiprocessing", "process(")
# Where a process pool fails before it forks, for want of what it needs beside (its semaphores in a
# /dev/shm the hand-in may not write: EACCES): the same advice, since the fork would be refused next.
_POOLS = (f"{os.sep}multiprocessing{os.sep}", f"{os.sep}concurrent{os.sep}futures{os.sep}process.py")


def _new_process_refused(exc: BaseException) -> bool:
    """Whether `exc` is the filter's refusal of a new process (only where this process installed it)."""
    if not seccomp.installed() or not isinstance(exc, PermissionError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if any(any(pool in frame.filename for pool in _POOLS) for frame in frames):
        return True
    if exc.errno != errno.EPERM:
        return False
    for frame in frames:
        where = f"{frame.filename} {frame.line or ''}".lower()
        if any(starter in where for starter in _STARTERS):
            return True
    return False


def raised_at(exc: BaseException, submission_dir: Path) -> str:
    """Where in the student's files `exc` was raised, as " at line 6 of f.py: `assert ...`", or "" where
    none of their frames is on its way."""
    frames = _student_frames(exc, submission_dir)
    if not frames:
        return ""
    last = frames[-1]
    prefix = str(submission_dir) + os.sep
    line = f": `{clip(last.line.strip(), 200)}`" if last.line else ""
    return f" at line {last.lineno} of {last.filename.removeprefix(prefix)}{line}"


def _student_frames(exc: BaseException, submission_dir: Path) -> list[traceback.FrameSummary]:
    prefix = str(submission_dir) + os.sep
    return [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.startswith(prefix) and not f.filename.startswith(_GRADER_FILES)
    ]


def clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} more characters]"


def student_location(exc: BaseException, submission_dir: Path) -> dict[str, Any] | None:
    """Where student_traceback's text ends in the student's files, as the message's `location` fields: a
    SyntaxError's own place (its text's last 'File' line), else their innermost frame; None where there
    is neither, or where it is not a place (a line that is no number, a name past the message's bounds)."""
    prefix = str(submission_dir) + os.sep
    file: object
    line: object
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        # Its text's last place, after every frame (traceback.format_exception_only), as Python writes it.
        file, line, function = exc.filename or "<string>", exc.lineno, ""
    else:
        frames = _student_frames(exc, submission_dir)
        if not frames:
            return None
        last = frames[-1]
        file, line, function = last.filename.removeprefix(prefix), last.lineno, last.name
    if not (isinstance(file, str) and type(line) is int and 0 <= line <= MAX_LOCATION_LINE):
        return None
    file, function = file.replace(prefix, ""), function.replace(prefix, "")
    if len(file) > MAX_LOCATION_FILE or len(function) > MAX_LOCATION_FUNCTION:
        return None
    return {"file": file, "line": line, "function": function}


def student_traceback(exc: BaseException, submission_dir: Path) -> str:
    """The traceback restricted to the student's own files, with paths relative to the submission."""
    prefix = str(submission_dir) + os.sep
    frames = _student_frames(exc, submission_dir)
    lines = []
    for frame in frames[-_TRACEBACK_FRAMES:]:
        lines.append(f'  File "{frame.filename.removeprefix(prefix)}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    lines.append(
        exception_line(exc, submission_dir)
        if not isinstance(exc, TrialTimeout)
        else "TrialTimeout: deadline reached"
    )
    return clip("\n".join(lines).replace(prefix, ""), 16000)
