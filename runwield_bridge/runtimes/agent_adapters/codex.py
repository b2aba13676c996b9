"""Codex (``codex-acp``): it advertises no ACP modes; what asks is its approval policy, given on its command line
(``-c approval_policy=...``). ``untrusted`` asks before any command that is not known to be read-only; ``never``
approves everything, and ``on-request``/``on-failure`` let its sandbox decide, which approves everything when the
sandbox is ``danger-full-access`` (where there is no bubblewrap)."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import AgentConfig
from .base import AgentAdapter


@dataclass(frozen=True)
class CodexAdapter(AgentAdapter):
    """Codex's mode is its approval policy, set when it starts."""

    def launch(self, config: AgentConfig) -> AgentConfig:
        policy = ["-c", f'approval_policy="{self.mode(config)}"']
        return config.model_copy(update={"command": [*config.command, *policy]})

    def mode_via_acp(self) -> bool:
        return False


CODEX = CodexAdapter(
    name="codex",
    detect=("codex-acp",),
    asking_mode="untrusted",
    self_approving=frozenset({"never", "on-request", "on-failure"}),
)
