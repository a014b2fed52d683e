"""References kept on disk, so that a second `grader check` of an exercise neither imports torch in the
grader process nor recomputes them, and `grader prepare` can compute them ahead (a Gradescope image's build).

References (the trials' inputs with them) depend only on what reference_key.py hashes: the exercise's
fields and files that draw trials and compute values, the seed, the trials drawn (their count, or the one
trial replayed), reference.py's REFERENCE_VERSION and numpy's and torch's release series; the file is named
after that hash. A grader release that changes no reference keeps them; files stored under another key
(an older grader's) are never looked up again. It is data the grader reads back, so it holds no pickle:
reference_format.py's .npz of plain arrays and a header checked by pydantic. Each file is written to a
temporary name and renamed into place, so a grader never reads half of one; a file that does not load, or
holds anything but what was asked for (another key, other trials, other returns), is ignored and written
again. Deleting the folder is always safe.

Only the grader's own computations are trusted. Each file carries an HMAC of its bytes under a key of the
user's (`.key-<uid>` in the folder: mode 0600, owned by that uid, created once), so a file that anyone
else wrote — a sandboxed hand-in never sees the folder, but a classmate on a shared JupyterHub or a TA's
machine may share it — does not verify and is ignored. And a process where student code may have run (the
Python API: `grader.check` runs the student's functions in the caller's own process, after whatever the
notebook did to torch) never writes here: `untrusted_process()` switches it to a cache of its own, in
memory, for the rest of its life.

The folder, and what a miss does, are the run's settings' (settings.ReferenceCache, resolved once from
$GRADER_CACHE_DIR and $GRADER_REFERENCES), passed to every function here that reads or writes the folder.
OnMiss.REFUSE ($GRADER_REFERENCES=stored) makes a miss an error (ReferencesNotStored) instead of a
computation: how a test, or a Gradescope image, shows that a grading computed no reference.

Where the folder lacks them, the references that travel with the exercise (shipped_references.py: the
public seed's, written by `grader handout`) are looked up too: a student's first check reads those.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.errors import GraderError
from grader.exercise import shipped_references
from grader.exercise.expected import DeferredSpreads, Expected, Fill, References
from grader.exercise.reference_format import FORMAT, decoded_spreads, encoded_spreads, load, write
from grader.exercise.reference_key import references_key
from grader.exercise.settings import POLICY_ENV, STORED_ONLY, OnMiss, ReferenceCache
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial
from grader.text import counted

_MAGIC = b"grader-references-2\n"  # then the HMAC of the rest, then the .npz (reference_format.py)
_MAC_BYTES = 32  # HMAC-SHA256
_KEY_BYTES = 32


class ReferencesNotStored(GraderError):
    """$GRADER_REFERENCES=stored (OnMiss.REFUSE), and the references asked for are not in the folder:
    they would have been computed. The setup's problem (exit status 2): `grader prepare` stores them."""


# Where this process keeps what it computed once `untrusted_process()` was called: by key, never on disk.
_OWN: dict[str, References] = {}
_trusted = True
# What stored_references found and missed in this process: a grading's log says whether it computed any.
_ASKED = {True: 0, False: 0}


def untrusted_process() -> None:
    """Student code may have run in this process (it is the caller of the Python API): what it computes
    from now on may be what a patched torch computed, so it is kept in memory for this process alone and
    never written to the folder others read. Reading the folder stays safe: every file there verifies."""
    global _trusted
    _trusted = False


def stored_references(
    cache: ReferenceCache,
    exercise: Exercise,
    seed: int,
    count: int,
    only: int | None = None,
    partial: bool = False,
) -> References | None:
    """The references of make_trials(exercise, seed, count, only), trials included, if the cache has them;
    where it refuses a miss, ReferencesNotStored instead of None. `partial`: also those a cold check kept
    with the spreads it needed only (a DeferredSpreads, to be given a way to compute the rest).

    Imports no torch: a check whose references are stored never does, in the grader's process.
    """
    found = lookup(cache, exercise, seed, count, only, partial)
    _ASKED[found is not None] += 1
    if found is None and cache.on_miss is OnMiss.REFUSE:
        raise _not_stored(cache, exercise, seed, count, only)
    if found is not None and _deferred(found) and cache.on_miss is OnMiss.REFUSE:
        assert isinstance(found.spread, DeferredSpreads)
        found.spread.attach(_refusing_fill(cache, exercise, seed, count, only))
    return found


