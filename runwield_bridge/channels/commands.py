"""Bridge commands, handled before anything reaches an agent: /cancel, /new, /resume, /status."""

from __future__ import annotations

from dataclasses import dataclass

from .contract import MenuCommand

BRIDGE_COMMANDS: tuple[MenuCommand, ...] = (
    MenuCommand("cancel", "Stop the running turn"),
    MenuCommand("new", "Start a new session (optionally on another agent: /new AGENT)"),
    MenuCommand("resume", "Continue an existing session here: /resume SESSION_ID"),
    MenuCommand("status", "Agent, session, model and state of this conversation"),
)
_NAMES = frozenset(command.name for command in BRIDGE_COMMANDS)


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
