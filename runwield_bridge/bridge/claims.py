"""Which conversation a session's traffic goes to: its updates, permission requests and questions.

Two conversations can be bound to one session (``/resume``); what the session sends goes to the one whose turn it
is, never to another one, so a turn running elsewhere keeps the session.
"""

from __future__ import annotations

from ..channels.types import BridgeError, MenuCommand
from .command_menu import CommandMenu
from .conversation import Conversation

SessionKey = tuple[str, str]
"""(agent, session id)."""


class Claims:
    """The conversation each (agent, session) is claimed by; commands a session listed before any claimed it."""

    def __init__(self, menu: CommandMenu) -> None:
        self.menu = menu
        self._holders: dict[SessionKey, Conversation] = {}
        self._early_commands: dict[SessionKey, tuple[MenuCommand, ...]] = {}

    def holder(self, key: SessionKey) -> Conversation | None:
        return self._holders.get(key)

    def note_early(self, key: SessionKey, commands: tuple[MenuCommand, ...]) -> None:
        """A new session's commands come before its binding is made: kept for its first claim."""
        self._early_commands[key] = commands

    def claim(self, conversation: Conversation, key: SessionKey) -> None:
        """The session's traffic goes to this conversation (the one about to use it); refused while another runs a turn on it."""
        holder = self._holders.get(key)
        if holder is not None and holder is not conversation and holder.running:
            raise BridgeError(f"Session {key[1]} is busy with a turn in another conversation. Nothing was changed; try again once it is done.")
        self._holders[key] = conversation
        if (commands := self._early_commands.pop(key, None)) is not None:
            self.menu.changed(conversation, commands)

    def put_back(self, key: SessionKey, previous: Conversation | None, conversation: Conversation) -> None:
        """Undo a claim for a session that could not be loaded: its earlier holder has it again."""
        if previous is not None:
            self._holders[key] = previous
        elif (conversation.agent, conversation.session_id) != key:
            self._holders.pop(key, None)

    def bind(self, conversation: Conversation, agent: str, session_id: str, cwd: str | None) -> None:
        """The conversation is bound to a session now (its earlier one let go); it claims it unless another runs a turn there."""
        if conversation.agent is not None and conversation.session_id is not None:
            old = (conversation.agent, conversation.session_id)
            if self._holders.get(old) is conversation:
                del self._holders[old]
        conversation.agent, conversation.session_id, conversation.cwd = agent, session_id, cwd
        holder = self._holders.get((agent, session_id))
        if holder is None or not holder.running:
            self._holders[(agent, session_id)] = conversation
