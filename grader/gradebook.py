"""The gradebook: every graded (student, exercise) in one SQLite file, written as soon as it is graded.

Each row keeps what the grade depends on — the submission's content hash, the exercise's hash (its spec
and support files), the grader's version and the grading settings (seed, trials) — with the full result
and the time. A re-run regrades only rows whose inputs changed; a run killed at any point loses at
most the gradings in flight (each row is one committed transaction in WAL mode), and a row is never
half-written. `grader report` re-renders results from here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import sqlite3
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grader
from grader.errors import UsageError
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise
from grader.handin.prepare import Submission
from grader.outcomes import IsolationLevel
from grader.report.serialised import from_data, record
from grader.results import SubmissionResult

# Before 0.3 every class beside one exercises folder shared this one file, so that `grader report` showed
# whichever class ran last; a class's gradebook is now named after its submissions folder.
SHARED_NAME = "grader-gradebook.sqlite"
SUFFIX = ".gradebook.sqlite"


def default_path(submissions: Path) -> Path:
    """A class's gradebook: beside its submissions folder, named after it (submissions.gradebook.sqlite)."""
    folder = submissions.resolve()
    return folder.parent / f"{folder.name}{SUFFIX}"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    command TEXT NOT NULL,
    grader_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    student TEXT NOT NULL,
    exercise TEXT NOT NULL,
    submission_hash TEXT NOT NULL,
    exercise_hash TEXT NOT NULL,
    grader_version TEXT NOT NULL,
    settings TEXT NOT NULL,
    result TEXT NOT NULL,
    graded_at TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    PRIMARY KEY (student, exercise)
);
CREATE TABLE IF NOT EXISTS in_flight (
    student TEXT NOT NULL,
    exercise TEXT NOT NULL,
    submission_hash TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    stopped INTEGER NOT NULL,
    started TEXT NOT NULL,
    PRIMARY KEY (student, exercise)
);
"""
# Columns added to `runs` since 0.3 (a gradebook made before has them added when it is opened): the seed
# the run drew or was given, when it finished (NULL: still running, or killed), and which process ran it
# (where it ran, its pid and its start in clock ticks since boot: a run whose process still lives on this
# machine was not killed, however unfinished it looks).
_RUN_COLUMNS = {
    "seed": "INTEGER",
    "finished": "TEXT",
    "host": "TEXT",
    "pid": "INTEGER",
    "pid_start": "INTEGER",
}


@dataclass(frozen=True)
class Stopped:
    """A hand-in that was being graded when a run stopped without finishing (the grader killed, by the
    OOM killer, by hand, or by the hand-in): `times` runs so far, this one counted."""

    student: str
    exercise: str
    submission_hash: str
    times: int


@dataclass(frozen=True)
class Key:
    """What a grade depends on; equal keys mean the stored result still holds."""

    student: str
    exercise: str
    submission_hash: str
    exercise_hash: str
    settings: str  # JSON of the grading settings (seed, or "secret"; trials)


class Gradebook:
    """One SQLite file; safe to use from the grading threads (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
            for column, kind in _RUN_COLUMNS.items():
                if column not in present:
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
        except (OSError, sqlite3.Error) as exc:
            why = f"cannot use this file as the gradebook ({exc})"
            raise UsageError(f"{path}: {why}; pass --gradebook FILE to name another") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def start_run(self, command: str, seed: int | None = None) -> int:
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO runs (started, command, grader_version, seed, host, pid, pid_start) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (_now(), command, grader.__version__, seed, _HOST, os.getpid(), _started(os.getpid())),
            )
            return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int) -> None:
        """The run ended on its own (finished, or interrupted with what was in flight finished): what it
        leaves in flight, if anything, did not stop it."""
        with self._lock:
            self._db.execute("UPDATE runs SET finished = ? WHERE id = ?", (_now(), run_id))
            self._db.execute("DELETE FROM in_flight WHERE run_id = ?", (run_id,))

    def grading(self, run_id: int, key: Key, stopped: int) -> None:
        """Before the hand-in's grading starts: it is in flight (until its result is written, or
        `landed`), so that a run that dies now finds it on the next run. `stopped`: how many runs it
        was found in flight in before. One committed row (synchronous=FULL), small beside what grading
        the hand-in takes."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO in_flight (student, exercise, submission_hash, run_id, stopped, "
                "started) VALUES (?, ?, ?, ?, ?, ?)",
                (key.student, key.exercise, key.submission_hash, run_id, stopped, _now()),
            )

    def landed(self, keys: Sequence[Key]) -> None:
        """These hand-ins' gradings ended without a result to write (the grader's failure on them): no
        longer in flight."""
        with self._lock:
            self._db.executemany(
                "DELETE FROM in_flight WHERE student = ? AND exercise = ?",
                [(k.student, k.exercise) for k in keys],
            )

    def stopped(self, run_id: int) -> dict[tuple[str, str], Stopped]:
        """The hand-ins in flight in runs (not `run_id`) that never finished, by (student, exercise); not
        those of a run whose process is still alive here (another `grader run` on this gradebook at
        once: its hand-ins did not stop anything)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT f.student, f.exercise, f.submission_hash, f.stopped, r.host, r.pid, r.pid_start "
                "FROM in_flight f LEFT JOIN runs r ON r.id = f.run_id "
                "WHERE f.run_id != ? AND r.finished IS NULL",
                (run_id,),
            ).fetchall()
        return {
            (s, e): Stopped(s, e, h, int(n) + 1)
            for s, e, h, n, host, pid, start in rows
            if not (host == _HOST and pid is not None and start is not None and _started(pid) == start)
        }

    def forget(self, stale: Sequence[tuple[str, str]]) -> None:
        """Hand-ins found in flight that are no longer to be graded as they were (changed since, say)."""
        with self._lock:
            self._db.executemany("DELETE FROM in_flight WHERE student = ? AND exercise = ?", stale)

    def stored(self, key: Key) -> SubmissionResult | None:
        """The stored result, if it was graded from exactly these inputs by this grader version."""
        with self._lock:
            row = self._db.execute(
                "SELECT result FROM results WHERE student = ? AND exercise = ? AND submission_hash = ? "
                "AND exercise_hash = ? AND settings = ? AND grader_version = ?",
                (*_identity(key), grader.__version__),
            ).fetchone()
        return None if row is None else decode(row[0])

    def record(self, run_id: int, key: Key, result: SubmissionResult) -> None:
        """Store one result, replacing the previous one of that (student, exercise), in one transaction."""
        self.record_all(run_id, [(key, result)])

    def record_all(self, run_id: int, results: Sequence[tuple[Key, SubmissionResult]]) -> None:
        """Store results in one transaction: those made at once (what nobody handed in) cost one write to
        disk for the lot, not one each."""
        if not results:
            return
        now = _now()
        rows = [
            (
                key.student,
                key.exercise,
                key.submission_hash,
                key.exercise_hash,
                grader.__version__,
                key.settings,
                encode(result),
                now,
                run_id,
            )
            for key, result in results
        ]
        with self._lock, contextlib.closing(self._db.cursor()) as cursor:
            cursor.execute("BEGIN")
            try:
                cursor.executemany(
                    "INSERT OR REPLACE INTO results (student, exercise, submission_hash, exercise_hash, "
                    "grader_version, settings, result, graded_at, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                cursor.executemany(  # its result is written: no longer in flight
                    "DELETE FROM in_flight WHERE student = ? AND exercise = ?",
                    [(key.student, key.exercise) for key, _ in results],
                )
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
            cursor.execute("COMMIT")

    def results(self) -> list[SubmissionResult]:
        """Every stored result, by student then exercise."""
        with self._lock:
            rows = self._db.execute("SELECT result FROM results ORDER BY student, exercise").fetchall()
        return [decode(row[0]) for row in rows]

    def graded_at(self) -> dict[tuple[str, str], str]:
        """When each stored (student, exercise) was graded (UTC, ISO 8601), for the exports."""
        with self._lock:
            rows = self._db.execute("SELECT student, exercise, graded_at FROM results").fetchall()
        return {(student, exercise): when for student, exercise, when in rows}


