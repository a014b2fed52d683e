"""A pool of secret seeds whose references were computed ahead (`grader prepare --pool DIR`), so that a
Gradescope submission draws one of them and computes no reference (`grader gradescope --pool DIR`).

The pool is a private folder of the grader's user (0700): `seeds.json` (0600) and the references of every
seed, stored as the reference cache stores them (the folder is their cache: HMAC under the user's key).
Nothing of it is visible to a hand-in: bubblewrap mounts neither it nor anything above it, and the base
layer runs a hand-in as another uid, which the folder's mode shuts out (tests/test_prepare.py reads it
from a hand-in). It is refused inside what the sandbox mounts (the interpreter's prefix, the grader's
package: sandbox_shows): bubblewrap keeps the grader's uid for a hand-in, mapped, which no mode stops.

What a pool gives up: a fresh secret seed per submission made answers recorded from one submission's report
of no use in the next, and is shown to the student to replay a failure. A pool's seeds come back: shown,
a student who resubmits would learn them one by one (all 8 of a pool of 8 after 22 submissions, on
average) and hand in a table of their answers, computed with the grader and the handed-out exercise. So a
pool's seed is never shown to the student (report/gradescope.py: the replay is `grader check` on the
trials every student has); the staff's log names it, with the commands that replay each failing return
(tests/test_secret_seed.py resubmits on every seed of a pool and finds none in what the student reads).
What still comes back is a pool's trials themselves, which a hand-in sees: one that writes them into its
own error message, seed after seed, gives its author their inputs (an error's message is clipped to 4000
characters, its traceback to 16000), and so a table of their answers keyed by the inputs.

A larger pool costs image size and build time in proportion (each seed holds, and its build computes,
the references of every exercise); a course that wants a fresh seed per submission builds no pool and pays
the references in each: several times the CPU of a submission with a pool (bench/gradescope_pool.py; see
docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.errors import GraderError
from grader.exercise.trials import SECRET_BITS, secret_seed

SEEDS_FILE = "seeds.json"
# 8: a student meets every seed of the pool only after 8·H(8) ≈ 22 submissions on average, while the image
# holds 8 seeds' references (cs231n/a2: 140 MB) and its build computes them in 2 minutes of CPU (118 s).
DEFAULT_SIZE = 8
_MAX_BYTES = 1 << 20
_SYSTEM = ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc")  # isolation.py mounts these (and /etc files)


class PoolError(GraderError):
    """The pool cannot be used: missing, not the grader user's alone, or not a pool."""


class SeedPool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    seeds: tuple[int, ...] = Field(min_length=1)
    trials: int | None = Field(default=None, ge=1)  # `--trials` of the run it was prepared for

    def draw(self) -> int:
        """One of the seeds, by the OS's generator: a hand-in cannot tell which."""
        return secrets.choice(self.seeds)


def new_pool(size: int, trials: int | None) -> SeedPool:
    """`size` distinct secret seeds."""
    seeds: set[int] = set()
    while len(seeds) < size:
        seeds.add(secret_seed())
    return SeedPool(seeds=tuple(sorted(seeds)), trials=trials)


def kept_or_new(folder: Path, size: int, trials: int | None) -> SeedPool:
    """The pool already in `folder` where it is one of `size` seeds for `trials` (preparing it again
    computes what it lacks), else a new one."""
    with contextlib.suppress(PoolError):
        kept = read_pool(folder)
        if len(kept.seeds) == size and kept.trials == trials:
            return kept
    return new_pool(size, trials)


def make_folder(folder: Path) -> None:
    """The pool's folder, private to this user: made 0700, or an existing one of this user's made so; never
    where the sandbox mounts the machine's own files (PoolError)."""
    shown = sandbox_shows(folder)
    if shown is not None:
        raise PoolError(
            f"{folder}: inside {shown}, which the sandbox mounts for every hand-in (bubblewrap maps it to "
            "root, whose files a folder's mode does not keep from it): put the pool elsewhere, such as "
            "/autograder/reference-pool"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = os.lstat(folder)
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.geteuid():
        raise PoolError(f"{folder}: not a folder of this user's (a link, or another's): name another")
    os.chmod(folder, 0o700)


def write_pool(folder: Path, pool: SeedPool) -> None:
    """seeds.json, whole or not at all, readable by this user alone."""
    descriptor, name = tempfile.mkstemp(dir=folder, prefix=".partial-seeds-")  # mode 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(pool.model_dump_json())
        os.replace(name, folder / SEEDS_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def sandbox_shows(folder: Path) -> str | None:
    """Which of the folders a sandbox mounts (isolation.py: the interpreter's prefixes, the grader's
    package, the system's folders) holds `folder`, if one does."""
    import grader

    resolved = folder.resolve()
    interpreter, package = Path(sys.executable).resolve().parent.parent, Path(grader.__file__).parent
    mounted = [sys.prefix, sys.base_prefix, sys.exec_prefix, str(interpreter), str(package), *_SYSTEM]
    return next((m for m in sorted(mounted) if resolved.is_relative_to(Path(m).resolve())), None)


def read_pool(folder: Path) -> SeedPool:
    """The pool in `folder`; PoolError where its seeds file is missing, a link, another user's, readable by
    others (its seeds may be known) or not a pool."""
    path = folder / SEEDS_FILE
    shown = sandbox_shows(folder)
    if shown is not None:
        raise PoolError(f"{folder}: inside {shown}, which the sandbox mounts: its seeds may be known")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        message = f"{path}: cannot be opened ({exc.strerror}); grader prepare --pool {folder} makes it"
        raise PoolError(message) from exc
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        data = handle.read(_MAX_BYTES + 1)
    if not stat.S_ISREG(status.st_mode) or status.st_uid != os.geteuid() or status.st_mode & 0o077:
        mode = stat.filemode(status.st_mode)
        owner = f"mode {mode}, uid {status.st_uid}"
        raise PoolError(f"{path}: not this user's alone ({owner}): its seeds may be known")
    try:
        pool = SeedPool.model_validate_json(data)
    except ValidationError as exc:
        raise PoolError(f"{path}: not a seed pool ({exc.error_count()} problems): prepare it again") from exc
    if any(not 0 <= seed < 1 << SECRET_BITS for seed in pool.seeds):
        raise PoolError(f"{path}: holds seeds that are no secret seeds: prepare it again")
    return pool
