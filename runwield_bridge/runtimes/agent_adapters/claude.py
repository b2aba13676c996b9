"""Claude Agent (``claude-agent-acp``): its ``default`` mode ("Manual") asks before every change; it starts ACP
sessions in ``auto``, where Claude decides on permissions itself, so RunWield switches its sessions to ``default``."""

from __future__ import annotations

from .base import AgentAdapter

CLAUDE = AgentAdapter(
    name="claude",
    detect=("claude-agent-acp", "claude-code-acp"),
    asking_mode="default",
    self_approving=frozenset({"auto", "acceptEdits", "bypassPermissions", "dontAsk"}),
)
