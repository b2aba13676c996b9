"""The Bridge: conversations bound to ACP sessions on configured agents, and everything said in between.

Channels hand it messages and button presses; it checks the allowlist, handles bridge commands,
lets an open question claim the next message, steers or queues a message that comes while a turn
runs (``follow_ups.py``), and otherwise prompts the conversation's session over the agent's one
shared ACP connection. Agent output, permission requests and questions come
back by session id and are rendered by the conversation's channel.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from acp import RequestError, image_block, text_block
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate
from pydantic import ValidationError

from ..acp.client import AgentEndpoint
from ..acp.extensions import ALIASES, ARTIFACT_REVIEW, CHILD, NOTICE, PLAN_SAVED, TURN, PlanSavedMeta
from ..config import ConfigError
from ..redaction import redact
from ..acp.agent_connection import AgentUnavailable
from .agent_mode import settle_agent_mode
from .agent_links import AgentLink
from ..channels.allowlist import Allowlist, NoticeThrottle, stranger_notice
from .asking import CANCELLED, ask_permission, ask_question
from ..channels.background import Background
from .bindings import BindingStore
from .help_text import command_list
from ..channels.bridge_commands import BRIDGE_COMMANDS, GREETING, parse_command
from ..channels.contract import Channel, ReplyView
from ..channels.streaming import SHOWN, StreamingReply
from ..channels.types import BridgeCommand, BridgeError, ButtonPress, Conversation, IncomingMessage, MenuCommand, ModelChoice, ModelMenu, Sender
from ..channels.unfinished import EXPIRED, Keeper, MemoryMessageLog, MessageLog, finish_left, mark_expired
from .child_lines import ChildLines
from .conversations import ConversationState, Phase, Replay
from .dedupe import Deliveries, MemoryUpdateLog, UpdateLog
from .delivery import deliver
from .follow_ups import INTERRUPTING, STEERED, FollowUpLog, FollowUpQueue, MemoryFollowUpLog, StoredQueues, cut_notice, going_next, queued_notice, sending_notice
from .instances import Instances
from .asking.pending import NOT_OPEN, ChatQuestions
from .asking.forms import Unsupported
from .offers import Offers, is_offer, numbered_choice, plan_text
from .sender_context import sender_context, wants_sender_context
from .session_picker import require_known, show_sessions
from .spawn import Spawner
from .routes import BindingRoute
from ..supervision import Backoff

log = logging.getLogger(__name__)
BUILTIN_AGENT = "runwield"
COMMANDS_WAIT = 2.0  # how long /help waits for a just-opened session's list of commands


class Bridge:
    """Binds conversations to sessions; one AgentLink (one ACP connection) per configured agent.

    It has more than 15 public methods because it is the meeting point of two interfaces: what channels
    call through their Inbox (receive_message, receive_press, allows, ...) and the ACP client callbacks its
    agent links call (on_update, on_permission, on_elicitation). The work itself is in conversations.py,
    asking/, links.py and delivery.py.
    """

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
        self.links = {name: AgentLink(name, endpoint, self, start_timeout=start_timeout, backoff=backoff) for name, endpoint in agents.items()}
        self.bindings = bindings
        self.deliveries = Deliveries(updates or MemoryUpdateLog(), instances.id if instances else None, instances.alive if instances else None)
        """Claims of the channels' updates, so each is handled once (durable when ``updates`` is the store), across
        instances too."""
        self.routes = list(routes)
        self.messages = messages or MemoryMessageLog()
        """Notes of the messages not finished yet (streaming replies, open questions), durable when it is the store."""
        self.instances = instances
        """This instance among several on one PostgreSQL database (None where it runs alone)."""
        self.instance_id = instances.id if instances else None
        self.follow_ups = follow_ups or MemoryFollowUpLog()
        """The conversations' follow-up queues and modes, durable when it is the store."""
        self._stored = StoredQueues(self.follow_ups)
        self.questions = ChatQuestions(self.messages, self.instance_id)
        self.offers = Offers()
        self.spawner = Spawner(self)
        self.background = Background("bridge")
        self.child_lines = ChildLines(self.background)
        self._states: dict[str, ConversationState] = {}
        self._turns: set[asyncio.Task[None]] = set()
        self._closing = False
        self._by_session: dict[tuple[str, str], ConversationState] = {}
        self._early_commands: dict[tuple[str, str], tuple[MenuCommand, ...]] = {}  # came before the session was bound
        self._allowlists: dict[str, Allowlist] = {}
        self._notices: dict[str, NoticeThrottle] = {}
        for i, route in enumerate(self.routes):
            if route.agent is not None:
                self._check_agent(route.agent, f"bindings[{i}].agent")

    def add_channel(self, channel: Channel) -> None:
        """Register a channel (its allowlist and stranger notices); its listener gets a ``ChannelInbox``."""
        settings = channel.settings
        self._check_agent(settings.agent, f"channels.{channel.name}.agent")
        self._allowlists[channel.name] = settings.allowlist()
        self._notices[channel.name] = NoticeThrottle(settings.stranger_notice_interval)

    async def close(self, grace: float = 5.0) -> None:
        """Cancel running turns (waiting ``grace`` seconds for them to settle), then stop the agents; what is queued
        stays stored for the next start."""
        self._closing = True
        turns = list(self._turns)
        for state in list(self._states.values()):
            if state.running:
                await self.cancel(state)
        if turns:
            await asyncio.wait(turns, timeout=grace)
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*turns, return_exceptions=True)
        await self.background.close()
        for link in self.links.values():
            await link.stop()

    # -- from channels -------------------------------------------------------

    async def channel_failed(self, channel: Channel, error: BaseException, delay: float) -> None:
        """Tell the conversations waiting on a channel (a turn or a question open) that its listener failed."""
        for state in list(self._states.values()):
            if state.channel is channel and (state.running or self.questions.has_open(state.conversation)):
                await self._say(
                    channel,
                    state.conversation,
                    f"⚠️ The {channel.name} connection failed ({redact(str(error))}); reconnecting in {delay:.1f}s. "
                    "Messages and button presses sent meanwhile may arrive late; the agent's work goes on.",
                )

    async def receive_message(self, channel: Channel, message: IncomingMessage) -> asyncio.Task[None] | None:
        """Handle one message. A conversation's messages are handled one at a time, in the order they came."""
        conversation, sender = message.conversation, message.sender
        if not message.text.strip() and not message.images:
            return None
        if not self.allows(channel, sender, conversation):
            if self._notices[channel.name].should_notify(sender.id):
                await self._say(channel, conversation, stranger_notice(channel.name, sender, conversation))
            return None
        state = self._state(channel, conversation)
        state.conversation = conversation  # as the platform describes it now (a reopened one did not know it was a group)
        async with state.lock:  # the first await for an allowed message, so arrival order is kept
            await self._restore(state)
            if command := parse_command(message.text):
                await self._command(state, command, sender)
                return None
            if self.questions.has_open(conversation):
                if message.images:
                    await self._say(channel, conversation, "An attachment does not answer the question above; reply with text, or send /cancel.")
                elif correction := self.questions.offer_text(conversation, message.text, sender, message.message_id):
                    await self._say(channel, conversation, correction)
                return None
            if state.busy or state.queue:
                return await self._follow_up(state, message)
            offer, state.offer = state.offer, ()
            if (step := numbered_choice(offer, message.text)) is not None:
                message = replace(message, text=step)
            return await self._start_turn(state, [message])

    async def _start_turn(self, state: ConversationState, messages: list[IncomingMessage]) -> asyncio.Task[None] | None:
        """Prompt the session with the messages (one prompt); None, the chat told why, if it could not be sent."""
        try:
            link = await self._ready_session(state)
            blocks = [block for message in messages for block in await self._prompt_blocks(state, link, message)]
        except BridgeError as exc:
            await self._say(state.channel, state.conversation, str(exc))
            return None
        state.move(Phase.PROMPTING)
        turn = asyncio.create_task(self._turn(state, link, blocks), name=f"turn:{state.conversation.key}")
        self._turns.add(turn)
        turn.add_done_callback(self._turns.discard)
        return turn

    async def _follow_up(self, state: ConversationState, message: IncomingMessage) -> asyncio.Task[None] | None:
        """A message while a turn runs or settles (or while older ones still wait): steered into the running turn
        where the mode and the agent allow, else queued (stored first); the queue goes at once if nothing runs."""
        channel, conversation, queue = state.channel, state.conversation, state.queue
        if state.running and queue.mode == "steer" and not queue and await self._steered(state, message):  # never ahead of one waiting
            await self._say(channel, conversation, STEERED)
            return None
        if refusal := await queue.put(message):
            await self._say(channel, conversation, refusal)
            return None
        if not state.busy:
            return await self._send_queued(state)
        interrupting = queue.mode == "interrupt" and state.running
        await self._say(channel, conversation, INTERRUPTING if interrupting else queued_notice(len(queue)))
        if interrupting:
            await self.cancel(state)
        return None

    async def _steered(self, state: ConversationState, message: IncomingMessage) -> bool:
        """Whether the message went into the running turn (``_session/steering``); False: it needs a prompt of its own."""
        link = self.links.get(state.agent or "")
        if link is None or link.conn is None or not link.steers or state.session_id is None or message.text.strip().startswith("/"):
            return False
        try:
            return await link.steer(state.session_id, await self._prompt_blocks(state, link, message))
        except (BridgeError, RequestError, ConnectionError, ValidationError) as exc:
            log.info("steering in %s was refused (%s); the message is queued", state.conversation.key, exc)
            return False

    async def _send_queued(self, state: ConversationState) -> asyncio.Task[None] | None:
        """Send the queue's next batch as one turn (the conversation's lock held, no turn running)."""
        batch = await state.queue.take()
        if not batch:
            return None
        await self._say(state.channel, state.conversation, sending_notice(len(batch), len(state.queue)))
        turn = await self._start_turn(state, [w.message for w in batch])
        if turn is None:  # not sent, and the chat was told why
            await state.queue.settled()
        return turn

    async def _after_turn(self, state: ConversationState) -> None:
        """A turn settled: what it took from the queue is done with, and the next batch goes (else the conversation is idle)."""
        await state.queue.settled()
        async with state.lock:
            if self._closing:
                return
            if state.phase is Phase.SETTLING and await self._send_queued(state) is None:
                state.move(Phase.IDLE)

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

    def allows(self, channel: Channel, sender: Sender, conversation: Conversation) -> bool:
        return self._allowlists[channel.name].allows(sender, conversation)

    async def is_bound(self, conversation: Conversation) -> bool:
        """Whether the conversation has a session, live or stored (without reading the store when it is live)."""
        state = self._states.get(conversation.key)
        if state is not None and state.restored:
            return state.session_id is not None
        return await self.bindings.get_binding(conversation.key) is not None

    async def open_state(self, channel: Channel, conversation: Conversation) -> ConversationState:
        """The conversation's state with its stored binding read (for channels' direct calls)."""
        state = self._state(channel, conversation)
        await self._restore(state)
        return state

    def _state(self, channel: Channel, conversation: Conversation) -> ConversationState:
        state = self._states.get(conversation.key)
        if state is None:
            queue = FollowUpQueue(self.follow_ups, conversation.key, self._stored.mode(conversation.key) or channel.settings.queue)
            state = self._states[conversation.key] = ConversationState(conversation, channel, queue)
        return state

    async def reopen(self, channel: Channel) -> None:
        """After a start, reopen the channel's conversations bound to the built-in Session Host, so what a Session
        takes up on its own (an execution interrupted by a crash) reaches them without waiting for a message.
        Sessions on other agents are reopened by their conversation's next message, as before. First, the messages an
        earlier run left unfinished are finished: a cut-off reply says it was interrupted, a question that it expired."""
        await finish_left(channel, self.messages)
        for key in await self._to_reopen(channel):
            if self.instances is None or await self.instances.owner(key) == self.instances.id:  # not one another instance handles
                await self._reopen(channel, key)

    async def take_up(self, channel: Channel, dead: str, keys: Sequence[str]) -> None:
        """Another instance died: finish the messages it left unfinished in ``channel``, then reopen those of its
        conversations (now this instance's) that are bound to the built-in Session Host, as at a start; reopening
        marks the turns it had running interrupted."""
        await finish_left(channel, self.messages, dead)
        bound = set(await self._to_reopen(channel))
        for key in keys:
            if key in bound:
                await self._reopen(channel, key)

    async def _to_reopen(self, channel: Channel) -> list[str]:
        """The channel's conversations a start reopens: those bound to the built-in Session Host, and those with a queue."""
        bound = await self.bindings.bound_conversations(f"{channel.name}:", BUILTIN_AGENT)
        return sorted(set(bound) | await self._stored.scan(channel.name))

    async def _reopen(self, channel: Channel, key: str) -> None:
        if key in self._states:  # a message got there first, and opens the session itself
            return
        state = self._state(channel, Conversation.from_key(key))
        async with state.lock:
            try:
                await self._restore(state)
                await self._ready_session(state)
            except BridgeError as exc:
                log.info("could not reopen %s: %s", key, exc)
                return
            if not state.busy:  # what waited when the bridge stopped goes now
                await self._send_queued(state)

    async def _restore(self, state: ConversationState) -> None:
        """Read the conversation's stored binding and queue, once; say which queued messages a stopped run cut off."""
        if not state.restored:
            if binding := await self.bindings.get_binding(state.conversation.key):
                self._bind(state, binding.agent, binding.acp_session_id, binding.cwd)
            state.restored = True
            if self._stored.may_hold(state.conversation) and (cut := await state.queue.load()):
                await self._say(state.channel, state.conversation, cut_notice(cut))

    # -- sessions ------------------------------------------------------------

    async def new_session(self, state: ConversationState, agent: str | None = None, cwd: str | None = None) -> str:
        route = self._route(state.conversation)
        name = agent or (route.agent if route and route.agent else None) or state.channel.settings.agent
        if name not in self.links:
            raise BridgeError(f"There is no agent named {name!r}. Configured agents: {', '.join(sorted(self.links))}.")
        link = self.links[name]
        workdir = _absolute(cwd or (route.cwd if route else None) or state.channel.settings.cwd or os.getcwd())
        conn = await self._connection(link)
        try:
            response = await conn.new_session(cwd=workdir, mcp_servers=[])
        except RequestError as exc:
            raise BridgeError(f"Agent {name} could not start a session: {describe_error(exc)}") from None
        link.loaded.add(response.session_id)
        for warning in await settle_agent_mode(conn, name, link.endpoint, response, response.session_id):
            await self._say(state.channel, state.conversation, f"⚠️ {warning}")
        state.model_option = _model_option(response.config_options)
        await self._persist(state, name, response.session_id, workdir)
        return response.session_id

    async def resume(self, state: ConversationState, session_id: str, agent: str | None = None) -> tuple[str, Replay]:
        """Bind the conversation to an existing session (of ``agent``, else its own agent's) through ``session/load``; an
        unknown id changes nothing."""
        name = agent or state.agent or state.channel.settings.agent
        link = self.links.get(name)
        if link is None:
            raise BridgeError(f"Agent {name} is no longer configured; send /new to start over.")
        workdir = state.cwd or _absolute(state.channel.settings.cwd or os.getcwd())
        view = state.channel.open_reply(state.conversation) if state.channel.capabilities.full_history else None
        replay = await self._load(state, link, session_id, workdir, Replay(view))
        if view is not None:
            await view.finish()
        await require_known(link, session_id, replay)
        await self._persist(state, name, session_id, workdir)
        return session_id, replay

    async def cancel(self, state: ConversationState) -> bool:
        """Cancel open questions and the running turn (``session/cancel``); True if a turn was running."""
        self.questions.cancel(state.conversation)
        if not state.running:
            return False
        link = self.links.get(state.agent or "")
        if link is not None and link.conn is not None and state.session_id is not None:
            try:
                await link.conn.cancel(session_id=state.session_id)
            except ConnectionError:
                pass
        return True

    async def models(self, state: ConversationState) -> ModelMenu | None:
        """The session's model choices, opening the session if needed; None if its agent offers none."""
        await self._ready_session(state)
        option = state.model_option
        return ModelMenu(option.current_value, _model_choices(option)) if option is not None else None

    async def choose_model(self, state: ConversationState, value: str) -> str:
        """Switch the session's model through ``session/set_config_option``; returns what to tell the person."""
        link = await self._ready_session(state)
        if state.model_option is None:
            raise BridgeError(f"Agent {link.name} offers no model choice for this session.")
        assert link.conn is not None and state.session_id is not None
        try:
            response = await link.conn.set_config_option(config_id=state.model_option.id, session_id=state.session_id, value=value)
        except RequestError as exc:
            raise BridgeError(f"The model was not changed: {describe_error(exc)}") from None
        state.model_option = _model_option(response.config_options) or state.model_option
        return f"Model: {_model_name(state.model_option)}"

    async def _ready_session(self, state: ConversationState) -> AgentLink:
        """The link of the conversation's session, opening (new) or reopening (load) it as needed."""
        if state.session_id is None:
            await self.new_session(state)
        assert state.agent is not None and state.session_id is not None
        link = self.links.get(state.agent)
        if link is None:
            raise BridgeError(f"This conversation is bound to agent {state.agent}, which is no longer configured. Send /new to start a new session.")
        await self._connection(link)
        if state.session_id not in link.loaded:
            await self._load(state, link, state.session_id, state.cwd or _absolute(os.getcwd()), Replay())
        self._claim(state, link.name, state.session_id)
        return link

    async def _load(self, state: ConversationState, link: AgentLink, session_id: str, cwd: str, replay: Replay) -> Replay:
        conn = await self._connection(link)
        if not link.can_load:
            raise BridgeError(
                f"Agent {link.name} cannot reopen sessions (it does not offer session/load), so session "
                f"{session_id} cannot be continued here. Nothing was sent. Send /new to start a new session."
            )
        key = (link.name, session_id)
        previous = self._by_session.get(key)
        self._claim(state, link.name, session_id)
        state.replay = replay
        try:
            response = await conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        except (RequestError, ConnectionError) as exc:
            if previous is not None:
                self._by_session[key] = previous
            elif (state.agent, state.session_id) != key:
                self._by_session.pop(key, None)
            raise BridgeError(
                f"Agent {link.name} could not reopen session {session_id}: {describe_error(exc)}. Nothing was sent "
                "and no new session was started. Send /new for a new session, or /resume SESSION_ID for another."
            ) from None
        finally:
            state.replay = None
        link.loaded.add(session_id)
        state.model_option = _model_option(response.config_options if response else None) or state.model_option
        return replay

    async def _connection(self, link: AgentLink) -> Any:
        try:
            return await link.connection()
        except AgentUnavailable as exc:
            raise BridgeError(f"{exc} Nothing was sent.") from None

    async def _persist(self, state: ConversationState, agent: str, session_id: str, cwd: str) -> None:
        await self.bindings.set_binding(state.conversation.key, agent, session_id, cwd)
        self._bind(state, agent, session_id, cwd)

    def _bind(self, state: ConversationState, agent: str, session_id: str, cwd: str | None) -> None:
        if state.agent is not None and state.session_id is not None and self._by_session.get((state.agent, state.session_id)) is state:
            del self._by_session[(state.agent, state.session_id)]
        state.agent, state.session_id, state.cwd = agent, session_id, cwd
        holder = self._by_session.get((agent, session_id))
        if holder is None or not holder.running:
            self._by_session[(agent, session_id)] = state

    def _claim(self, state: ConversationState, agent: str, session_id: str) -> None:
        """Send the session's updates, permission requests and questions to this conversation (the one about to use it).

        Two conversations can be bound to one session (``/resume``); what the session asks goes to the
        one whose turn it is, never to another one, so a turn running elsewhere keeps the session.
        """
        holder = self._by_session.get((agent, session_id))
        if holder is not None and holder is not state and holder.running:
            raise BridgeError(f"Session {session_id} is busy with a turn in another conversation. Nothing was changed; try again once it is done.")
        self._by_session[(agent, session_id)] = state
        if (commands := self._early_commands.pop((agent, session_id), None)) is not None:
            self._commands_changed(state, commands)

    def _route(self, conversation: Conversation) -> BindingRoute | None:
        return next((r for r in self.routes if r.matches(conversation.channel, conversation.chat, conversation.thread)), None)

    def _check_agent(self, name: str, where: str) -> None:
        if name not in self.links:
            raise ConfigError(f"{where}: no agent named {name!r} (configured: {', '.join(sorted(self.links))})")

    # -- turns ---------------------------------------------------------------

    async def _prompt_blocks(self, state: ConversationState, link: AgentLink, message: IncomingMessage) -> list[Any]:
        blocks: list[Any] = []
        if wants_sender_context(state.channel.settings.sender_context, message):
            blocks.append(text_block(sender_context(message)))
        if message.text.strip():
            blocks.append(text_block(message.text))
        if message.images:
            if not link.takes_images:
                raise BridgeError(f"Agent {link.name} does not accept images, so this message was not sent. Describe it in text instead.")
            for image in message.images:
                blocks.append(image_block(base64.b64encode(await image.fetch()).decode("ascii"), image.mime_type))
        return blocks

    async def _turn(self, state: ConversationState, link: AgentLink, blocks: list[Any]) -> None:
        conversation, channel = state.conversation, state.channel
        await self._end_aside(state)
        state.errors_shown.clear()
        view = state.view = self._open_reply(state)
        down, conn = link.down, link.conn
        stop_reason: str | None = None
        error: str | None = None
        self.background.spawn(_quietly(channel.typing(conversation)), f"typing:{conversation.key}")
        try:
            assert conn is not None and state.session_id is not None
            response = await conn.prompt(session_id=state.session_id, prompt=blocks)
            stop_reason = response.stop_reason
        except RequestError as exc:
            error = None if _already_shown(exc, state.errors_shown) else describe_error(exc)
        except ConnectionError:
            reason = await _reason(down)
            error = (
                f"Agent {link.name} stopped during this turn ({reason}). The rest of this reply was lost. "
                "The agent is being restarted; your next message continues this session if it can be reopened."
            )
        except asyncio.CancelledError:
            error = "The bridge stopped during this turn."
            raise
        finally:
            state.move(Phase.SETTLING)
            self.questions.cancel(conversation)
            if state.showing is not None:  # what followed it goes into this reply before it ends
                await asyncio.shield(state.showing)
            if state.view is view:
                state.view = None
            await asyncio.shield(view.finish(stop_reason, error))
            self.background.spawn(self._after_turn(state), f"queue:{conversation.key}")

    # -- from agents (the ACP client side) -------------------------------------

    def on_update(self, agent: str, session_id: str, update: Any) -> None:
        kind = getattr(update, "session_update", None)
        state = self._by_session.get((agent, session_id))
        if state is None:
            if kind == "available_commands_update":  # a new session's commands come before its binding is made
                self._early_commands[(agent, session_id)] = _menu_commands(update)
            return
        if (child := CHILD.read(update)) is not None:
            self.child_lines.show(state.channel, state.conversation, session_id, child)
            return
        if state.replay is not None:
            state.replay.add(update)
            return
        if state.held is not None:
            state.held.append(update)
            return
        if kind == "available_commands_update":
            self._commands_changed(state, _menu_commands(update))
        elif kind == "config_option_update":
            state.model_option = _model_option(update.config_options) or state.model_option
        elif (turn := TURN.read(update)) is not None:
            if (aside := state.aside) is not None:
                state.aside = None
                self.background.spawn(aside.finish(turn.stop_reason), f"aside:{state.conversation.key}")
        elif (saved := PLAN_SAVED.read(update)) is not None:
            state.held = []
            state.showing = self.background.spawn(self._show_plan(agent, session_id, state, saved), f"plan:{state.conversation.key}")
        elif state.view is not None:
            if NOTICE.read(update) == "error":
                state.errors_shown.append(getattr(update.content, "text", ""))
            state.view.update(update)
        elif kind in SHOWN:
            if state.aside is None:
                state.aside = self._open_reply(state)
            state.aside.update(update)
        if ARTIFACT_REVIEW.read(update) is not None:  # the agent waits for the review: its link's button is shown now
            state.held = []
            state.showing = self.background.spawn(self._show_now(agent, session_id, state), f"link:{state.conversation.key}")

    def _open_reply(self, state: ConversationState) -> ReplyView:
        """The channel's view for a reply, noting its streaming message where the view can (so a crash cannot leave it ``…``)."""
        view = state.channel.open_reply(state.conversation)
        if isinstance(view, StreamingReply):
            view.keeper = Keeper(self.messages, state.channel.name, "reply", self.instance_id)
        return view

    async def _end_aside(self, state: ConversationState) -> None:
        """A turn from here starts: finish the reply to work the session was doing on its own, above it."""
        aside, state.aside = state.aside, None
        if aside is not None:
            await aside.finish()

    async def _show_plan(self, agent: str, session_id: str, state: ConversationState, saved: PlanSavedMeta) -> None:
        """A saved Plan as a message of its own below the reply so far, its next steps as buttons (else numbered);
        what the session sent meanwhile follows it."""
        channel, conversation = state.channel, state.conversation
        try:
            await self._pause_replies(state)
            buttons = channel.capabilities.buttons
            shown = self.offers.buttons(channel, conversation, saved.actions) if buttons else []
            state.offer = () if buttons else tuple(a.command for a in saved.actions)
            await deliver(channel, conversation, plan_text(saved, numbered=not buttons), shown)
        except Exception as exc:
            log.warning("could not show a saved Plan in %s: %s", conversation.key, exc)
        finally:
            self._release(agent, session_id, state)

    async def _show_now(self, agent: str, session_id: str, state: ConversationState) -> None:
        """Deliver the replies so far as finished (with their link buttons); what the session sends meanwhile follows."""
        try:
            await self._pause_replies(state)
        except Exception as exc:
            log.warning("could not show a review link in %s: %s", state.conversation.key, exc)
        finally:
            self._release(agent, session_id, state)

    def _release(self, agent: str, session_id: str, state: ConversationState) -> None:
        """Handle the updates held while a message was being shown, in order."""
        held, state.held, state.showing = state.held or [], None, None
        for update in held:
            self.on_update(agent, session_id, update)

    def _commands_changed(self, state: ConversationState, commands: tuple[MenuCommand, ...]) -> None:
        state.agent_commands = commands
        state.commands_known.set()
        self.background.spawn(self._refresh_menu(state), f"menu:{state.conversation.key}")

    async def _pause_replies(self, state: ConversationState) -> None:
        """A question is about to be shown: what the replies said so far stays above it, what follows goes below."""
        for view in (state.view, state.aside):
            if view is not None:
                await view.pause()

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        state = self._by_session.get((agent, session_id))
        if state is None:
            return CANCELLED
        await self._pause_replies(state)
        return await ask_permission(self.questions, state.channel, state.conversation, tool_call, options)

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]:
        state = self._by_session.get((agent, session_id)) if session_id else None
        if state is None:
            log.warning("agent %s asked a question for unknown session %s; declined", agent, session_id)
            return {"action": "decline"}
        await self._pause_replies(state)
        try:
            return await ask_question(self.questions, state.channel, state.conversation, params)
        except Unsupported as exc:
            await self._say(state.channel, state.conversation, f"❓ Agent {agent} asked a question this bridge cannot show: {exc}. It was declined.")
            return {"action": "decline"}

    # -- commands ------------------------------------------------------------

    async def _command(self, state: ConversationState, command: BridgeCommand, sender: Sender) -> None:
        channel, conversation = state.channel, state.conversation
        if command.name in ("spawn", "sessions") or (command.name == "resume" and not command.argument):
            try:
                await (self.spawner.spawn(state, sender, command.argument) if command.name == "spawn" else show_sessions(self.links, self.offers, state))
            except BridgeError as exc:
                await self._say(channel, conversation, str(exc))
            return
        if command.name == "cancel":
            if not await self.cancel(state):
                await self._say(channel, conversation, "Nothing is running.")
            elif state.queue:
                await self._say(channel, conversation, going_next(len(state.queue)))
            return
        if command.name == "status":
            await self._say(channel, conversation, self._status(state))
            return
        if command.name in ("help", GREETING):
            await self._say(channel, conversation, await self._help(state, greet=command.name == GREETING))
            return
        if command.name == "queue":
            await self._say(channel, conversation, await state.queue.command(command.argument))
            return
        if state.running:
            await self._say(channel, conversation, f"A turn is running; send /cancel before /{command.name}.")
            return
        try:
            if command.name == "new":
                session_id = await self.new_session(state, command.argument or None)
                await self._say(channel, conversation, f"🆕 New session {session_id} on {state.agent}.")
            else:
                session_id, replay = await self.resume(state, command.argument)
                if not channel.capabilities.full_history:
                    await self._say(channel, conversation, replay.summary(session_id, state.agent or ""))
        except BridgeError as exc:
            await self._say(channel, conversation, str(exc))

    async def _help(self, state: ConversationState, greet: bool) -> str:
        """Every command here (the agent's too, opening the session to learn them); a greeting adds what the bot does."""
        name = state.agent or state.channel.settings.agent
        if not state.running:
            with contextlib.suppress(BridgeError, TimeoutError):
                await self._ready_session(state)
                await asyncio.wait_for(state.commands_known.wait(), COMMANDS_WAIT)
        text = command_list(state.agent or name, state.agent_commands)
        if not greet:
            return text
        hello = (
            f"👋 Hello! This chat talks to the coding agent {name}. Tell it what you need in a message: it works in "
            "your project, asks here when it needs an answer (tap a button or reply), and shows its progress and "
            "results as new messages. It can make Plans you review in your browser and then execute them."
        )
        return f"{hello}\n\n{text}\n\n{self._status(state)}"

    def _status(self, state: ConversationState) -> str:
        name = state.agent or state.channel.settings.agent
        link = self.links.get(name)
        if state.running:
            activity = "waiting for your answer" if self.questions.has_open(state.conversation) else "working on a turn"
        else:
            activity = "idle"
        return "\n".join(
            [
                f"Agent: {name} ({link.status if link else 'not configured'})",
                f"Session: {state.session_id or 'none yet (your first message starts one)'}",
                f"Model: {_model_name(state.model_option) or 'unknown'}",
                f"State: {activity}",
                f"Queue: {state.queue.mode}" + (f" ({len(state.queue)} waiting)" if state.queue else ""),
                *filter(None, [self.child_lines.status(state.conversation, state.session_id)]),
            ]
        )

    async def _refresh_menu(self, state: ConversationState) -> None:
        if not state.channel.capabilities.command_menu:
            return
        names = {command.name for command in BRIDGE_COMMANDS}
        menu = BRIDGE_COMMANDS + tuple(c for c in state.agent_commands if c.name not in names)
        if menu != state.menu:
            state.menu = menu
            await state.channel.set_commands(state.conversation, menu)

    async def _say(self, channel: Channel, conversation: Conversation, text: str) -> None:
        try:
            await deliver(channel, conversation, text)
        except Exception as exc:
            log.warning("could not tell %s: %s (%s)", conversation.key, text, exc)


