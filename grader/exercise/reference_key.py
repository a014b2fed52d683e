"""The name an exercise's stored references are kept under: a hash of what determines them, and of nothing
else, so that what changes no reference (a grader release, a typo fixed in a title, a YAML comment, the
points) keeps them, and what changes one (the graph, an input's distribution, the reference file) misses.

References (the trials' inputs with their expected values and rounding spread) are a function of:

- the exercise's fields that draw its trials and compute its values: its id (every trial's generator is
  seeded with it), sizes, inputs, the calls' args, binds and `then` (the sizes handed out as ints are
  trial inputs), graph or reference function, and each return's name and what it is (value, grad, vjp).
  Not its title, description, points, credits, tolerances, shapes, visibility, limits, notebook settings,
  known-wrong files or misconceptions, and not the YAML's comments or layout: the spec as loaded, not its
  bytes;
- the contents of its reference file and of its support files (the reference may import them);
- the seed and the trials drawn (the count, or the one trial replayed);
- REFERENCE_VERSION (grader/exercise/reference.py), raised where the grader's computation changes what it
  computes. Read from the file's text: this module is imported where torch must not be (a cached check);
- numpy's and torch's release series (major.minor). Patch releases and build variants (+cpu, +cu121) fix
  bugs and do not change float64 CPU arithmetic on purpose; a minor release may (a reduction reordered, an
  op's default changed): one cold check per torch release series (about four a year) is the price of not
  having to prove it did not. Last-bit differences alone would not matter (every verdict has an envelope
  far wider), a changed semantic would.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from grader.exercise.spec import Exercise

# The spec's fields that draw trials or compute values (ExerciseSpec); returns are reduced to RETURN_FIELDS.
SPEC_FIELDS = frozenset({"id", "args", "binds", "then", "sizes", "inputs", "graph", "reference"})
RETURN_FIELDS = frozenset({"name", "value", "grad", "vjp"})
_VERSION_LINE = re.compile(r"^REFERENCE_VERSION = (\d+)\s*$", re.MULTILINE)


def references_key(
    exercise: Exercise, seed: int, indices: Sequence[int], file_format: int | str, releases: bool = True
) -> str:
    """The hex sha256 naming the references of trials `indices` of `seed`, stored in `file_format`;
    without numpy's and torch's release series where not `releases` (shipped_references.py says why)."""
    identity: dict[str, Any] = {
        "format": file_format,
        "reference_version": reference_version(),
        "exercise": exercise_identity(exercise),
        "seed": seed,
        "trials": list(indices),
    }
    if releases:
        identity |= {"numpy": _series(np.__version__), "torch": _series(_torch_version())}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def exercise_identity(exercise: Exercise) -> dict[str, Any]:
    """What of the exercise its references depend on: the fields that matter, and its files' contents."""
    spec = exercise.spec
    fields = spec.model_dump(mode="json", by_alias=True, include=set(SPEC_FIELDS))
    returns = [r.model_dump(mode="json", by_alias=True, include=set(RETURN_FIELDS)) for r in spec.returns]
    fields["returns"] = returns
    return {"spec": fields, "files": _files_digest(exercise)}


def _files_digest(exercise: Exercise) -> str:
    """sha256 over the reference file and the support files, each by its place beside the exercise."""
    spec = exercise.spec
    paths = [exercise.path_of(spec.reference_file)] if spec.reference_file is not None else []
    for source in exercise.support_paths:  # the course's too: a reference may import a stand-in
        if source.is_dir():
            # Bytecode is what running them left behind, not what they say.
            paths += sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        else:
            paths.append(source)
    digest = hashlib.sha256()
    for path in paths:
        # relpath, not relative_to: a support folder shared by an assignment lies beside the exercise
        digest.update(os.path.relpath(path, exercise.root).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@cache
def reference_version() -> int:
    """reference.py's REFERENCE_VERSION, read from its text (importing it would import torch)."""
    path = Path(__file__).with_name("reference.py")
    found = _VERSION_LINE.findall(path.read_text(encoding="utf-8"))
    if len(found) != 1:  # the grader's own file: a broken install, not a user's mistake
        raise RuntimeError(f"{path}: no single 'REFERENCE_VERSION = N' line")
    return int(found[0])


def _series(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': the release series."""
    return ".".join(version.split("+")[0].split(".")[:2])


@cache
def _torch_version() -> str:
    """Read from torch's metadata, not by importing it."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "unknown"
