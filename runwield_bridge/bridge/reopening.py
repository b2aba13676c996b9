"""Conversations taken up again: after a start (or a crash), and those of an instance that died.

A conversation bound to the built-in Session Host is reopened at once, so what a Session takes up on its own (an
execution a crash interrupted) reaches it without waiting for a message; one with messages queued sends them. Others
are reopened by their next message. First, the messages a run left unfinished are finished: a cut-off reply says it
was interrupted, a question that it expired.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..channels.contract import Channel
from ..channels.types import BridgeError
from ..channels.types import Conversation as Chat
from ..channels.unfinished import MessageLog, finish_left
from .conversation import Conversation, State
from .conversations import Conversations
from .delivery import say
from .follow_ups import cut_notice
from .instances import Instances
from .sessions import Sessions
from .turns import Turns

log = logging.getLogger(__name__)
BUILTIN_AGENT = "runwield"


class Reopening:
    """Reads each conversation's stored binding and queue once, and reopens conversations after a start or a take-over."""

    def __init__(self, conversations: Conversations, sessions: Sessions, turns: Turns, messages: MessageLog, instances: Instances | None) -> None:
        self.conversations = conversations
        self.sessions = sessions
        self.turns = turns
        self.messages = messages
        self.instances = instances

    async def restore(self, conversation: Conversation) -> None:
        """Read the conversation's stored binding and queue, once; say which queued messages a stopped run cut off."""
        if conversation.restored:
            return
        await self.sessions.restore(conversation)
        conversation.restored = True
        if self.conversations.stored.may_hold(conversation.chat) and (cut := await conversation.queue.load()):
            await say(conversation.channel, conversation.chat, cut_notice(cut))

    async def reopen(self, channel: Channel) -> None:
        """After a start: finish what an earlier run left unfinished, then reopen the channel's conversations on the
        built-in Session Host and those with a queue (not those another instance handles)."""
        await finish_left(channel, self.messages)
        for key in await self._to_reopen(channel):
            if self.instances is None or await self.instances.owner(key) == self.instances.id:
                await self._reopen(channel, key)

    async def take_up(self, channel: Channel, dead: str, keys: Sequence[str]) -> None:
        """Another instance died: finish the messages it left unfinished in ``channel``, then reopen those of its
        conversations (now this instance's) a start reopens; reopening marks the turns it had running interrupted."""
        await finish_left(channel, self.messages, dead)
        wanted = set(await self._to_reopen(channel))
        for key in keys:
            if key in wanted:
                await self._reopen(channel, key)

    async def _to_reopen(self, channel: Channel) -> list[str]:
        bound = await self.sessions.bindings.bound_conversations(f"{channel.name}:", BUILTIN_AGENT)
        return sorted(set(bound) | await self.conversations.stored.scan(channel.name))

    async def _reopen(self, channel: Channel, key: str) -> None:
        if self.conversations.get(key) is not None:  # a message got there first, and opens the session itself
            return
        conversation = self.conversations.open(channel, Chat.from_key(key))
        async with conversation.lock:
            try:
                await self.restore(conversation)
                await self.sessions.ready(conversation)
            except BridgeError as exc:
                log.info("could not reopen %s: %s", key, exc)
                return
            if conversation.state is State.IDLE:  # what waited when the bridge stopped goes now (after a question, else)
                await self.turns.send_queued(conversation)
