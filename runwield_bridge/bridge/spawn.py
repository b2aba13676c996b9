"""``/spawn AGENT [--here | --thread] [--resume SESSION_ID] TASK``: a session on an agent, bound here or to a new thread,
its first prompt the task.

``--here`` binds this conversation to the new session; ``--thread`` asks the channel for a new thread (a Discord
thread, a Slack thread, a Telegram forum topic) and binds that. ``--resume`` continues an earlier session of the
agent by ``session/load`` instead of starting one; an id the agent does not know is refused, never replaced by a
new session. The task is sent as the person's own message in the bound conversation, so the allowlist and
everything else that applies to a message apply to it.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ..channels.background import Background
from ..channels.contract import Channel, ThreadOpener
from ..channels.types import BridgeError, IncomingMessage, Sender
from ..channels.types import Conversation as Chat
from ..spawn_request import SpawnMistake, SpawnRequest
from ..spawn_request import parse_spawn as parse
from .conversation import Conversation
from .delivery import deliver
from .instances import Instances
from .sessions import Sessions


def parse_spawn(argument: str, agents: list[str]) -> SpawnRequest:
    """The request a /spawn's argument makes (``spawn_request.py``); BridgeError saying what is wrong."""
    try:
        return parse(argument, agents)
    except SpawnMistake as exc:
        raise BridgeError(str(exc)) from None


class SpawnHost(Protocol):
    """What /spawn needs of the Bridge: a conversation opened, a message handled as if sent there."""

    background: Background
    instances: Instances | None

    async def open_state(self, channel: Channel, chat: Chat) -> Conversation: ...

    async def receive_message(self, channel: Channel, message: IncomingMessage) -> asyncio.Task[None] | None: ...


class Spawner:
    """Runs /spawn for the Bridge."""

    def __init__(self, sessions: Sessions, bridge: SpawnHost) -> None:
        self.sessions = sessions
        self.bridge = bridge

    async def spawn(self, state: Conversation, sender: Sender, argument: str) -> None:
        """Bind a new (or resumed) session of the agent here or to a new thread, and send it the task from ``sender``.
        Runs with this conversation's lock held."""
        request = parse_spawn(argument, sorted(self.sessions.links))
        channel = state.channel
        if not request.thread:
            if state.running:
                raise BridgeError("A turn is running here; send /cancel first, or spawn into a new thread with --thread.")
            session_id = await self._bind(state, request)
            await deliver(channel, state.chat, f"🆕 {request.agent} session {session_id} is bound here.")
            self._send_task(channel, state.chat, sender, request.task)
            return
        if not isinstance(channel, ThreadOpener):
            raise BridgeError(f"The {channel.name} channel cannot open threads. Use /spawn AGENT --here TASK instead.")
        thread = await channel.open_thread(state.chat, request.title)
        if self.bridge.instances is not None:  # the new thread's turns run on this instance, which starts the first
            await self.bridge.instances.owner(thread.key)
        threaded = await self.bridge.open_state(channel, thread)
        async with threaded.lock:
            try:
                session_id = await self._bind(threaded, request)
            except BridgeError as exc:
                await deliver(channel, thread, f"Nothing was started in this thread: {exc}")
                raise
        await deliver(channel, state.chat, f"🧵 {request.agent} session {session_id} started in a new thread: {request.title}")
        if request.task:
            await deliver(channel, thread, f"Task for {request.agent} from {sender.display_name or sender.name}: {request.task}")
        self._send_task(channel, thread, sender, request.task)

    async def _bind(self, state: Conversation, request: SpawnRequest) -> str:
        """Bind the conversation to a new session of the agent, or to the one it resumes (its history summed up)."""
        if request.resume is None:
            return await self.sessions.new_session(state, request.agent)
        session_id, replay = await self.sessions.resume(state, request.resume, request.agent)
        if not state.channel.capabilities.full_history:
            await deliver(state.channel, state.chat, replay.summary(session_id, request.agent))
        return session_id

    def _send_task(self, channel: Channel, conversation: Chat, sender: Sender, task: str) -> None:
        """The task, as the person's own message in the bound conversation: handled once this command is done, so
        after it where that is this conversation."""
        if task:
            message = IncomingMessage(conversation, sender, task)
            self.bridge.background.spawn(self.bridge.receive_message(channel, message), f"spawn:{conversation.key}")
