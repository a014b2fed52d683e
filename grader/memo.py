"""Values derived once from an object and kept while it is among the last few asked about.

A class is graded against one set of trials and references: what every submission needs from them
(their encoded frames, the mistakes' values, the flattened expected values) is computed for the first
submission and reused by the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class PerObject(Generic[Value]):
    """Keyed by the object's identity and a key; thread-safe (a value is computed once, under the lock)."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        # The entry holds the object itself, so its id cannot be reused by another while it is kept.
        self._values: dict[tuple[int, Hashable], tuple[object, Value]] = {}
        self._lock = threading.Lock()

    def get(self, owner: object, key: Hashable, make: Callable[[], Value]) -> Value:
        with self._lock:
            kept = self._values.get((id(owner), key))
            if kept is not None and kept[0] is owner:
                return kept[1]
            value = make()
            if len(self._values) >= self._kept:
                self._values.pop(next(iter(self._values)))
            self._values[id(owner), key] = (owner, value)
            return value
