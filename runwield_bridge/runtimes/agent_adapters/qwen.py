"""Qwen Code (``qwen --acp``): its ``default`` mode asks before file edits and commands; 0.24 starts ACP sessions in
``auto``, where its own classifier approves them, so RunWield switches its sessions to ``default``."""

from __future__ import annotations

from .base import AgentAdapter

QWEN = AgentAdapter(
    name="qwen",
    detect=("qwen", "@qwen-code"),
    asking_mode="default",
    self_approving=frozenset({"auto", "auto-edit", "yolo"}),
)
