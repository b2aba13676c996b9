"""The /help text: the bridge's own commands, then the agent's."""

from __future__ import annotations

from ..channels.bridge_commands import BRIDGE_COMMANDS
from ..channels.types import MenuCommand


def command_list(agent: str, agent_commands: tuple[MenuCommand, ...]) -> str:
    """Every command a conversation can use: the bridge's own, then the agent's (with their other names)."""
    lines = ["Commands here:", *(f"/{c.name} — {c.description}" for c in BRIDGE_COMMANDS)]
    own = {c.name for c in BRIDGE_COMMANDS}
    theirs = [c for c in agent_commands if c.name not in own]
    if theirs:
        lines += ["", f"Commands of agent {agent}:"]
        for command in theirs:
            also = f" (also /{', /'.join(command.aliases)})" if command.aliases else ""
            lines.append(f"/{command.name}{also} — {command.description}")
    return "\n".join(lines)
