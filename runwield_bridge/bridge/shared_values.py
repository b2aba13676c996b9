"""One object for many equal ones: what each of many conversations on one agent keeps (the commands its sessions offer,
their model option) is the same for most of them, so each keeps a reference to one copy instead of a copy of its own."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")
KEPT = 256
"""Distinct values kept at most (past that, a new value is used as it is, not shared)."""


class SharedValues(Generic[V]):
    """The first value seen for each key (a value is shared only with values equal to it: its key says so)."""

    def __init__(self, limit: int = KEPT) -> None:
        self._limit = limit
        self._kept: dict[Hashable, V] = {}

    def shared(self, key: Hashable, value: V) -> V:
        kept = self._kept.get(key)
        if kept is not None:
            return kept
        if len(self._kept) < self._limit:
            self._kept[key] = value
        return value
