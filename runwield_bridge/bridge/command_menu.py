"""The commands a conversation's session offers, and the platform menu that shows them beside the bridge commands."""

from __future__ import annotations

from typing import Any

from ..acp.extensions import ALIASES
from ..channels.background import Background
from ..channels.bridge_commands import BRIDGE_COMMANDS
from ..channels.types import MenuCommand
from .conversation import Conversation
from .shared_values import SharedValues

MENUS: SharedValues[tuple[MenuCommand, ...]] = SharedValues()


class CommandMenu:
    """Keeps each conversation's list of its agent's commands, and its channel's menu, up to date."""

    def __init__(self, background: Background) -> None:
        self.background = background

    def changed(self, conversation: Conversation, commands: tuple[MenuCommand, ...]) -> None:
        conversation.agent_commands = commands
        conversation.commands_listed()
        self.background.spawn(self.refresh(conversation), f"menu:{conversation.chat.key}")

    async def refresh(self, conversation: Conversation) -> None:
        if not conversation.channel.capabilities.command_menu:
            return
        names = {command.name for command in BRIDGE_COMMANDS}
        menu = BRIDGE_COMMANDS + tuple(c for c in conversation.agent_commands if c.name not in names)
        if menu != conversation.menu:
            conversation.menu = MENUS.shared(menu, menu)
            await conversation.channel.set_commands(conversation.chat, menu)


def menu_commands(update: Any) -> tuple[MenuCommand, ...]:
    """The commands an ``available_commands_update`` lists (one copy for the sessions that list the same)."""
    menu = tuple(MenuCommand(c.name, c.description, tuple(ALIASES.read(c) or ())) for c in update.available_commands)
    return MENUS.shared(menu, menu)