def describe_error(exc: BaseException) -> str:
    """An ACP error as a person reads it: the message, and details the agent gave (secrets redacted)."""
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    return redact(f"{exc}: {details}" if details else str(exc) or type(exc).__name__)


def _already_shown(exc: RequestError, notices: list[str]) -> bool:
    """Whether the agent already said why the turn failed, in an error notice that names the error's details."""
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    return isinstance(details, str) and bool(details) and any(details in notice for notice in notices)


def _menu_commands(update: Any) -> tuple[MenuCommand, ...]:
    return tuple(MenuCommand(c.name, c.description, tuple(ALIASES.read(c) or ())) for c in update.available_commands)


def _model_option(options: Any) -> Any:
    """The ``select`` config option of category ``model``, if the agent offers one."""
    return next((o for o in options or () if getattr(o, "category", None) == "model" and getattr(o, "type", None) == "select"), None)


def _model_choices(option: Any) -> tuple[ModelChoice, ...]:
    """A select option's values, groups flattened."""
    flat = [choice for entry in option.options for choice in getattr(entry, "options", None) or (entry,)]
    return tuple(ModelChoice(c.value, c.name, c.description or "") for c in flat)


def _model_name(option: Any) -> str | None:
    """The current model as people read it: its choice's name, not the agent's internal value."""
    if option is None:
        return None
    return next((c.name for c in _model_choices(option) if c.value == option.current_value), option.current_value)


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


async def _reason(down: asyncio.Future[str] | None) -> str:
    if down is None:
        return "the connection closed"
    try:
        return await asyncio.wait_for(asyncio.shield(down), 2.0)
    except TimeoutError:
        return "the connection closed"


async def _quietly(step: Any) -> None:
    try:
        await step
    except Exception as exc:
        log.debug("typing indicator failed: %s", exc)
