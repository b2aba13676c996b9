"""The Session Host: durable Sessions, one turn at a time, cancellation that settles."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import ModelCatalog, UnknownChoice, agent_profile
from .events import (
    Event,
    MessageChunk,
    Notice,
    ToolProgress,
    TurnSettled,
    UserMessage,
)
from .locks import WriterLock
from .models import ChatMessage, ModelError
from .runtime import TurnResult, TurnRunner
from .store import SessionRecord, Store
from .tools import Tool

log = logging.getLogger(__name__)
Emit = Callable[[Event], Awaitable[None]]
TITLE_LENGTH = 60


class SessionNotFound(LookupError):
    """No Session has this id."""


class SessionBusy(RuntimeError):
    """Another turn holds the Session's writer; the input was not used and can be sent again."""


@dataclass
class LiveSession:
    """A Session's in-memory resources while some client has it open."""

    record: SessionRecord
    lock: WriterLock
    turn: asyncio.Task[TurnSettled] | None = None
    cancelling: bool = False
    finishing: bool = False
    open_tools: dict[str, ToolProgress] = field(default_factory=dict)
    history: list[ChatMessage] = field(default_factory=list)
    history_until: int = 0  # id of the last transcript entry folded into ``history``

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()


class SessionHost:
    """Creates, loads, runs and settles Sessions. Imports no protocol and no platform."""

    def __init__(
        self,
        store: Store,
        models: ModelCatalog,
        tools: Sequence[Tool],
        state_dir: Path,
        default_model: str = "scripted",
        default_agent: str = "build",
    ) -> None:
        models.info(default_model)
        agent_profile(default_agent)
        self.store = store
        self.models = models
        self.tools = tuple(tools)
        self.lock_dir = state_dir / "locks"
        self.default_model = default_model
        self.default_agent = default_agent
        self._live: dict[str, LiveSession] = {}

    async def create(self, cwd: str, title: str = "") -> SessionRecord:
        reasoning = self.models.reasoning_for(self.default_model, None)
        record = await self.store.create_session(
            cwd=cwd, agent=self.default_agent, model=self.default_model, reasoning=reasoning, title=title
        )
        self._live[record.id] = LiveSession(record, WriterLock(self.lock_dir, record.id))
        return record

    async def get(self, session_id: str) -> SessionRecord:
        record = await self.store.get_session(session_id)
        if record is None:
            raise SessionNotFound(f"no Session with id {session_id!r}")
        return record

    async def open(self, session_id: str) -> SessionRecord:
        """Make a stored Session live (without reserving its writer) and return it."""
        live = self._live.get(session_id)
        if live is not None:
            live.record = await self.get(session_id)
            return live.record
        record = await self.get(session_id)
        self._live[session_id] = LiveSession(record, WriterLock(self.lock_dir, session_id))
        return record

    async def history(self, session_id: str) -> list[Event]:
        """The saved conversation as events, oldest first."""
        events: list[Event] = []
        for entry in await self.store.transcript(session_id):
            if entry.kind == "user":
                events.append(UserMessage(entry.text, entry.payload.get("message_id")))
            elif entry.kind == "agent":
                events.append(MessageChunk(entry.text, entry.payload.get("message_id")))
        return events

    def is_busy(self, session_id: str) -> bool:
        live = self._live.get(session_id)
        return live is not None and live.busy

    async def prompt(self, session_id: str, text: str, emit: Emit) -> TurnSettled:
        """Run one turn; raises SessionBusy if another turn (here or in another process) holds the writer."""
        live = await self._open_live(session_id)
        if live.busy and live.cancelling:
            await asyncio.shield(live.turn)  # a cancelled turn settles before the next one starts
        if live.busy or not live.lock.try_acquire():
            raise SessionBusy(f"Session {session_id} is busy with another turn; send your message again when it ends")
        live.turn = asyncio.create_task(self._turn(live, text, emit), name=f"turn:{session_id}")
        return await asyncio.shield(live.turn)

    async def cancel(self, session_id: str) -> None:
        """Stop the running turn, if any, and return once it has settled."""
        live = self._live.get(session_id)
        if live is None or not live.busy:
            return
        live.cancelling = True
        if not live.finishing:
            live.turn.cancel()
        await asyncio.wait({live.turn})

    async def close(self, session_id: str) -> None:
        """Release live resources; stored state, archive flag included, is untouched."""
        await self.cancel(session_id)
        live = self._live.pop(session_id, None)
        if live is not None:
            live.lock.release()

    async def archive(self, session_id: str, archived: bool = True) -> SessionRecord:
        await self.get(session_id)
        await self.cancel(session_id)
        return await self.store.update_session(session_id, archived=archived)

    async def select(
        self, session_id: str, *, model: str | None = None, reasoning: str | None = None, agent: str | None = None
    ) -> SessionRecord:
        """Change the Session's model, reasoning level or Agent; invalid or mid-turn changes fail and change nothing."""
        record = await self.get(session_id)
        if self.is_busy(session_id) or not self._writer_free(session_id):
            raise SessionBusy("the Session is running a turn; change the selection when it ends")
        new_model = model or record.model
        if reasoning is not None:
            info = self.models.info(new_model)
            if reasoning not in info.reasoning_levels:
                allowed = ", ".join(info.reasoning_levels) or "none"
                raise UnknownChoice(f"model {new_model!r} has no reasoning level {reasoning!r} (levels: {allowed})")
        new_reasoning = self.models.reasoning_for(new_model, reasoning or record.reasoning)
        new_agent = agent_profile(agent).id if agent else record.agent
        updated = await self.store.update_session(session_id, model=new_model, reasoning=new_reasoning, agent=new_agent)
        if session_id in self._live:
            self._live[session_id].record = updated
        return updated

    def _writer_free(self, session_id: str) -> bool:
        """True when no process holds the Session's writer (checked without keeping it)."""
        probe = WriterLock(self.lock_dir, session_id)
        free = probe.try_acquire()
        probe.release()
        return free

    async def shutdown(self) -> None:
        for session_id in list(self._live):
            await self.close(session_id)

    async def _open_live(self, session_id: str) -> LiveSession:
        await self.open(session_id)
        return self._live[session_id]

    async def _turn(self, live: LiveSession, text: str, emit: Emit) -> TurnSettled:
        session_id = live.record.id
        tracked = self._tracking(live, emit)
        result = TurnResult()
        settled = TurnSettled("end_turn")
        recorded = asyncio.ensure_future(self._record_prompt(live, text))
        try:
            history = await asyncio.shield(recorded)  # the user's input is kept even if the turn is cancelled
            record = live.record
            runner = TurnRunner(
                model=self.models.build(record.model),
                tools=self.tools,
                session_id=session_id,
                cwd=Path(record.cwd),
                reasoning=record.reasoning,
                base_cost=record.cost_usd,
                emit=tracked,
                result=result,
            )
            await runner.run(history, text)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()
            settled = TurnSettled("cancelled")
        except ModelError as exc:
            settled = TurnSettled("error", error=str(exc))
        except Exception as exc:
            log.exception("turn failed in Session %s", session_id)
            settled = TurnSettled("error", error=f"internal error: {type(exc).__name__}: {exc}")
        live.finishing = True
        try:
            with contextlib.suppress(Exception):  # a failure here is already the turn's error
                await recorded
            await self._finish(live, result, settled, tracked)
        finally:
            live.cancelling = live.finishing = False
            live.lock.release()
        await emit(settled)
        return settled

    async def _record_prompt(self, live: LiveSession, text: str) -> list[ChatMessage]:
        """Append the prompt to the transcript (titling an untitled Session) and return the history before it."""
        session_id = live.record.id
        live.record = await self.get(session_id)
        history = await self._model_history(live)
        title = {"title": text.strip().splitlines()[0][:TITLE_LENGTH]} if not live.record.title and text.strip() else {}
        live.record = await self.store.append_many(session_id, [("user", text, {})], **title) or live.record
        return history

    def _tracking(self, live: LiveSession, emit: Emit) -> Emit:
        """Wrap ``emit`` to remember tool calls still open, so a cancelled turn can close them."""

        async def tracked(event: Event) -> None:
            if isinstance(event, ToolProgress):
                if event.status in ("completed", "failed"):
                    live.open_tools.pop(event.call_id, None)
                else:
                    live.open_tools[event.call_id] = event
            await emit(event)

        return tracked

    async def _finish(self, live: LiveSession, result: TurnResult, settled: TurnSettled, emit: Emit) -> None:
        session_id = live.record.id
        for call_id, tool in list(live.open_tools.items()):
            await emit(ToolProgress(call_id, tool.title, tool.kind, "failed", output="cancelled"))
        live.open_tools.clear()
        entries: list[tuple[str, str, dict[str, Any]]] = []
        if result.thoughts:
            entries.append(("thought", result.thoughts, {}))
        for tool in result.tool_calls:
            entries.append(("tool", tool.output or "", {"call_id": tool.call_id, "title": tool.title, "status": tool.status}))
        if result.reply:
            entries.append(("agent", result.reply, {"message_id": result.message_id, "stop_reason": settled.stop_reason}))
        if settled.error:
            entries.append(("notice", settled.error, {"level": "error"}))
        cost = {"cost_delta": result.cost_usd} if result.cost_usd else {}
        live.record = await self.store.append_many(session_id, entries, **cost) or live.record
        if settled.error:
            await emit(Notice(f"The turn could not be completed: {settled.error}", "error"))

    async def _model_history(self, live: LiveSession) -> list[ChatMessage]:
        """The conversation as the model sees it, read incrementally (other processes may have added to it)."""
        for entry in await self.store.transcript(live.record.id, after=live.history_until):
            if entry.kind == "user":
                live.history.append(ChatMessage("user", entry.text))
            elif entry.kind == "agent":
                live.history.append(ChatMessage("assistant", entry.text))
            live.history_until = entry.id or live.history_until
        return list(live.history)
