"""The format references are kept and sent in: one .npz of plain arrays (loaded with allow_pickle=False)
and a JSON header checked by a pydantic model, since it is data a grader reads back (from the cache,
shipped with an exercise, or from a zygote's fork), never a pickle. Each input and each return is packed
into one flat array and a table of shapes, all trials together: one zip member per name, not per trial.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping, Sequence
from typing import IO, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from grader.exercise.expected import DeferredSpreads, Expected, References
from grader.exercise.spec import Exercise
from grader.exercise.trials import Trial

FORMAT = 2
_HEADER = "header"


class _TrialHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    sizes: dict[str, int]


class _Header(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[2]
    key: str
    trials: list[_TrialHeader]
    inputs: list[str]
    returns: list[str]
    # The trials whose spreads are kept, where not all (a cold `grader check` computes the spreads it
    # needs only: DeferredSpreads); absent where every trial's is.
    spread_of: list[int] | None = None


class _SpreadsHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[2]
    trials: list[int]
    returns: list[str]


def encoded(exercise: Exercise, references: References, key: str) -> bytes:
    """The references in the cache's format, as bytes (to send to another process)."""
    buffer = io.BytesIO()
    write(buffer, exercise, references, key)
    return buffer.getvalue()


def decoded(data: bytes, exercise: Exercise, key: str) -> References | None:
    """References in the cache's format, read with every check a cache file gets; None where they are not
    whole, or not of this exercise and key. Their spreads may be deferred (a DeferredSpreads without a
    way to compute the missing ones yet)."""
    return load(io.BytesIO(data), exercise, key, partial=True)


def write(handle: IO[bytes], exercise: Exercise, references: References, key: str) -> None:
    trials = references.trials
    spreads = references.spread
    known = spreads.known() if isinstance(spreads, DeferredSpreads) and not spreads.complete else None
    header = _Header(
        format=FORMAT,
        key=key,
        trials=[_TrialHeader(index=t.index, sizes=dict(t.sizes)) for t in trials],
        inputs=_input_names(exercise),
        returns=[r.name for r in exercise.spec.returns],
        spread_of=None if known is None else [t.index for t in trials if t.index in known],
    )
    arrays = {_HEADER: np.frombuffer(header.model_dump_json().encode(), dtype=np.uint8)}
    for name in header.inputs:
        arrays.update(_packed(f"inputs.{name}", [t.inputs[name] for t in trials]))
    spread_of = [t.index for t in trials] if header.spread_of is None else header.spread_of
    for name in header.returns:
        arrays.update(_packed(f"expected.{name}", [references.expected[t.index][name] for t in trials]))
        arrays.update(_packed(f"spread.{name}", [spreads[t][name] for t in spread_of]))
    np.savez(handle, allow_pickle=False, **arrays)


def encoded_spreads(exercise: Exercise, spreads: Mapping[int, Expected]) -> bytes:
    """Some trials' spreads alone (what a zygote's fork computed for judging), in this format."""
    returns = [r.name for r in exercise.spec.returns]
    header = _SpreadsHeader(format=FORMAT, trials=list(spreads), returns=returns)
    arrays = {_HEADER: np.frombuffer(header.model_dump_json().encode(), dtype=np.uint8)}
    for name in returns:
        arrays.update(_packed(f"spread.{name}", [spreads[t][name] for t in spreads]))
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def decoded_spreads(
    data: bytes, exercise: Exercise, wanted: Sequence[int] | None, expected: Mapping[int, Expected]
) -> dict[int, Expected] | None:
    """The spreads `encoded_spreads` gave, where they are those of `wanted` (of any trials of `expected`,
    each once, where None), each of its expected value's shape and never negative; None otherwise."""
    returns = [r.name for r in exercise.spec.returns]
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        header = _SpreadsHeader.model_validate_json(arrays[_HEADER].tobytes())
        trials = header.trials
        if wanted is None and (len(set(trials)) != len(trials) or not set(trials) <= set(expected)):
            return None
        if (wanted is not None and trials != list(wanted)) or header.returns != returns:
            return None
        unpacked = {name: _unpacked(arrays, f"spread.{name}", len(trials)) for name in returns}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, ValidationError):
        return None
    spreads: dict[int, Expected] = {
        t: {name: unpacked[name][i] for name in returns} for i, t in enumerate(trials)
    }
    for trial, values in spreads.items():
        for name, spread in values.items():
            if (
                spread.shape != expected[trial][name].shape
                or spread.dtype != np.float64
                or (spread < 0).any()
            ):
                return None
    return spreads