def _refusing_fill(
    cache: ReferenceCache, exercise: Exercise, seed: int, count: int, only: int | None
) -> Fill:
    """Where $GRADER_REFERENCES=stored, what computes the spreads that stored deferred references lack:
    nothing, ReferencesNotStored instead (a grading that needs none of them runs)."""

    def refuse(wanted: Sequence[int]) -> Mapping[int, Expected]:
        raise _not_stored(
            cache, exercise, seed, count, only, f"the spreads of {counted(len(wanted), 'trial')} "
        )

    return refuse


def _not_stored(
    cache: ReferenceCache, exercise: Exercise, seed: int, count: int, only: int | None, what: str = ""
) -> ReferencesNotStored:
    folder = cache.folder
    where = f"in {folder}" if folder is not None else "in no cache (it is off)"
    where += f" or in {shipped_references.path(exercise, seed, count).parent} (shipped with the exercise)"
    fix = (
        f"store them first: grader prepare {exercise.root} --seed {seed} --trials {count}"
        if only is None
        else "grader prepare stores whole runs, not one trial replayed"
    )
    return ReferencesNotStored(
        f"{exercise.id}: no stored references {f'({what.strip()}) ' if what else ''}for seed {seed}, "
        f"{f'trial {only}' if only is not None else counted(count, 'trial')}, {where}, and "
        f"{POLICY_ENV}={STORED_ONLY} forbids computing them; {fix}"
    )


def asked() -> tuple[int, int]:
    """How many times stored_references found the references asked for in this process, and how many
    times it did not (they were computed, or $GRADER_REFERENCES=stored made it an error)."""
    return _ASKED[True], _ASKED[False]


def lookup(
    cache: ReferenceCache,
    exercise: Exercise,
    seed: int,
    count: int,
    only: int | None = None,
    partial: bool = False,
) -> References | None:
    """stored_references, without `cache.on_miss`'s say: None where they are not stored, in the cache or
    with the exercise (shipped_references.py)."""
    indices = [only] if only is not None else list(range(count))
    key = _key(exercise, seed, indices)
    own = _OWN.get(key)
    if own is not None and (partial or not _deferred(own)):
        return own
    folder = cache.folder
    mac_key = None if folder is None else _mac_key(folder, create=False)
    found = (
        None
        if folder is None or mac_key is None
        else _load_file(folder / f"{key}.npz", exercise, key, mac_key, partial)
    )
    if found is not None and _deferred(found):
        # a cold check's: the whole references shipped with the exercise come first
        return shipped_references.shipped(exercise, seed, count, only) or found
    return found if found is not None else shipped_references.shipped(exercise, seed, count, only)


def _deferred(references: References) -> bool:
    return isinstance(references.spread, DeferredSpreads) and not references.spread.complete


def at_hand(
    cache: ReferenceCache, exercise: Exercise, seed: int, count: int, only: int | None = None
) -> bool:
    """Whether `lookup` has a file to read for them (a stat or two; whether it verifies, reading says)."""
    indices = [only] if only is not None else list(range(count))
    key = _key(exercise, seed, indices)
    if key in _OWN or (cache.folder is not None and (cache.folder / f"{key}.npz").is_file()):
        return True
    whole = only is None or 0 <= only < count
    return whole and shipped_references.path(exercise, seed, count).is_file()


def computed_references(
    cache: ReferenceCache, exercise: Exercise, seed: int, trials: Sequence[Trial]
) -> References:
    """The references of these trials, computed (importing torch) and stored for the next check."""
    from grader.exercise.reference import compute_references

    references = compute_references(exercise, trials)
    store(cache, exercise, seed, references)
    return references


def store(
    cache: ReferenceCache, exercise: Exercise, seed: int, references: References, body: bytes | None = None
) -> None:
    """Keep references for the next run (computed here or elsewhere): in the folder where this process is
    the grader's alone, else in this process's memory. `body`: the references already in the cache's
    format, as `decoded` read them into `references` (another process's answer): written as they are,
    not encoded a second time."""
    indices = [t.index for t in references.trials]
    if not _trusted:
        _OWN[_key(exercise, seed, indices)] = references
        return
    path = _path(cache, exercise, seed, indices)
    if path is not None:
        with contextlib.suppress(OSError):  # a folder we cannot write costs the next check time, nothing else
            mac_key = _mac_key(path.parent, create=True)
            if mac_key is not None:
                _store(path, exercise, references, mac_key, body)