def _identity(key: Key) -> tuple[str, str, str, str, str]:
    return key.student, key.exercise, key.submission_hash, key.exercise_hash, key.settings


_HOST = socket.gethostname()


def _started(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat): with its pid,
    what tells it from a later process given the same pid. None where there is no such process."""
    try:
        line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = line[line.rfind(b")") + 2 :].split()  # after the name, which may hold spaces and brackets
    return int(fields[19]) if len(fields) > 19 else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def submission_hash(submission: Submission | None, path: Path) -> str:
    """sha256 over the hand-in's file names and contents; for an unusable one (a link, a broken notebook),
    over what is there, links not followed: once the student mends it, it is graded again."""
    digest = hashlib.sha256()
    if submission is None:
        digest.update(f"unusable:{path}\0".encode())
        for entry in _entries(path):
            digest.update(entry.encode(errors="surrogateescape") + b"\0")
        return digest.hexdigest()
    for relative, content in sorted(zip(submission.files, submission.contents, strict=True)):
        digest.update(relative.encode() + b"\0")
        digest.update(content)
        digest.update(b"\0")
    return digest.hexdigest()


def _entries(path: Path) -> list[str]:
    """Every entry at and below `path` with its type, size and modification time, links not followed."""
    try:
        top = os.lstat(path)
    except OSError:
        return []
    found = [f"{path} {top.st_mode} {top.st_size} {top.st_mtime_ns}"]
    if stat.S_ISDIR(top.st_mode):
        for folder, subfolders, names in os.walk(path, followlinks=False):
            subfolders.sort()
            for name in sorted(names + subfolders):
                with contextlib.suppress(OSError):
                    entry = os.lstat(os.path.join(folder, name))
                    found.append(f"{folder}/{name} {entry.st_mode} {entry.st_size} {entry.st_mtime_ns}")
    return found


SECRET = "secret"  # a key's seed where the run drew a secret one: any secret seed grades alike


def settings_key(settings: Settings, exercise: Exercise) -> str:
    """The grading settings a result of `exercise` is kept under; a secret seed drawn by the run is left
    out, so that an unchanged hand-in keeps its result (and the seed it was graded with, in the result)
    from one run to the next, while a run with an explicit --seed S keys on S."""
    seed = SECRET if settings.secret else settings.seed
    return json.dumps({"seed": seed, "trials": settings.trial_count(exercise)}, sort_keys=True)


# --- a result as the gradebook keeps it: report/serialised.py's JSON --------------------------------------


def encode(result: SubmissionResult) -> str:
    return record(result).to_json()


def decode(text: str) -> SubmissionResult:
    return from_data(upgraded_row(json.loads(text))).result()


# Of an isolation line stored before it had a level: its walls' details, in brackets.
_DETAILS = re.compile(r" \([^()]*\)")


def upgraded_row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored result as this version writes it. A row written before a field was added said it only in
    words, which the reports of the time read; they are read here once, as they did, so that no report
    reads words: whether a return's message speaks of rounding envelopes, and the isolation's level (its
    line's first word) and brief (a full one without its bracketed details)."""
    isolation = row.get("isolation")
    if isinstance(isolation, str):
        reduced = isolation.startswith("reduced isolation")
        row["isolation"] = {
            "level": (IsolationLevel.REDUCED if reduced else IsolationLevel.FULL).value,
            "line": isolation,
            "brief": isolation if reduced else _DETAILS.sub("", isolation),
        }
    for ret in row.get("returns", ()):
        if isinstance(ret, dict) and "speaks_of_envelopes" not in ret:
            ret["speaks_of_envelopes"] = "envelope" in str(ret.get("message", ""))
    return row
