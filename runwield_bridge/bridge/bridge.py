"""The Bridge: a thin router from the channels' events to the Conversations they belong to.

A message passes the allowlist (``gate.py``), then goes by its conversation's state (``conversation.py``): a bridge
command acts at once (``commands.py``), a question waiting for its answer takes it, a turn running or settling steers
or queues it, else it is prompted (``turns.py``). What agents send comes back by session (``claims.py``) and is routed
by the same state (``updates.py``). Sessions are opened, resumed and reopened in ``sessions.py`` and ``reopening.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from ..acp.client import AgentEndpoint
from ..channels.background import Background
from ..channels.contract import Channel
from ..channels.bridge_commands import parse_command
from ..channels.types import ButtonPress, IncomingMessage, ModelMenu, Sender
from ..channels.types import Conversation as Chat
from ..channels.unfinished import EXPIRED, MemoryMessageLog, MessageLog, mark_expired
from ..redaction import redact
from .asking.pending import NOT_OPEN, ChatQuestions
from .bindings import BindingStore
from .child_lines import ChildLines
from .claims import Claims
from .command_menu import CommandMenu
from .commands import Commands
from .conversation import Conversation, State
from .conversations import Conversations
from .dedupe import Deliveries, MemoryUpdateLog, UpdateLog
from .delivery import say
from .follow_ups import FollowUpLog, MemoryFollowUpLog
from .gate import Gate
from .instances import Instances
from .model_menu import choose_model, model_menu
from .offers import Offers, is_offer, numbered_choice
from .reopening import BUILTIN_AGENT, Reopening  # BUILTIN_AGENT: wld chat's and wld bridge's built-in agent
from .routes import BindingRoute
from .sessions import Sessions
from .spawn import Spawner
from ..supervision import Backoff
from .turns import Turns
from .updates import Updates

class Bridge:
    """Binds conversations to sessions on the configured agents, and routes each event to its conversation."""

    def __init__(
        self,
        agents: dict[str, AgentEndpoint],
        bindings: BindingStore,
        routes: Sequence[BindingRoute] = (),
        *,
        start_timeout: float = 30.0,
        backoff: Backoff = Backoff(),
        updates: UpdateLog | None = None,
        messages: MessageLog | None = None,
        instances: Instances | None = None,
        follow_ups: FollowUpLog | None = None,
    ) -> None:
        self.instances = instances
        """This instance among several on one PostgreSQL database (None where it runs alone)."""
        self.instance_id = instances.id if instances else None
        self.deliveries = Deliveries(updates or MemoryUpdateLog(), self.instance_id, instances.alive if instances else None)
        """Claims of the channels' updates, so each is handled once (durable when ``updates`` is the store), across instances too."""
        self.messages = messages or MemoryMessageLog()
        """Notes of the messages not finished yet (streaming replies, open questions), durable when it is the store."""
        self.background = Background("bridge")
        self.questions = ChatQuestions(self.messages, self.instance_id)
        self.offers = Offers()
        self.gate = Gate()
        self.conversations = Conversations(follow_ups or MemoryFollowUpLog())
        claims = Claims(CommandMenu(self.background))
        children = ChildLines(self.background)
        self.agent_side = Updates(self.conversations, claims, children, self.questions, self.offers, self.messages, self.instance_id, self.background)
        self.sessions = Sessions(agents, self.agent_side, bindings, routes, claims, start_timeout=start_timeout, backoff=backoff)
        self.turns = self.agent_side.turns = Turns(self.sessions, self.questions, self.messages, self.instance_id, self.background)
        self.commands = Commands(self.sessions, self.turns, children, Spawner(self.sessions, self), self.offers)
        self.reopening = Reopening(self.conversations, self.sessions, self.turns, self.messages, instances)

    def add_channel(self, channel: Channel) -> None:
        """Register a channel (its allowlist and stranger notices); its listener gets a ``ChannelInbox``."""
        self.sessions.check_agent(channel.settings.agent, f"channels.{channel.name}.agent")
        self.gate.add(channel)

    async def close(self, grace: float = 5.0) -> None:
        """Cancel running turns (waiting ``grace`` seconds for them to settle), then stop the agents; what is queued
        stays stored for the next start."""
        await self.turns.close(list(self.conversations), grace)
        await self.background.close()
        for link in self.sessions.links.values():
            await link.stop()

    async def channel_failed(self, channel: Channel, error: BaseException, delay: float) -> None:
        """Tell the conversations waiting on a channel (a turn running, a question open) that its listener failed."""
        for conversation in self.conversations:
            if conversation.channel is channel and (conversation.running or conversation.state is State.WAITING_FOR_ANSWER):
                await say(
                    channel,
                    conversation.chat,
                    f"⚠️ The {channel.name} connection failed ({redact(str(error))}); reconnecting in {delay:.1f}s. "
                    "Messages and button presses sent meanwhile may arrive late; the agent's work goes on.",
                )

    async def receive_message(self, channel: Channel, message: IncomingMessage) -> asyncio.Task[None] | None:
        """Handle one message, by its conversation's state. A conversation's messages are handled one at a time, in order."""
        if not message.text.strip() and not message.images:
            return None
        if not await self.gate.lets_in(channel, message.sender, message.conversation):
            return None
        conversation = self.conversations.open(channel, message.conversation)
        conversation.chat = message.conversation  # as the platform describes it now (a reopened one did not know it was a group)
        async with conversation.lock:  # the first await for an allowed message, so arrival order is kept
            await self.reopening.restore(conversation)
            if command := parse_command(message.text):
                await self.commands.run(conversation, command, message.sender)
            elif conversation.state is State.WAITING_FOR_ANSWER or self.questions.has_open(message.conversation):
                await self._answer(conversation, message)  # never queued as a follow-up: it may be a secret answer
            elif conversation.busy or conversation.queue:
                return await self.turns.follow_up(conversation, message)
            else:
                offer, conversation.offer = conversation.offer, ()
                if (step := numbered_choice(offer, message.text)) is not None:
                    message = replace(message, text=step)
                return await self.turns.start(conversation, [message])
        return None

    async def _answer(self, conversation: Conversation, message: IncomingMessage) -> None:
        """A message while a question is open is its answer (or is told why it is not one)."""
        if message.images:
            await say(conversation.channel, conversation.chat, "An attachment does not answer the question above; reply with text, or send /cancel.")
        elif correction := self.questions.offer_text(conversation.chat, message.text, message.sender, message.message_id):
            await say(conversation.channel, conversation.chat, correction)

    def receive_press(self, channel: Channel, press: ButtonPress) -> str:
        """A press answers only a question of the conversation it came from, or takes a step offered there (sends its
        command), by someone allowed there; a press on a button this bridge no longer knows marks its message expired."""
        if not self.allows(channel, press.sender, press.conversation):
            return "Only people on this bot's allowlist can answer."
        if is_offer(press.data):
            step = self.offers.command_for(channel, press)
            if step is not None and self.questions.has_open(press.conversation):
                return "A question is open here: answer it (or send /cancel) first; nothing was sent."
            if step is not None:
                message = IncomingMessage(press.conversation, press.sender, step)
                self.background.spawn(self.receive_message(channel, message), f"step:{press.conversation.key}")
                return f"Sent {step}"
            notice = NOT_OPEN
        else:
            notice = self.questions.press(channel, press)
        if notice == NOT_OPEN and press.message is not None:  # a button of a question or offer this bridge no longer has
            self.background.spawn(mark_expired(channel, press.message, press.text), f"expire:{press.conversation.key}")
            return EXPIRED
        return notice

    def allows(self, channel: Channel, sender: Sender, chat: Chat) -> bool:
        return self.gate.allows(channel, sender, chat)

    async def is_bound(self, chat: Chat) -> bool:
        """Whether the conversation has a session, live or stored (without reading the store when it is live)."""
        conversation = self.conversations.get(chat.key)
        if conversation is not None and conversation.restored:
            return conversation.session_id is not None
        return await self.sessions.bindings.get_binding(chat.key) is not None

    async def open_state(self, channel: Channel, chat: Chat) -> Conversation:
        """The conversation with its stored binding read (for channels' direct calls)."""
        conversation = self.conversations.open(channel, chat)
        await self.reopening.restore(conversation)
        return conversation

    async def models(self, conversation: Conversation) -> ModelMenu | None:
        """The session's model choices, opening the session if needed; None if its agent offers none."""
        await self.sessions.ready(conversation)
        return model_menu(conversation.model_option)

    async def choose_model(self, conversation: Conversation, value: str) -> str:
        """Switch the session's model; returns what to tell the person."""
        link = await self.sessions.ready(conversation)
        return await choose_model(conversation, link.conn, value)