def store_spreads(cache: ReferenceCache, exercise: Exercise, seed: int, references: References) -> None:
    """Keep the spreads of deferred references computed so far, for the next check: beside the file of
    their expected values, in a small file of their own (the whole file written again cost a cold A2
    check 0.4 s of CPU); the whole references once every spread is known."""
    spreads = references.spread
    if not isinstance(spreads, DeferredSpreads) or spreads.complete:
        store(cache, exercise, seed, references)
        return
    path = _path(cache, exercise, seed, [t.index for t in references.trials])
    if not _trusted or path is None:
        return
    with contextlib.suppress(OSError):
        mac_key = _mac_key(path.parent, create=True)
        if mac_key is not None:
            _write_verified(
                _spreads_path(path),
                f"{path.stem}{_SPREADS}",
                encoded_spreads(exercise, spreads.known()),
                mac_key,
            )


def key(exercise: Exercise, seed: int, trials: Sequence[Trial]) -> str:
    """What names the references of these trials: in the cache, and in what another process sends."""
    return _key(exercise, seed, [t.index for t in trials])


def _path(cache: ReferenceCache, exercise: Exercise, seed: int, indices: list[int]) -> Path | None:
    folder = cache.folder
    return None if folder is None else folder / f"{_key(exercise, seed, indices)}.npz"


def _key(exercise: Exercise, seed: int, indices: list[int]) -> str:
    return references_key(exercise, seed, indices, FORMAT)


def _mac_key(folder: Path, create: bool) -> bytes | None:
    """This user's key for the folder's files, made once where `create`; None where there is none, or where
    the file in its place is not this user's alone (another user may have put it there, knowing it)."""
    path = folder / f".key-{os.geteuid()}"
    for _ in range(2):
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            if not create:
                return None
            _make_key(folder, path)
            continue
        except OSError:
            return None
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            key = handle.read(_KEY_BYTES + 1)
        mine = info.st_uid == os.geteuid() and not info.st_mode & 0o077
        return key if mine and len(key) == _KEY_BYTES else None
    return None


def _make_key(folder: Path, path: Path) -> None:
    """A new key, whole or not at all: written to a private temporary file, then linked into place (which
    fails where another process linked its own first: both then read that one)."""
    folder.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=folder, prefix=".partial-key-")  # mode 0600
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(os.urandom(_KEY_BYTES))
        with contextlib.suppress(FileExistsError):
            os.link(name, path)
    finally:
        os.unlink(name)


def _mac(mac_key: bytes, key: str, body: bytes) -> bytes:
    return hmac.new(mac_key, key.encode() + b"\0" + body, hashlib.sha256).digest()


def _store(
    path: Path, exercise: Exercise, references: References, mac_key: bytes, body: bytes | None = None
) -> None:
    if body is None:
        buffer = io.BytesIO()
        write(buffer, exercise, references, path.stem)
        body = buffer.getvalue()
    _write_verified(path, path.stem, body, mac_key)
    if not _deferred(references):  # whole now: what a check kept of its spreads is in it
        _spreads_path(path).unlink(missing_ok=True)


# The spreads a cold check computed, beside the file of its deferred references: "<key>.spreads.npz".
_SPREADS = ".spreads"


def _spreads_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}{_SPREADS}.npz")


def _write_verified(path: Path, key: str, body: bytes, mac_key: bytes) -> None:
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".partial-", suffix=".npz", delete=False)  # noqa: SIM115 - renamed into place, not deleted
    try:
        with handle:
            handle.write(_MAGIC + _mac(mac_key, key, body) + body)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def _read_verified(path: Path, key: str, mac_key: bytes) -> bytes | None:
    """The body of the file at `path`, where its HMAC verifies under this user's key."""
    try:
        with path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return None
    start = len(_MAGIC) + _MAC_BYTES
    head, mac, body = data[: len(_MAGIC)], data[len(_MAGIC) : start], data[start:]
    if head != _MAGIC or not hmac.compare_digest(mac, _mac(mac_key, key, body)):
        return None
    return body


def _load_file(
    path: Path, exercise: Exercise, key: str, mac_key: bytes, partial: bool = False
) -> References | None:
    """The references in the file at `path`, where its HMAC verifies under this user's key; deferred
    ones with the spreads kept beside them."""
    body = _read_verified(path, key, mac_key)
    found = None if body is None else load(io.BytesIO(body), exercise, key, partial)
    if found is None or not isinstance(found.spread, DeferredSpreads):
        return found
    kept = _read_verified(_spreads_path(path), f"{key}{_SPREADS}", mac_key)
    spreads = None if kept is None else decoded_spreads(kept, exercise, None, found.expected)
    if spreads is None:
        return found
    known = {**found.spread.known(), **spreads}
    return References(found.trials, found.expected, DeferredSpreads([t.index for t in found.trials], known))
