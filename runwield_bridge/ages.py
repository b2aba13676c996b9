"""How long ago something happened, in the words a chat list shows (a Plan's, a session's)."""

from __future__ import annotations


def age(seconds: float) -> str:
    """How long ago, roughly: ``just now``, ``5 min ago``, ``3 h ago``, ``2 days ago``."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} min ago"
    if minutes < 48 * 60:
        return f"{minutes // 60} h ago"
    return f"{minutes // (24 * 60)} days ago"
