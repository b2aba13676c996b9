"""Per-agent knowledge, one small adapter per kind of ACP agent, chosen by ``[agents.NAME] adapter`` or its command."""

from __future__ import annotations

from ...config import AgentConfig
from .base import AgentAdapter
from .claude import CLAUDE
from .codex import CODEX
from .gemini import GEMINI
from .generic import GENERIC
from .opencode import OPENCODE
from .qwen import QWEN

ADAPTERS = {adapter.name: adapter for adapter in (CODEX, QWEN, CLAUDE, GEMINI, OPENCODE, GENERIC)}


def adapter_for(config: AgentConfig) -> AgentAdapter:
    """``[agents.NAME] adapter`` when set, else the first adapter whose words occur in the command, else the generic one."""
    if config.adapter is not None:
        return ADAPTERS[config.adapter]
    words = " ".join(config.command)
    return next((adapter for adapter in ADAPTERS.values() if any(word in words for word in adapter.detect)), GENERIC)


__all__ = ["ADAPTERS", "AgentAdapter", "adapter_for"]
