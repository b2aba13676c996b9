"""The acp runtime: an external ACP agent (``[agents.NAME]``) drives the turns of a RunWield Session (ADR 0033).

The agent's session is stateful, so each turn sends only its new input; the context contract's stable prefix is sent
once, as the first block of the agent session's first prompt, built the same way every time, and its volatile delta
(the Agent now, say) with it and again before the next prompt whenever it changed (``core/context.py``). What the agent
streams becomes the Session's events (and so its transcript); its permission requests and elicitations are asked
through the Session's questions, never answered on the user's behalf.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from acp import RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from ..core.context import Context, ContextLedger, ContextState, assemble_context
from ..core.events import Event, MessageChunk, Notice, SelectionChanged, Thought, ToolProgress, Usage, UserMessage
from ..core.models import ModelError
from ..core.runtime import TurnRequest, TurnResult
from .acp_agents import NOBODY_ASKED, ExternalAgent, ExternalAgents
from .acp_asking import ask_elicitation, ask_permission
from .agent_modes import mode_warnings, own_choices, settle_mode
from .choice import PREFIX, RuntimeChoices

T = TypeVar("T")
CANCEL_GRACE = 5.0
"""Seconds a cancelled agent gets to answer its prompt (``cancelled``) before the turn settles anyway."""


def context_prefix(context: Context) -> str:
    """The context an agent session starts with: the stable prefix (byte-stable), then the delta as it is now."""
    return f"<runwield-context>\n{context.stable_prefix.instructions}\n</runwield-context>\n{context.volatile_delta}"


class AcpRuntime:
    """The Runtime that hands each turn to the Session's external agent."""

    def __init__(self, agents: ExternalAgents, choices: RuntimeChoices) -> None:
        self.agents = agents
        self.choices = choices
        self.ledger = ContextLedger()
        """Keyed by the agent's session: the delta it was last told."""

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        runtime = await self.choices.of(request.session.id)
        agent = self.agents.get(runtime.removeprefix(PREFIX))
        if request.compact:
            await request.emit(Notice(f"/compact applies to native Sessions: the external agent {agent.name} keeps and compacts its own context.", "warning"))
            return request.result
        context = assemble_context(ContextState(request.session.agent, None))  # the agent's model has its own reasoning
        conn: ClientSideConnection | None = None
        try:
            conn = await agent.connection()
            agent_session, fresh = await self._open(agent, conn, request)
            if not fresh and agent_session not in self.ledger.told:  # reopened after a restart: told by the process before
                self.ledger.after_turn(agent_session, context, None)
            turn = ExternalTurn(request, agent)
            agent.turns[agent_session] = turn
            try:
                news = None if await self.choices.is_child(request.session.id) else self.ledger.news(agent_session, context)
                first = [text_block(context_prefix(context) if fresh else news)] if news else []
                await turn.prompt(conn, agent_session, [*first, text_block(request.prompt)])
                self.ledger.after_turn(agent_session, context, None)
                while texts := request.steering.take():  # the agent takes no input mid-turn: steered input is the next prompt
                    for text in texts:
                        await request.emit(UserMessage(text, request.result.start_message()))
                    await turn.prompt(conn, agent_session, [text_block(text) for text in texts])
            finally:
                await turn.drain()
                agent.turns.pop(agent_session, None)
        except ConnectionError as exc:
            agent.link.lost(conn)
            raise ModelError(f"the external agent {agent.name} failed: {exc}") from None
        except RequestError as exc:
            raise ModelError(f"the external agent {agent.name} failed: {exc}") from None
        return request.result

    async def _open(self, agent: ExternalAgent, conn: ClientSideConnection, request: TurnRequest) -> tuple[str, bool]:
        """The agent's session for this Session in the turn's cwd: reopened when it can be, else new. True when new."""
        session_id, cwd = request.session.id, str(request.cwd)
        elsewhere = None if cwd == str(Path(request.session.cwd)) else cwd  # a Plan's worktree: a session of its own
        known, known_cwd = await self.choices.agent_session(session_id, elsewhere)
        if known and known_cwd == cwd and known in agent.link.loaded:
            return known, False
        agent_session = [known] if known and known_cwd == cwd else []
        servers = await agent.bus.offer(request.tools, agent.running(agent_session))
        if agent_session:
            if agent.link.can_load or agent.link.offers("resume"):
                reopen = conn.load_session if agent.link.can_load else conn.resume_session
                reopened = await reopen(cwd=cwd, session_id=known, mcp_servers=servers)
                agent.link.loaded.add(known)
                await self._settle(agent, conn, known, reopened, request)
                return known, False
            await request.emit(Notice(
                f"The external agent {agent.name} cannot reopen its earlier session (it offers neither session/load nor "
                "session/resume), so it starts a new one and does not remember this Session's earlier turns.",
                "warning",
            ))  # fmt: skip
        created = await conn.new_session(cwd=cwd, mcp_servers=servers)
        agent_session[:] = [created.session_id]
        agent.link.loaded.add(created.session_id)
        await self.choices.keep_agent_session(session_id, agent.name, created.session_id, cwd, elsewhere=elsewhere is not None)
        await self._settle(agent, conn, created.session_id, created, request)
        return created.session_id, True

    async def _settle(self, agent: ExternalAgent, conn: ClientSideConnection, agent_session: str, opened: Any, request: TurnRequest) -> None:
        """The opened session in the mode that asks (or the configured one); a warning when the agent approves itself.
        The Session's clients are told the agent's own modes and models (an IDE's config options), now known, for the
        agent session in the Session's own directory (not one in a Plan's worktree)."""
        mode = agent.modes[agent_session] = await settle_mode(conn, agent_session, opened, agent.adapter, agent.config)
        for warning in mode_warnings(agent.name, agent.adapter, mode):
            await request.emit(Notice(warning, "warning"))
        record = request.session
        if (await self.choices.agent_session(record.id))[0] == agent_session:
            await request.emit(SelectionChanged(record.agent, record.model, record.reasoning, PREFIX + agent.name, own_choices(agent.name, mode)))


