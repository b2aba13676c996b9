"""The Bridge as one channel sees it: the ``Inbox`` of the channel contract."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .contract import ButtonPress, Channel, Conversation, IncomingMessage, ModelMenu, Sender

if TYPE_CHECKING:
    from .bridge import Bridge


class ChannelInbox:
    """The Bridge as one channel sees it (the ``Inbox`` of the channel contract)."""

    def __init__(self, bridge: Bridge, channel: Channel) -> None:
        self.bridge = bridge
        self.channel = channel

    async def receive_message(self, message: IncomingMessage) -> asyncio.Task[None] | None:
        return await self.bridge.receive_message(self.channel, message)

    async def receive_press(self, press: ButtonPress) -> str:
        return self.bridge.receive_press(self.channel, press)

    async def new_session(self, conversation: Conversation, agent: str | None = None, cwd: str | None = None) -> str:
        state = await self.bridge.open_state(self.channel, conversation)
        async with state.lock:
            return await self.bridge.new_session(state, agent, cwd)

    async def resume(self, conversation: Conversation, session_id: str) -> str:
        state = await self.bridge.open_state(self.channel, conversation)
        async with state.lock:
            return (await self.bridge.resume(state, session_id))[0]

    async def cancel(self, conversation: Conversation) -> bool:
        return await self.bridge.cancel(await self.bridge.open_state(self.channel, conversation))

    def awaiting_answer(self, conversation: Conversation) -> bool:
        return self.bridge.interactions.has_open(conversation)

    def allows(self, sender: Sender, conversation: Conversation) -> bool:
        return self.bridge.allows(self.channel, sender, conversation)

    async def is_bound(self, conversation: Conversation) -> bool:
        return await self.bridge.is_bound(conversation)

    async def models(self, conversation: Conversation) -> ModelMenu | None:
        state = await self.bridge.open_state(self.channel, conversation)
        async with state.lock:
            return await self.bridge.models(state)

    async def choose_model(self, conversation: Conversation, value: str) -> str:
        state = await self.bridge.open_state(self.channel, conversation)
        async with state.lock:
            return await self.bridge.choose_model(state, value)
