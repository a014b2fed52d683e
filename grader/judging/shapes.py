"""The shape rule: which returned shapes are graded, and the likely cause of one that is not.

THE RULE, for every return of every exercise, whatever its size: a returned array whose shape differs
from the expected one only by axes of length 1, added or dropped anywhere, is graded as the expected
shape (the same entries in the same order), and the result says so in a note. So (1, 7) and (7, 1) are
graded as (7,), (1,) and (1, 1) as (), (1, C, 1, 1) as (C,) and (C,) as (1, C, 1, 1). Any other shape
is an error on that trial, with a hint at the likely cause, from the shapes alone:

- the shape of an input (of `x` where the gradient of `gamma` is due): a gradient has the shape of what
  it is taken with respect to; sum over the axes the parameter is broadcast along;
- the expected axes with others around them ((N, C, H, W) or (N, C) for (C,)): for a gradient, the sum
  over the batch axes missing; for a value, an array broadcast against one with more axes than the code
  expects (a (1, C, 1, 1) parameter indexed as if it were (C,));
- the expected axes in another order: transposed (or permuted);
- as many entries in another arrangement: flattened, or reshaped wrongly;
- an axis of the expected length where 1 is due, or 1 where the length is due: a sum over that axis
  missing, or one too many (keepdims, broadcasting).

Size-1 axes are no cause of any refusal: a shape that squeezes to the expected one is always graded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

Shape = tuple[int, ...]


def squeezed(shape: Shape) -> Shape:
    return tuple(n for n in shape if n != 1)


def fits(expected: Shape, got: Shape) -> bool:
    """Whether a return of shape `got` is graded against the expected shape: the same axes but those of
    length 1 (the rule above)."""
    return tuple(got) == tuple(expected) or squeezed(got) == squeezed(expected)


def note(expected: Shape, got: Shape) -> str | None:
    """What the result says of a return graded in another shape than the expected one; None if the same."""
    if tuple(got) == tuple(expected) or not fits(expected, got):
        return None
    return (
        f"returned with shape {tuple(got)} where {tuple(expected)} is due: graded as {tuple(expected)}, "
        "since they differ only by axes of length 1 (the same entries in the same order)"
    )


def problem(
    expected: Shape, got: Shape, inputs: Mapping[str, Shape] | None = None, wrt: str | None = None
) -> str | None:
    """Words for a shape the rule refuses, with the likely cause; None where it fits.

    `inputs`: the trial's inputs' shapes, by name; `wrt`: the input the return is a gradient with
    respect to (None: a value).
    """
    expected, got = tuple(expected), tuple(got)
    if fits(expected, got):
        return None
    return f"shape {got}, expected {expected}{_cause(expected, got, inputs or {}, wrt)}"


def _cause(expected: Shape, got: Shape, inputs: Mapping[str, Shape], wrt: str | None) -> str:
    like = [name for name, shape in inputs.items() if name != wrt and tuple(shape) == got]
    if like and wrt is not None:
        return (
            f" (the shape of {like[0]}: a gradient has the shape of what it is taken with respect to, "
            f"{wrt} {expected}; sum over the axes {wrt} is broadcast along)"
        )
    if like:
        return f" (the shape of the input {like[0]}: is the right array returned?)"
    if _embedded(squeezed(expected), squeezed(got)):
        if wrt is not None:
            return (
                f" (the sum over the batch axes missing: {wrt} is broadcast over them, so its gradient sums "
                f"over them, to {wrt}'s shape {expected})"
            )
        return (
            " (extra axes around the expected ones: an array broadcast against one with more axes than the "
            "code expects, as a parameter of shape (1, C, 1, 1) indexed as if it were (C,))"
        )
    if squeezed(got) == tuple(reversed(squeezed(expected))):
        return " (transposed?)"
    if sorted(squeezed(got)) == sorted(squeezed(expected)):
        return " (the expected axes in another order: transposed or permuted?)"
    if math.prod(got) == math.prod(expected):
        if len(squeezed(got)) == 1 or len(squeezed(expected)) == 1:
            return " (flattened?)"
        return " (same entries, other shape: reshape?)"
    if _embedded(squeezed(got), squeezed(expected)):
        return " (summed over an axis that is due, or broadcasting missing?)"
    return ""


def _embedded(inner: Shape, outer: Shape) -> bool:
    """Whether `outer` holds `inner`'s axes in order, with more axes among them."""
    if len(inner) >= len(outer):
        return False
    position = 0
    for n in outer:
        if position < len(inner) and n == inner[position]:
            position += 1
    return position == len(inner)
