"""What RunWield knows of one kind of ACP agent: the mode in which it asks the person, and the modes it approves in."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import AgentConfig


@dataclass(frozen=True)
class AgentAdapter:
    """One kind of agent. ``asking_mode`` is the mode its sessions start in (the one where it asks before it writes or
    runs anything); ``self_approving`` are the modes in which it approves its own actions, so nothing reaches the person."""

    name: str
    detect: tuple[str, ...] = ()
    """Words in ``[agents.NAME] command`` that say the agent is of this kind."""
    asking_mode: str | None = None
    self_approving: frozenset[str] = frozenset()

    def mode(self, config: AgentConfig) -> str | None:
        """The mode the agent's sessions run in: ``[agents.NAME] mode``, else the one that asks."""
        return config.mode or self.asking_mode

    def approves_itself(self, mode: str | None) -> bool:
        """Whether the agent approves its own writes and commands in ``mode``."""
        return mode in self.self_approving

    def launch(self, config: AgentConfig) -> AgentConfig:
        """The agent's configuration as started: its command as configured (an adapter may add to it)."""
        return config

    def mode_via_acp(self) -> bool:
        """Whether the mode is chosen over ACP (``session/set_mode``) once a session is open, not at launch."""
        return True
