"""Bounded history (``_runwield/history``): a window of a Session's saved conversation as ``session/update`` payloads."""

from __future__ import annotations

from collections.abc import Sequence

from .extensions import HistoryEntry, HistoryPage, HistoryRequest
from .updates import Update, wire


def history_page(updates: Sequence[Update], request: HistoryRequest) -> HistoryPage:
    """The ``limit`` entries just before ``before`` (the latest ones when it is absent), oldest first."""
    end = len(updates) if request.before is None else min(request.before, len(updates))
    start = max(0, end - request.limit)
    entries = [HistoryEntry(index=index, update=wire(updates[index])) for index in range(start, end)]
    return HistoryPage(entries=entries, total=len(updates))
