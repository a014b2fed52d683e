"""A pool of secret seeds whose references were computed ahead (`grader prepare --pool DIR`), so that a
Gradescope submission draws one of them and computes no reference (`grader gradescope --pool DIR`).

The pool is a private folder of the grader's user (0700): `seeds.json` (0600) and the references of every
seed, stored as the reference cache stores them (the folder is their cache: HMAC under the user's key).
Nothing of it is visible to a hand-in: bubblewrap mounts neither it nor anything above it, and the base
layer runs a hand-in as another uid, which the folder's mode shuts out (tests/test_prepare.py reads it
from a hand-in). Keep it out of the interpreter's prefix and of the grader's package: the sandbox mounts
those.

What a pool gives up: a fresh secret seed per submission made answers recorded from one submission's report
of no use in the next. A result shows its seed (to replay a failure), so a student who resubmits learns the
pool's seeds one by one (all 8 of a pool of 8 after 22 submissions, on average) and could hand in a table
of their answers, computed with the grader and the handed-out exercise. A larger pool costs image size and
build time in proportion (cs231n/a2: 18 MB and 15 s of CPU a seed); a course that wants a fresh seed per
submission builds no pool and pays the references on each (cs231n/a2: 47 s a submission against 8 s).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.errors import GraderError
from grader.exercise.trials import SECRET_BITS, secret_seed

SEEDS_FILE = "seeds.json"
# 8: a student meets every seed of the pool only after 8·H(8) ≈ 22 submissions on average, while the image
# holds 8 seeds' references (cs231n/a2: 140 MB) and its build computes them in about 2 minutes.
DEFAULT_SIZE = 8
_MAX_BYTES = 1 << 20


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
    """The pool's folder, private to this user: made 0700, or an existing one of this user's made so."""
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


def read_pool(folder: Path) -> SeedPool:
    """The pool in `folder`; PoolError where its seeds file is missing, a link, another user's, readable by
    others (its seeds may be known) or not a pool."""
    path = folder / SEEDS_FILE
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
