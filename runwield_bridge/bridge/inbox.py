"""The Bridge as one channel sees it: the ``Inbox`` of the channel contract."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..channels.contract import Channel
from ..channels.types import BridgeError, ButtonPress, Conversation, IncomingMessage, ModelMenu, Sender
from .dedupe import Delivery
from .delivery import deliver
from .bridge import Bridge
from .handed_events import answer_from, answer_json, menu_from, menu_json, message_from, message_json, press_from, press_json, request_from, request_json
from .instances import HANDED_OVER, HandoffRecord
from .sealed_handoffs import seal, unseal


INTERRUPTED = (
    "⚠️ The bridge restarted while it was handling a message or button press here, so it was not handled "
    "again (nothing is answered twice). If you got no answer, send it again."
)
NO_ANSWER = "The bridge instance handling this conversation did not answer in time, so this may not have been done; try again."


class ChannelInbox:
    """The Bridge as one channel sees it (the ``Inbox`` of the channel contract); making one adds the channel to the Bridge."""

    def __init__(self, bridge: Bridge, channel: Channel) -> None:
        bridge.add_channel(channel)
        self.bridge = bridge
        self.channel = channel
        self._claiming = asyncio.Lock()
        self._routing: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def first_delivery(self, update_id: str, conversation: Conversation, sender: Sender) -> AsyncIterator[bool]:
        """Claim an update durably: True to handle it (marked finished on leaving), False for a redelivery.

        Claims are taken one at a time, so updates reach the Bridge in the order they came.
        """
        async with self._claiming:
            delivery = await self.bridge.deliveries.claim(self.channel.name, update_id)
        try:
            if delivery is Delivery.INTERRUPTED and self.allows(sender, conversation):
                await deliver(self.channel, conversation, INTERRUPTED)
            yield delivery is Delivery.FIRST
        except asyncio.CancelledError:
            raise  # stopped mid-way: left unfinished, so a redelivery after the restart is reported
        except Exception:
            await self._finish(update_id, delivery)
            raise
        await self._finish(update_id, delivery)

    async def _finish(self, update_id: str, delivery: Delivery) -> None:
        if delivery is not Delivery.REPEAT:  # an interrupted update is reported once, then it is finished too
            await self.bridge.deliveries.finish(self.channel.name, update_id)

    async def receive_message(self, message: IncomingMessage) -> asyncio.Task[None] | None:
        """Handle the message here, or hand it to the instance that owns its conversation."""
        async with self._routed(message.conversation) as owner:
            if owner is None:
                return await self.bridge.receive_message(self.channel, message)
            assert self.bridge.instances is not None
            sealed = seal(self.channel.settings, await message_json(message))  # its text never in the database
            await self.bridge.instances.hand_off(owner, self.channel.name, "message", sealed)
            return None

    async def receive_press(self, press: ButtonPress) -> str:
        """Handle the press here, or hand it to the instance that owns its conversation (and asked its question)."""
        async with self._routed(press.conversation) as owner:
            if owner is None:
                return self.bridge.receive_press(self.channel, press)
            assert self.bridge.instances is not None
            handoff = await self.bridge.instances.hand_off(owner, self.channel.name, "press", press_json(press))
        return await self.bridge.instances.answer_for(handoff) or HANDED_OVER

    async def listen_alone(self, listen: Callable[[], Awaitable[None]]) -> None:
        if self.bridge.instances is None:
            await listen()
        else:
            await self.bridge.instances.exclusively(f"listen:{self.channel.name}", listen)

    async def take_handoff(self, handoff: HandoffRecord) -> str | None:
        """An event another instance received for a conversation this one owns, handled as if received here; the answer
        to send back (a press's notice, a request's result), None for a message."""
        if handoff.kind == "message":
            await self.bridge.receive_message(self.channel, self.handed_event(handoff))
            return None
        if handoff.kind == "press":
            return self.bridge.receive_press(self.channel, press_from(handoff.payload))
        conversation, args = request_from(handoff.payload)
        try:
            result = await self._run(handoff.kind, conversation, args)
        except BridgeError as exc:
            return answer_json(error=exc)
        return answer_json(menu_json(result) if handoff.kind == "models" else result)

    def handed_event(self, handoff: HandoffRecord) -> IncomingMessage | ButtonPress:
        """The message (unsealed) or button press a handoff carries."""
        if handoff.kind == "message":
            return message_from(unseal(self.channel.settings, handoff.payload))
        return press_from(handoff.payload)

    @contextlib.asynccontextmanager
    async def _routed(self, conversation: Conversation) -> AsyncIterator[str | None]:
        """The instance owning the conversation if it is another one (None: handle it here); a conversation's events
        are routed one at a time, in the order they came."""
        instances = self.bridge.instances
        if instances is None:
            yield None
            return
        async with self._routing.setdefault(conversation.key, asyncio.Lock()):
            owner = await instances.owner(conversation.key)
            yield None if owner == instances.id else owner

    async def _request(self, kind: str, conversation: Conversation, args: dict[str, Any], decode: Callable[[Any], Any] = lambda value: value) -> Any:
        """Run a request of the channel's where the conversation's turns run: here, or on its owner (its result sent
        back as JSON, ``decode``d here; a BridgeError raised there is raised here)."""
        async with self._routed(conversation) as owner:
            if owner is None:
                return await self._run(kind, conversation, args)
            assert self.bridge.instances is not None
            handoff = await self.bridge.instances.hand_off(owner, self.channel.name, kind, request_json(conversation, args))
        answer = await self.bridge.instances.answer_for(handoff)
        if answer is None:
            raise BridgeError(NO_ANSWER)
        return decode(answer_from(answer))

    async def _run(self, kind: str, conversation: Conversation, args: dict[str, Any]) -> Any:
        """A request run here, where the conversation's turns run."""
        state = await self.bridge.open_state(self.channel, conversation)
        if kind == "cancel":
            return await self.bridge.turns.cancel(state)
        async with state.lock:
            if kind == "new_session":
                return await self.bridge.sessions.new_session(state, args["agent"], args["cwd"])
            if kind == "resume":
                return (await self.bridge.sessions.resume(state, args["session_id"]))[0]
            if kind == "models":
                return await self.bridge.models(state)
            if kind == "choose_model":
                return await self.bridge.choose_model(state, args["value"])
        raise ValueError(f"no request named {kind!r}")

    async def new_session(self, conversation: Conversation, agent: str | None = None, cwd: str | None = None) -> str:
        return str(await self._request("new_session", conversation, {"agent": agent, "cwd": cwd}))

    async def resume(self, conversation: Conversation, session_id: str) -> str:
        return str(await self._request("resume", conversation, {"session_id": session_id}))

    async def cancel(self, conversation: Conversation) -> bool:
        return bool(await self._request("cancel", conversation, {}))

    def awaiting_answer(self, conversation: Conversation) -> bool:
        return self.bridge.questions.has_open(conversation)

    def allows(self, sender: Sender, conversation: Conversation) -> bool:
        return self.bridge.allows(self.channel, sender, conversation)

    async def is_bound(self, conversation: Conversation) -> bool:
        return await self.bridge.is_bound(conversation)

    async def models(self, conversation: Conversation) -> ModelMenu | None:
        return await self._request("models", conversation, {}, menu_from)

    async def choose_model(self, conversation: Conversation, value: str) -> str:
        return str(await self._request("choose_model", conversation, {"value": value}))