class ExternalTurn:
    """One Session turn on an agent's session: its updates become the Session's events, in the order they came."""

    def __init__(self, request: TurnRequest, agent: ExternalAgent) -> None:
        self.request = request
        self.agent = agent
        self.calls: dict[str, tuple[str, str]] = {}
        """Each tool call seen so far: its title and kind."""
        self.updates: asyncio.Queue[Any] = asyncio.Queue()
        self.asking: set[asyncio.Future[Any]] = set()
        """The agent's questions being asked; the turn's end withdraws them."""
        self.speaking = False
        """The agent's words are being streamed (a run of them starts with the turn's ``voice``, if it has one)."""
        self.pump = asyncio.create_task(self._pump(), name=f"updates:{request.session.id}")

    async def prompt(self, conn: ClientSideConnection, agent_session: str, blocks: list[Any]) -> None:
        """Send one prompt; cancelling the turn withdraws the agent's questions (answered ``cancelled``), sends
        ``session/cancel`` and waits (briefly) for the agent to stop."""
        sent = asyncio.ensure_future(conn.prompt(session_id=agent_session, prompt=blocks))
        try:
            response = await asyncio.shield(sent)
        except asyncio.CancelledError:
            self.withdraw()
            with contextlib.suppress(Exception):
                await conn.cancel(session_id=agent_session)
                await asyncio.wait_for(sent, CANCEL_GRACE)
            raise
        if response.stop_reason in ("refusal", "max_tokens", "max_turn_requests"):
            await self.request.emit(Notice(f"The external agent {self.agent.name} stopped: {response.stop_reason}.", "warning"))

    def withdraw(self) -> None:
        for asked in self.asking:
            asked.cancel()

    def on_update(self, update: Any) -> None:
        self.updates.put_nowait(update)

    async def drain(self) -> None:
        """Withdraw the agent's questions still being asked, emit every update received so far, then stop."""
        self.withdraw()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.updates.join())
        self.pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.pump

    async def _pump(self) -> None:
        while True:
            update = await self.updates.get()
            try:
                for event in self._events(update):
                    await self.request.emit(event)
            finally:
                self.updates.task_done()

    def _events(self, update: Any) -> list[Event]:
        """The Session events for one ``session/update`` (none for what a Session does not show)."""
        kind = update.session_update
        result = self.request.result
        if kind == "agent_message_chunk" and (text := _text(update.content)):
            result.replied = True
            voice = [] if self.speaking or not self.request.voice else [MessageChunk(self.request.voice, result.message_id, aside=True)]
            self.speaking = True
            return [*voice, MessageChunk(text, result.message_id)]
        if kind == "agent_thought_chunk" and (text := _text(update.content)):
            return [Thought(text)]
        if kind in ("tool_call", "tool_call_update"):
            self.speaking = False  # the agent's next words are a new run, marked again with the turn's voice
            return self._tool_events(update)
        if kind == "plan":
            lines = [f"- [{entry.status}] {entry.content}" for entry in update.entries]
            return [Notice("The agent's plan:\n" + "\n".join(lines))]
        if kind == "usage_update":
            cost = update.cost.amount if update.cost is not None and update.cost.currency == "USD" else None
            return [Usage(used=update.used, size=update.size, cost_usd=cost)]
        return []

    def _tool_events(self, update: Any) -> list[Event]:
        call_id = update.tool_call_id
        known = self.calls.get(call_id)
        title = update.title or (known[0] if known else call_id)
        kind = update.kind or (known[1] if known else "other")
        self.calls[call_id] = (title, kind)
        output = "".join(_text(item.content) for item in update.content or () if getattr(item, "type", "") == "content") or None
        events: list[Event] = []
        if known is None:
            events.append(ToolProgress(call_id, title, kind, "pending", update.raw_input, started=True))
        if update.status or output or known is not None:
            events.append(ToolProgress(call_id, title, kind, update.status or "in_progress", output=output))
        return events

    async def on_permission(self, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        """The agent asks to go ahead: the user is asked; anything but a chosen option is a rejection. The request may
        be the only place the agent names the tool, so the connection sent it as an update, shown before the question."""
        await asyncio.shield(self.updates.join())  # the tool call is shown before the question about it
        chosen = await self._asked(ask_permission(self.request.ask, tool_call, options), None)
        if chosen is None:
            return NOBODY_ASKED
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def on_elicitation(self, params: Any) -> dict[str, Any]:
        return await self._asked(ask_elicitation(self.request.ask, params), {"action": "cancel"})

    async def _asked(self, asking: Awaitable[T], withdrawn: T) -> T:
        """Ask as part of this turn: when the turn ends first (cancelled), the question is withdrawn."""
        asked = asyncio.ensure_future(asking)
        self.asking.add(asked)
        try:
            return await asked
        except asyncio.CancelledError:
            if not asked.cancelled():
                raise
            return withdrawn
        finally:
            self.asking.discard(asked)


def _text(content: Any) -> str:
    return content.text if getattr(content, "type", "") == "text" else ""
