"""Gemini CLI (``gemini --acp``): its ``default`` mode asks before edits and commands; ``autoEdit`` and ``yolo``
approve them itself."""

from __future__ import annotations

from .base import AgentAdapter

GEMINI = AgentAdapter(
    name="gemini",
    detect=("gemini",),
    asking_mode="default",
    self_approving=frozenset({"autoEdit", "yolo"}),
)
