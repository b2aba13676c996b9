"""Bridge commands, handled before anything reaches an agent: /cancel, /new, /resume, /status, /help (and /start)."""

from __future__ import annotations

from dataclasses import dataclass

from ..channels.contract import BRIDGE_COMMANDS
from ..channels.types import MenuCommand

GREETING = "start"
"""What Telegram sends when a person first opens the bot: answered with a greeting and the commands."""
_NAMES = frozenset(command.name for command in BRIDGE_COMMANDS) | {GREETING}


@dataclass(frozen=True, slots=True)
class Command:
    """A bridge command and its argument (empty when none was given)."""

    name: str
    argument: str = ""


def parse_command(text: str) -> Command | None:
    """The bridge command a message is, or None (everything else, other slash commands included, goes to the agent)."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word, _, argument = stripped[1:].partition(" ")
    name = word.lower()
    return Command(name, argument.strip()) if name in _NAMES else None


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
