"""Platforms deliver some updates twice (webhook retries); each is handled once."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable


class RecentKeys:
    """The last ``size`` keys seen."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._seen: OrderedDict[Hashable, None] = OrderedDict()

    def first_time(self, key: Hashable) -> bool:
        """True the first time ``key`` is seen (and remembers it), False for a repeat."""
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return True
