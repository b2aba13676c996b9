"""The commands a person types that the Bridge handles itself, before anything reaches an agent: /cancel, /new, /resume,
/spawn, /sessions, /status, /help (and /start), /queue."""

from __future__ import annotations

from .types import BridgeCommand, MenuCommand

BRIDGE_COMMANDS: tuple[MenuCommand, ...] = (
    MenuCommand("cancel", "Stop the running turn"),
    MenuCommand("new", "Start a new session (optionally on another agent: /new AGENT)"),
    MenuCommand("resume", "Continue an existing session here: /resume SESSION_ID (no id: choose one)"),
    MenuCommand("status", "Agent, session, model and state of this conversation"),
    MenuCommand("help", "What this bot can do, and every command here"),
    MenuCommand("queue", "Messages sent while the agent works: /queue steer|collect|followup|interrupt, /queue clear"),
    MenuCommand("spawn", "Start an agent on a task: /spawn AGENT [--here | --thread] [--resume SESSION_ID] TASK"),
    MenuCommand("sessions", "The agent's recent sessions, to continue one here"),
)
"""The commands the Bridge itself handles, for channels that offer them in a platform menu."""
GREETING = "start"
"""What Telegram sends when a person first opens the bot: answered with a greeting and the commands."""
_NAMES = frozenset(command.name for command in BRIDGE_COMMANDS) | {GREETING}


def parse_command(text: str) -> BridgeCommand | None:
    """The bridge command a message is, or None (everything else, other slash commands included, goes to the agent)."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word, _, argument = stripped[1:].partition(" ")
    name = word.lower()
    return BridgeCommand(name, argument.strip()) if name in _NAMES else None
