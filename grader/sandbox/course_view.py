"""What a course's hand-ins may see of the installed packages: the view the sandbox shows them.

A course declares what student code may import (course.yaml `packages:`). The worker's finder on
sys.meta_path tells a student, in plain words, that an import is not the course's, but it lives in the
hand-in's own process and is advice: a hand-in can remove it, import a file by its path or through
pkgutil, or load a `.pyc` or an extension module directly. The wall is what the sandbox makes visible
(sandbox/walls.py): of every folder packages are installed in (site-packages, dist-packages, the base
interpreter's included), only the entries of the allowed distributions; of the grader package, only the
worker's own modules.

Allowed: the distributions the course declares, numpy, torch, the stand-ins every exercise may import
(imports.ALWAYS), and all they require, followed through their metadata (an extra's requirements are
not). torch is left out of the view of a hand-in that does not need it (torch_use.py): its worker is
forked from a zygote that has not imported torch, and must not be able to.

torch requires sympy and imports it while grading (`y.backward(v)` reaches
torch.fx.experimental.symbolic_shapes, which imports sympy): so sympy and mpmath are visible to every
course that has torch, refused only by the finder.

Computed in the grader's process, once per set of declared distributions, and sent with each job: the
zygote serves hand-ins of any course. Under bubblewrap the worker binds the allowed entries over an
empty copy of each folder's layout (the skeleton, staged here in the slot); in the base layer Landlock
lets it read only them.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import site
import stat
import sys
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import grader

# What every course's hand-ins may import besides the stdlib: numpy and torch; IPython (the Jupyter
# kernel notebooks run in) and `future` (CS231n's `from past.builtins import xrange`) where installed.
ALWAYS = ("numpy", "torch", "ipython", "future")
# The grader's modules the worker imports (the zygote has them loaded before any job): everything else of
# the package (judging, exercises' references, reports) does not exist for a hand-in. Measured as the
# `grader.*` entries of a worker's sys.modules; tests/test_import_walls.py checks that the list holds them.
WORKER_FILES = (
    "__init__.py",
    "errors.py",
    "outcomes.py",
    "text.py",
    "handin/__init__.py",
    "handin/defining.py",
    "handin/notebooks.py",
    "sandbox/__init__.py",
    "sandbox/credentials.py",
    "sandbox/landlock.py",
    "sandbox/plot_fonts.py",
    "sandbox/protocol.py",
    "sandbox/removal.py",
    "sandbox/sched_attr.py",
    "sandbox/seeding.py",
    "sandbox/walls.py",
    "sandbox/zygote.py",
    "sandbox/zygote_references.py",
    "sandbox/worker",
)
_PACKAGE_FOLDERS = ("site-packages", "dist-packages")
# The system's package folders, under what the sandbox shows of the machine (isolation._SYSTEM_DIRS)
_SYSTEM_FOLDERS = tuple(
    f"{top}{lib}/python{version}/{kind}"
    for top in ("/usr", "/usr/local", "")
    for lib in ("/lib", "/lib64")
    for version in ("3", "3.*")
    for kind in _PACKAGE_FOLDERS
)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_REQUIRES = re.compile(r"^Requires-Dist:\s*(.+?)\s*$", re.MULTILINE)
# A RECORD line's path: its first part, and its second where it has more than one ("" otherwise).
_HEADS = re.compile(r"^([^,/\n]*)(?:/([^,/\n]*))?", re.MULTILINE)
_PACKAGES = re.compile(r"^([^,/\n]+)/__init__\.py,", re.MULTILINE)
_EXTRA = re.compile(r"\bextra\s*==")


@dataclass(frozen=True)
class Entry:
    path: str  # relative to its root: "numpy", "__pycache__/six.cpython-311.pyc", "nvidia/cublas"
    folder: bool


@dataclass(frozen=True)
class Root:
    """A folder where packages are installed, and what of it a hand-in sees (nothing else of it)."""

    path: str  # real path
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class View:
    roots: tuple[Root, ...]  # parents before what they hold
    distributions: tuple[str, ...]  # allowed, by name: what the view was made of
    # The top-level modules installed but not in the view, by name only: the worker's finder tells a
    # student that the course does not declare one (the wall alone would say "No module named"), and
    # makes a library's optional import of one fail as if it were missing.
    hidden: tuple[str, ...] = ()

    @property
    def torch(self) -> bool:
        """Whether torch is in it: asked for, or required by a distribution the course declares."""
        return "torch" in self.distributions

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.message(), sort_keys=True).encode()).hexdigest()[:16]

    def names(self) -> dict[str, list[str]]:
        """What the worker's finders know of the view (worker/imports.py): the folders of installed
        packages, and the modules hidden there, by name."""
        package = os.path.realpath(os.path.dirname(grader.__file__))
        return {"folders": [r.path for r in self.roots if r.path != package], "hidden": list(self.hidden)}

    def message(self) -> dict[str, object]:
        """The view as the zygote reads it (plain JSON)."""
        return {
            "roots": [
                {"path": r.path, "entries": [[e.path, e.folder] for e in r.entries]} for r in self.roots
            ]
        }


def view_for(declared: tuple[str, ...], torch: bool = True) -> View:
    """The view of a course declaring the distributions `declared` (pip names; order and case do not
    matter); without torch (and what only torch requires) unless `torch` or a declared one requires it."""
    return _view(tuple(sorted({_normal(d) for d in declared})), torch)


@lru_cache(maxsize=16)
def _view(declared: tuple[str, ...], torch: bool) -> View:
    roots = {path: set[Entry]() for path in install_folders()}
    always = ALWAYS if torch else tuple(name for name in ALWAYS if name != "torch")
    distributions = _closure((*always, *declared))
    for distribution in distributions.values():
        located = os.path.realpath(str(distribution.locate_file("")))
        if located in roots:
            roots[located] |= _entries(distribution, located)
    package = os.path.realpath(os.path.dirname(grader.__file__))
    roots[package] = {e for e in (_entry(package, f) for f in WORKER_FILES) if e is not None}
    ordered = sorted(roots, key=lambda p: (p.count(os.sep), p))
    visible = {_module(e.path.split("/", 1)[0]) for entries in roots.values() for e in entries}
    installed = {_module(name) for root in install_folders() for name in _listing(root)}
    return View(
        tuple(Root(p, tuple(sorted(roots[p], key=lambda e: e.path))) for p in ordered),
        tuple(sorted(distributions)),
        tuple(sorted(n for n in installed - visible if n.isidentifier())),
    )


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _module(entry: str) -> str:
    """The module an entry of a packages folder is imported as: yaml for yaml, six.py, _yaml.cpython-311-
    x86_64-linux-gnu.so; "" for what is no module (a dist-info, a .pth, numpy.libs)."""
    if entry.endswith((".dist-info", ".egg-info", ".pth", ".libs", ".data")):
        return ""
    return entry.split(".", 1)[0]


def install_folders() -> tuple[str, ...]:
    """Every folder packages may be installed in that the sandbox shows, as real paths: the environment's
    site-packages, the base interpreter's (a virtual environment hides it from sys.path, not from a path
    opened directly), any other such import path, and the system's (Debian's python3-yaml in
    /usr/lib/python3/dist-packages is built for the same interpreter: `sys.path.append` loads it)."""
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    folders = set(site.getsitepackages(sorted(prefixes)))
    stdlib = os.path.dirname(os.__file__)
    folders |= {p for p in sys.path if p and os.path.basename(p) in _PACKAGE_FOLDERS}
    for pattern in _SYSTEM_FOLDERS:
        folders |= set(glob.glob(pattern))
    real = {os.path.realpath(f) for f in folders if os.path.isdir(f)}
    return tuple(sorted(f for f in real if f != os.path.realpath(stdlib)))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(names: tuple[str, ...]) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions named, and all they require (an extra's requirements aside)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    waiting = [_normal(n) for n in names]
    while waiting:
        name = waiting.pop()
        if name in found:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # declared but not installed: nothing of it to show (its import fails as missing)
        found[name] = distribution
        for requirement in _requirements(distribution):
            requirement_name = _NAME.match(requirement)
            marker = requirement.partition(";")[2]
            if requirement_name is not None and not _EXTRA.search(marker):
                # A marker for another platform or Python: the distribution is simply not installed
                waiting.append(_normal(requirement_name.group(1)))
    return found


def _requirements(distribution: importlib.metadata.Distribution) -> list[str]:
    """Its Requires-Dist lines, read from the headers (the email parser took 40% of the view's time)."""
    text = distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or ""
    headers = text.split("\n\n", 1)[0]
    return _REQUIRES.findall(headers)


def _entries(distribution: importlib.metadata.Distribution, root: str) -> set[Entry]:
    """What `distribution` installed in `root`, as the entries a hand-in may see there: its top-level
    folders and files, the files of its own in shared folders (`__pycache__`), and its part of a
    namespace package (`nvidia/cublas`, `mpl_toolkits/mplot3d`)."""
    listed = distribution.read_text("RECORD")
    if listed is None:  # installed without a RECORD (an old egg-info): its top-level names
        names = (distribution.read_text("top_level.txt") or "").split()
        return {e for e in (_entry(root, n) for n in names) if e is not None}
    if listed.startswith('"') or '\n"' in listed:  # a quoted path (it holds a comma): rare
        import csv

        paths = [row[0] for row in csv.reader(listed.splitlines()) if row]
        heads = {tuple(p.split("/")[:2]) for p in paths}
    else:  # torch's RECORD has 14,600 lines: its first two path parts, by one regular expression
        heads = set(_HEADS.findall(listed))
    packages = set(_PACKAGES.findall(listed))
    chosen: set[str] = set()
    for head in heads:
        first, second = head[0], (head[1] if len(head) > 1 else "")
        if first in ("..", ""):
            continue  # scripts and data installed outside the folder
        if not second:
            chosen.add(first)
        elif first == "__pycache__" or (first not in packages and "." not in first):
            # a shared folder: the namespace package's part, or the module's compiled file
            chosen.add(f"{first}/{second}")
        else:
            chosen.add(first)  # its package, its dist-info, its .libs
    return {e for e in (_entry(root, c) for c in chosen if ".." not in c) if e is not None}


def _entry(root: str, relative: str) -> Entry | None:
    """The entry at `relative` in `root` where it is a plain folder or file (a link is not followed, and
    not shown: its target would have to be)."""
    try:
        status = os.lstat(os.path.join(root, relative))
    except OSError:
        return None
    if stat.S_ISDIR(status.st_mode):
        return Entry(relative, True)
    if stat.S_ISREG(status.st_mode):
        return Entry(relative, False)
    return None


def stage_skeleton(view: View, folder: Path) -> Path:
    """An empty copy of the view's layout in `folder` (once per view: its digest names it), where the
    worker binds the entries under bubblewrap: a folder or an empty file per entry, and the folders
    that lead to the roots inside each root."""
    target = folder / view.digest
    if target.is_dir():
        return target
    with _staging_lock(target):  # staged ahead by another thread: waited for, not staged twice
        return _staged(view, folder, target)


_LOCKS_LOCK = threading.Lock()
_LOCKS: dict[Path, threading.Lock] = {}


def _staging_lock(target: Path) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(target, threading.Lock())


def _staged(view: View, folder: Path, target: Path) -> Path:
    if target.is_dir():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    # A folder of its own: another process's grader never shares the slot, but a half-made layout is
    # never where a worker binds it.
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f".{view.digest}-"))
    for index, root in enumerate(view.roots):
        base = staging / str(index)
        base.mkdir(mode=0o755)
        for entry in root.entries:
            place = base / entry.path
            place.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            if entry.folder:
                place.mkdir(exist_ok=True, mode=0o755)
            else:
                place.touch(mode=0o644)
        for inner in view.roots[index + 1 :]:  # a root inside this one: its place, empty
            if inner.path.startswith(root.path + os.sep):
                (base / os.path.relpath(inner.path, root.path)).mkdir(parents=True, exist_ok=True)
    for made in (staging, *staging.rglob("*")):
        made.chmod(0o755 if made.is_dir() else 0o644)  # readable by a slot's own uid
    try:
        staging.rename(target)
    except OSError:
        if not target.is_dir():
            raise
        shutil.rmtree(staging)  # the other one's is in place: the same layout
    return target
