"""A conversation's turns: a message prompted, or steered into the running turn, or queued and sent when it settles."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from acp import RequestError

from ..channels.background import Background
from ..channels.types import BridgeError, IncomingMessage
from ..channels.unfinished import MessageLog
from .agent_links import AgentLink
from .asking.pending import ChatQuestions
from .conversation import Conversation, Event, State
from .delivery import say
from .follow_ups import INTERRUPTING, STEERED, queued_notice, sending_notice
from .prompts import prompt_blocks, steered
from .replies import end_aside, open_reply
from .sessions import Sessions
from .turn_errors import agent_stopped, refused_turn

log = logging.getLogger(__name__)
NOT_NOW = "The agent is waiting for your answer to its question above; answer it (or send /cancel) first. Nothing was sent."


class Turns:
    """Starts turns, steers or queues what comes while one runs, and sends the queue when it settles."""

    def __init__(self, sessions: Sessions, questions: ChatQuestions, messages: MessageLog, instance: str | None, background: Background) -> None:
        self.sessions = sessions
        self.questions = questions
        self.messages = messages
        self.instance = instance
        self.background = background
        self.tasks: set[asyncio.Task[None]] = set()
        self.closing = False

    async def start(self, conversation: Conversation, messages: list[IncomingMessage]) -> asyncio.Task[None] | None:
        """Prompt the session with the messages (one prompt); None, the chat told why, if it could not be sent."""
        try:
            link = await self.sessions.ready(conversation)
            blocks = [block for message in messages for block in await prompt_blocks(conversation, link, message)]
        except BridgeError as exc:
            await say(conversation.channel, conversation.chat, str(exc))
            return None
        while conversation.showing is not None:  # a Plan being shown goes first
            await asyncio.shield(conversation.showing)
        if not conversation.fire(Event.PROMPT):
            await say(conversation.channel, conversation.chat, NOT_NOW)
            return None
        turn = asyncio.create_task(self._turn(conversation, link, blocks), name=f"turn:{conversation.chat.key}")
        self.tasks.add(turn)
        turn.add_done_callback(self.tasks.discard)
        return turn

    async def follow_up(self, conversation: Conversation, message: IncomingMessage) -> asyncio.Task[None] | None:
        """A message while a turn runs or settles (or while older ones still wait): steered into the running turn
        where the mode and the agent allow, else queued (stored first); the queue goes at once if nothing runs."""
        channel, chat, queue = conversation.channel, conversation.chat, conversation.queue
        link = self.sessions.links.get(conversation.agent or "")
        if conversation.running and queue.mode == "steer" and not queue and await steered(conversation, link, message):  # never ahead of one waiting
            await say(channel, chat, STEERED)
            return None
        if refusal := await queue.put(message):
            await say(channel, chat, refusal)
            return None
        if not conversation.busy:
            return await self.send_queued(conversation)
        interrupting = queue.mode == "interrupt" and conversation.running
        await say(channel, chat, INTERRUPTING if interrupting else queued_notice(len(queue)))
        if interrupting:
            await self.cancel(conversation)
        return None

    async def send_queued(self, conversation: Conversation) -> asyncio.Task[None] | None:
        """Send the queue's next batch as one turn (the conversation's lock held, no turn running)."""
        batch = await conversation.queue.take()
        if not batch:
            return None
        await say(conversation.channel, conversation.chat, sending_notice(len(batch), len(conversation.queue)))
        turn = await self.start(conversation, [w.message for w in batch])
        if turn is None:  # not sent, and the chat was told why
            await conversation.queue.settled()
        return turn

    async def go_on(self, conversation: Conversation) -> None:
        """Settling (or idle with messages waiting): the next queued batch goes, else the conversation is idle."""
        async with conversation.lock:
            if self.closing:
                return
            if conversation.state is State.SETTLING and await self.send_queued(conversation) is None:
                conversation.fire(Event.SETTLED)
            elif conversation.state is State.IDLE and conversation.queue:
                await self.send_queued(conversation)

    async def cancel(self, conversation: Conversation, children: bool = False) -> bool:
        """Cancel open questions and the running turn (``session/cancel``, which also stops the session's running
        ``children``, when it has any); True if a turn or a child was running."""
        self.questions.cancel(conversation.chat)
        if not conversation.running and not children:
            return False
        link = self.sessions.links.get(conversation.agent or "")
        if link is not None and link.conn is not None and conversation.session_id is not None:
            try:
                await link.conn.cancel(session_id=conversation.session_id)
            except ConnectionError:
                pass
        return True

    async def close(self, conversations: list[Conversation], grace: float) -> None:
        """Cancel running turns, waiting ``grace`` seconds for them to settle; what is queued stays stored."""
        self.closing = True
        tasks = list(self.tasks)
        for conversation in conversations:
            if conversation.running:
                await self.cancel(conversation)
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _turn(self, conversation: Conversation, link: AgentLink, blocks: list[Any]) -> None:
        chat, channel = conversation.chat, conversation.channel
        await end_aside(conversation)
        conversation.errors_shown = ()
        view = conversation.view = open_reply(conversation, self.messages, self.instance)
        down, conn = link.down, link.conn
        stop_reason: str | None = None
        error: str | None = None
        self.background.spawn(_quietly(channel.typing(chat)), f"typing:{chat.key}")
        try:
            assert conn is not None and conversation.session_id is not None
            response = await conn.prompt(session_id=conversation.session_id, prompt=blocks)
            stop_reason = response.stop_reason
        except RequestError as exc:
            error = refused_turn(exc, conversation.errors_shown)
        except ConnectionError:
            error = await agent_stopped(link.name, down)
        except asyncio.CancelledError:
            error = "The bridge stopped during this turn."
            raise
        finally:
            self.questions.cancel(chat)
            while conversation.showing is not None:  # what followed it goes into this reply before it ends
                await asyncio.shield(conversation.showing)
            conversation.fire(Event.TURN_ENDED)
            if conversation.view is view:
                conversation.view = None
            await asyncio.shield(view.finish(stop_reason, error))
            self.background.spawn(self._after_turn(conversation), f"queue:{chat.key}")

    async def _after_turn(self, conversation: Conversation) -> None:
        """A turn settled: what it took from the queue is done with, and the next batch goes (else the conversation is idle)."""
        await conversation.queue.settled()
        await self.go_on(conversation)


async def _quietly(step: Awaitable[None]) -> None:
    try:
        await step
    except Exception as exc:
        log.debug("typing indicator failed: %s", exc)
