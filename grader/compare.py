"""Compare one returned array with its float64 reference, entry by entry.

Each entry gets its absolute and relative error, its error in units in the last place (ulps) of the
precision the student worked in, and its ratio to the rounding envelope of that precision. The envelope
is a first estimate, `ENVELOPE_FACTOR · eps · (|expected| + max|expected|)`: it scales with the entry and
with the array, because rounding in shared intermediates (the `1 - s` of a sigmoid's derivative) spreads
across a whole gradient. Bugs (transpose, sign, factor, wrong product) land orders of magnitude beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.spec import ReturnSpec, Verdict

ENVELOPE_FACTOR = 64.0
MAX_LISTED_ENTRIES = 10


@dataclass(frozen=True)
class Precision:
    name: str
    eps: float  # spacing of numbers just above 1
    tiny: float  # smallest normal number


PRECISIONS = {
    "float64": Precision("float64", 2.0**-52, float(np.finfo(np.float64).tiny)),
    "float32": Precision("float32", 2.0**-23, float(np.finfo(np.float32).tiny)),
    "bfloat16": Precision("bfloat16", 2.0**-7, float(np.finfo(np.float32).tiny)),
    "float16": Precision("float16", 2.0**-10, float(np.finfo(np.float16).tiny)),
}


@dataclass(frozen=True)
class EntryError:
    index: tuple[int, ...]
    expected: float
    got: float
    abs_error: float
    rel_error: float
    ulps: float
    envelope_ratio: float


@dataclass(frozen=True)
class Comparison:
    """One return of one trial, judged."""

    trial: int
    verdict: Verdict
    precision: str = "float64"
    precision_reason: str = ""
    max_ratio: float = 0.0  # worst |error| / envelope over the entries
    max_rel_error: float = 0.0
    failing: tuple[EntryError, ...] = ()  # worst first
    failing_count: int = 0
    entries: int = 0
    failing_mask: np.ndarray | None = None
    problem: str = ""  # for verdict error: what was wrong with the value


def infer_precision(got: np.ndarray, dtype: str) -> tuple[Precision, str]:
    """The precision the student computed in: the returned dtype, or float32 hidden in a float64 array."""
    if dtype in PRECISIONS and dtype != "float64":
        return PRECISIONS[dtype], f"returned as {dtype}"
    if dtype == "float64" and got.size:
        finite = got[np.isfinite(got)]
        in_float32 = np.array_equal(finite.astype(np.float32).astype(np.float64), finite)
        in_float16 = np.array_equal(finite.astype(np.float16).astype(np.float64), finite)
        # Values that all fit float16 are more likely simple numbers (0, 0.5, 1) than float16 work.
        if finite.size and in_float32 and not in_float16:
            return PRECISIONS["float32"], "float64 array holding float32 values"
    return PRECISIONS["float64"], f"returned as {dtype}"


def ulp(values: np.ndarray, precision: Precision) -> np.ndarray:
    magnitude = np.maximum(np.abs(values), precision.tiny)
    spacing: np.ndarray = np.exp2(np.floor(np.log2(magnitude))) * precision.eps
    return spacing


def envelope(expected: np.ndarray, precision: Precision) -> np.ndarray:
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    allowed: np.ndarray = ENVELOPE_FACTOR * (precision.eps * (np.abs(expected) + scale) + precision.tiny)
    return allowed


def shape_problem(expected_shape: tuple[int, ...], got_shape: tuple[int, ...]) -> str | None:
    """Words for a shape mismatch, or None when shapes are compatible (one-element returns are scalars)."""
    expected_size = int(np.prod(expected_shape, dtype=np.int64))
    got_size = int(np.prod(got_shape, dtype=np.int64))
    if expected_size == 1 and got_size == 1:
        return None
    if tuple(got_shape) == tuple(expected_shape):
        return None
    hint = ""
    if len(got_shape) == 2 and tuple(got_shape) == tuple(reversed(expected_shape)):
        hint = " (transposed?)"
    elif got_size == expected_size and (len(got_shape) == 1 or len(expected_shape) == 1):
        hint = " (flattened?)"
    elif got_size == expected_size:
        hint = " (same entries, other shape: reshape?)"
    elif len(got_shape) == len(expected_shape) and all(
        g in (e, 1) for g, e in zip(got_shape, expected_shape, strict=True)
    ):
        hint = " (summed over an axis, or broadcasting missing?)"
    return f"shape {tuple(got_shape)}, expected {tuple(expected_shape)}{hint}"


def compare(trial: int, spec: ReturnSpec, expected: np.ndarray, got: np.ndarray, dtype: str) -> Comparison:
    problem = shape_problem(expected.shape, got.shape)
    if problem is not None:
        return Comparison(trial, Verdict.ERROR, problem=problem, entries=int(expected.size))
    got64 = got.astype(np.float64).reshape(expected.shape)
    precision, reason = infer_precision(got, dtype)
    both_inf = np.isinf(expected) & (expected == got64)
    abs_error = np.where(both_inf, 0.0, np.abs(got64 - expected))
    abs_error = np.where(np.isnan(abs_error), np.inf, abs_error)
    allowed = envelope(expected, precision)
    ratio = abs_error / allowed
    within_envelope = ratio <= 1.0
    if spec.explicit_tolerance:
        tolerance = (spec.atol or 0.0) + (spec.rtol or 0.0) * np.abs(expected)
        within_tolerance = abs_error <= tolerance
    else:
        within_tolerance = within_envelope
    failing_mask = ~within_tolerance
    failing_count = int(failing_mask.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_error = np.where(abs_error == 0, 0.0, abs_error / np.abs(expected))
    max_ratio = float(ratio.max()) if ratio.size else 0.0
    if failing_count == 0:
        verdict = Verdict.PASS
    elif bool(within_envelope.all()):
        verdict = Verdict.PRECISION
    else:
        verdict = Verdict.LOGIC
    failing: tuple[EntryError, ...] = ()
    if failing_count:
        units = ulp(expected, precision)
        flat = np.flatnonzero(failing_mask)
        worst = flat[np.argsort(-ratio.reshape(-1)[flat], kind="stable")][:MAX_LISTED_ENTRIES]
        failing = tuple(
            EntryError(
                index=tuple(int(i) for i in np.unravel_index(k, expected.shape)),
                expected=float(expected.reshape(-1)[k]),
                got=float(got64.reshape(-1)[k]),
                abs_error=float(abs_error.reshape(-1)[k]),
                rel_error=float(rel_error.reshape(-1)[k]),
                ulps=float(abs_error.reshape(-1)[k] / units.reshape(-1)[k]),
                envelope_ratio=float(ratio.reshape(-1)[k]),
            )
            for k in worst
        )
    return Comparison(
        trial=trial,
        verdict=verdict,
        precision=precision.name,
        precision_reason=reason,
        max_ratio=max_ratio,
        max_rel_error=float(rel_error.max()) if rel_error.size else 0.0,
        failing=failing,
        failing_count=failing_count,
        entries=int(expected.size),
        failing_mask=failing_mask if failing_count else None,
    )