def _input_names(exercise: Exercise) -> list[str]:
    """A trial's inputs as make_trial builds them: the spec's, then the sizes handed out as ints."""
    return [*exercise.spec.inputs, *exercise.sizes_handed]


def _packed(prefix: str, arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Every trial's array of one name as one flat array and a table of shapes: one zip member per name,
    not one per trial (a thousand trials would be thousands of members, each slow to open)."""
    ndim = arrays[0].ndim if arrays else 0
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    flat = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(0)
    return {f"{prefix}.data": flat, f"{prefix}.shapes": shapes}


def _unpacked(data: Mapping[str, np.ndarray], prefix: str, count: int) -> list[np.ndarray]:
    flat, shapes = data[f"{prefix}.data"], data[f"{prefix}.shapes"]
    if flat.ndim != 1 or flat.dtype.kind not in "fiub" or shapes.ndim != 2 or len(shapes) != count:
        raise ValueError(f"{prefix}: not the packed arrays of {count} trials")
    if shapes.dtype != np.int64 or (shapes < 0).any():
        raise ValueError(f"{prefix}: not a table of shapes")
    ends = np.cumsum(shapes.prod(axis=1))
    if count and ends[-1] != flat.size:
        raise ValueError(f"{prefix}: its shapes do not add up to its data")
    flat.flags.writeable = False  # as make_trials leaves its inputs, and nothing changes expected values
    if not count:
        return []
    starts = [0, *ends[:-1].tolist()]
    return [
        flat[start:end].reshape(shape)
        for start, end, shape in zip(starts, ends.tolist(), map(tuple, shapes.tolist()), strict=True)
    ]


def load(source: IO[bytes], exercise: Exercise, key: str, partial: bool = False) -> References | None:
    """The references stored in `source`, if they are whole and of this exercise as it is now, under
    `key`; None where the file is missing, corrupt or anything else (another format, other inputs or
    returns). `partial`: also those that keep some trials' spreads only (a DeferredSpreads, which the
    caller must give a way to compute the rest); otherwise None for them."""
    try:
        with np.load(source, allow_pickle=False) as npz:
            data = {name: npz[name] for name in npz.files}
        header = _Header.model_validate_json(data[_HEADER].tobytes())
        returns = [r.name for r in exercise.spec.returns]
        if (header.key, header.inputs, header.returns) != (key, _input_names(exercise), returns):
            return None
        if header.spread_of is not None and not partial:
            return None
        count = len(header.trials)
        indices = [t.index for t in header.trials]
        spread_of = indices if header.spread_of is None else header.spread_of
        if not set(spread_of) <= set(indices) or len(set(spread_of)) != len(spread_of):
            return None
        inputs = {name: _unpacked(data, f"inputs.{name}", count) for name in header.inputs}
        expected = {name: _unpacked(data, f"expected.{name}", count) for name in returns}
        spread = {name: _unpacked(data, f"spread.{name}", len(spread_of)) for name in returns}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, ValidationError):
        return None
    trials = tuple(
        Trial(t.index, t.sizes, {name: inputs[name][i] for name in header.inputs})
        for i, t in enumerate(header.trials)
    )
    expected_of = {t: {name: expected[name][i] for name in returns} for i, t in enumerate(indices)}
    spreads = {t: {name: spread[name][i] for name in returns} for i, t in enumerate(spread_of)}
    if header.spread_of is None:
        return References(trials, expected_of, spreads)
    return References(trials, expected_of, DeferredSpreads(indices, spreads))
