"""The bridge commands a person types, handled before anything reaches the agent: /cancel, /status, /help (and /start),
/queue, /new, /resume, /spawn and /sessions."""

from __future__ import annotations

import contextlib

from ..channels.bridge_commands import GREETING
from ..channels.types import BridgeCommand, BridgeError, Sender
from .child_lines import ChildLines
from .conversation import Conversation, State
from .delivery import say
from .follow_ups import going_next
from .help_text import command_list
from .model_menu import model_name
from .offers import Offers
from .session_picker import show_sessions
from .sessions import Sessions
from .spawn import Spawner
from .turns import Turns

COMMANDS_WAIT = 2.0  # how long /help waits for a just-opened session's list of commands


class Commands:
    """Runs a conversation's bridge commands (its lock held)."""

    def __init__(self, sessions: Sessions, turns: Turns, children: ChildLines, spawner: Spawner, offers: Offers) -> None:
        self.sessions = sessions
        self.turns = turns
        self.children = children
        self.spawner = spawner
        self.offers = offers

    async def run(self, conversation: Conversation, command: BridgeCommand, sender: Sender) -> None:
        channel, chat = conversation.channel, conversation.chat
        if command.name in ("spawn", "sessions") or (command.name == "resume" and not command.argument):
            try:
                if command.name == "spawn":
                    await self.spawner.spawn(conversation, sender, command.argument)
                else:
                    await show_sessions(self.sessions.links, self.offers, conversation)
            except BridgeError as exc:
                await say(channel, chat, str(exc))
        elif command.name == "cancel":
            if not await self.turns.cancel(conversation, self.children.running(conversation.chat, conversation.session_id)):
                await say(channel, chat, "Nothing is running.")
            elif conversation.queue:
                await say(channel, chat, going_next(len(conversation.queue)))
        elif command.name == "status":
            await say(channel, chat, self.status(conversation))
        elif command.name in ("help", GREETING):
            await say(channel, chat, await self._help(conversation, greet=command.name == GREETING))
        elif command.name == "queue":
            await say(channel, chat, await conversation.queue.command(command.argument))
        elif conversation.running:
            await say(channel, chat, f"A turn is running; send /cancel before /{command.name}.")
        else:
            try:
                await self._rebind(conversation, command)
            except BridgeError as exc:
                await say(channel, chat, str(exc))

    async def _rebind(self, conversation: Conversation, command: BridgeCommand) -> None:
        """/new [AGENT] and /resume SESSION_ID."""
        channel, chat = conversation.channel, conversation.chat
        if command.name == "new":
            session_id = await self.sessions.new_session(conversation, command.argument or None)
            await say(channel, chat, f"🆕 New session {session_id} on {conversation.agent}.")
        else:
            session_id, replay = await self.sessions.resume(conversation, command.argument)
            if not channel.capabilities.full_history:
                await say(channel, chat, replay.summary(session_id, conversation.agent or ""))

    async def _help(self, conversation: Conversation, greet: bool) -> str:
        """Every command here (the agent's too, opening the session to learn them); a greeting adds what the bot does."""
        name = conversation.agent or conversation.channel.settings.agent
        if not conversation.running:
            with contextlib.suppress(BridgeError, TimeoutError):
                await self.sessions.ready(conversation)
                await conversation.await_commands(COMMANDS_WAIT)
        text = command_list(conversation.agent or name, conversation.agent_commands)
        if not greet:
            return text
        hello = (
            f"👋 Hello! This chat talks to the coding agent {name}. Tell it what you need in a message: it works in "
            "your project, asks here when it needs an answer (tap a button or reply), and shows its progress and "
            "results as new messages. It can make Plans you review in your browser and then execute them."
        )
        return f"{hello}\n\n{text}\n\n{self.status(conversation)}"

    def status(self, conversation: Conversation) -> str:
        name = conversation.agent or conversation.channel.settings.agent
        link = self.sessions.links.get(name)
        if conversation.state is State.WAITING_FOR_ANSWER:
            activity = "waiting for your answer"
        else:
            activity = "working on a turn" if conversation.running else "idle"
        queue = conversation.queue
        return "\n".join(
            [
                f"Agent: {name} ({link.status if link else 'not configured'})",
                f"Session: {conversation.session_id or 'none yet (your first message starts one)'}",
                f"Model: {model_name(conversation.model_option) or 'unknown'}",
                f"State: {activity}",
                f"Queue: {queue.mode}" + (f" ({len(queue)} waiting)" if queue else ""),
                *filter(None, [self.children.status(conversation.chat, conversation.session_id)]),
            ]
        )
