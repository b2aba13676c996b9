"""OpenCode (``opencode acp``): it advertises no ACP modes, and by default edits files and runs commands without
asking. What asks is its permission setting, given when it starts (``OPENCODE_PERMISSION``): ``ask`` for edits and
commands, RunWield's default; ``allow`` approves them itself. An ``OPENCODE_PERMISSION`` in ``env`` wins."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...config import AgentConfig
from .base import AgentAdapter


@dataclass(frozen=True)
class OpenCodeAdapter(AgentAdapter):
    """OpenCode's mode is its permission for edits and commands, set when it starts."""

    def launch(self, config: AgentConfig) -> AgentConfig:
        mode = self.mode(config)
        permission = json.dumps({"edit": mode, "bash": mode})
        return config.model_copy(update={"env": {"OPENCODE_PERMISSION": permission, **config.env}})

    def mode_via_acp(self) -> bool:
        return False


OPENCODE = OpenCodeAdapter(name="opencode", detect=("opencode",), asking_mode="ask", self_approving=frozenset({"allow"}))
