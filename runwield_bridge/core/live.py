"""The Sessions live in this process: each one's in-memory state while some client has it open, and the registry."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .background import BackgroundTasks
from .events import Event, QuestionAsked, ToolProgress
from .interactions import Outcome, PendingQuestion
from .locks import Lock, Locks
from .models import ChatMessage
from .records import SessionRecord
from .runtime import Emit
from .steering import SteeringInbox
from .tool_servers import ToolServers
from .tools import Tool
from .transcript import TurnJournal

if TYPE_CHECKING:
    from .store.sessions import SessionRepository

FormAsker = Callable[[PendingQuestion], Awaitable[Outcome]]


class SessionNotFound(LookupError):
    """No Session has this id."""


class Signal:
    """Wakes whoever waits for a condition each time something it depends on changes: fired from plain code (a
    task's done callback included), awaited until the condition holds. No timer is involved."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    def fire(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` holds, checking it again each time the signal fires."""
        while not condition():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


@dataclass(slots=True)
class LiveSession:
    """A Session's in-memory resources while some client has it open."""

    record: SessionRecord
    lock: Lock
    turn: asyncio.Task[Any] | None = None
    cancelling: bool = False
    finishing: bool = False
    open_tools: dict[str, ToolProgress] = field(default_factory=dict)
    history: list[ChatMessage] = field(default_factory=list)
    history_until: int = 0  # id of the last transcript entry folded into ``history``
    history_message: str | None = None  # the id of the agent message that ``history`` ends with, if it does
    sink: Emit | None = None  # where the turn's events go: the prompt (or reply) now following it
    forms: FormAsker | None = None  # how that prompt's client answers questions in place, if it can
    parked: bool = False  # a chat question waits for the next message
    changed: Signal = field(default_factory=Signal)  # fires when a turn ends or a question parks or unparks
    steering: SteeringInbox | None = None  # set while a model turn can take steered input
    follow_ups: set[asyncio.Task[None]] = field(default_factory=set)  # turns the Session will start itself
    own_turn: bool = False  # the running turn is one the Session started itself
    journal: TurnJournal | None = None  # writes the running turn to the transcript as it goes
    background: BackgroundTasks | None = None  # work its tools started that outlives their turns
    tool_servers: ToolServers | None = None  # the tool servers its client brought, running while it is live
    asking_again: asyncio.Task[None] | None = None  # a chat question nobody saw, asked in a form of the client now here

    @property
    def client_tools(self) -> tuple[Tool, ...]:
        """The tools of the servers its client brought."""
        return self.tool_servers.tools if self.tool_servers is not None else ()

    async def stop_tool_servers(self) -> None:
        servers, self.tool_servers = self.tool_servers, None
        if servers is not None:
            await servers.aclose()

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def idle(self) -> bool:
        """No turn runs and no question waits: the Session may start its own next turn."""
        return not self.busy and not self.parked

    def park(self, parked: bool) -> None:
        """A chat question starts (or stops) owning the Session's next message."""
        self.parked = parked
        self.changed.fire()

    def follow(self, emit: Emit, forms: FormAsker | None) -> None:
        """Send the turn's events, and its questions, to this prompt from now on."""
        self.sink, self.forms = emit, forms

    async def emit(self, event: Event) -> None:
        """Pass an event on, remembering tool calls still open so a cancelled turn can close them, and keeping
        what it shows in the running turn's transcript."""
        if isinstance(event, ToolProgress):
            if event.status in ("completed", "failed"):
                self.open_tools.pop(event.call_id, None)
            else:
                self.open_tools[event.call_id] = event
        if self.journal is not None:
            await self.journal.record(event)
        if self.sink is not None:
            await self.sink(event)

    def ask_in_form(self, pending: PendingQuestion, forms: FormAsker) -> None:
        """A chat question that nobody saw (its turn had no client), asked again in a form of the client that now follows:
        an answer there settles it, unless it is settled another way first (a chat reply, the turn's end), which
        withdraws the form. A form the client could not show leaves it a chat question."""

        async def ask() -> None:
            form = asyncio.ensure_future(forms(pending))
            settled = asyncio.ensure_future(pending.outcome())
            try:
                await asyncio.wait({form, settled}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                settled.cancel()
                form.cancel()
            if form.done() and not form.cancelled() and form.result().status != "failed" and pending.settled is None:
                self.park(False)
                pending.settle(form.result())

        self.asking_again = asyncio.create_task(ask(), name=f"ask-again:{pending.id}")

    async def present(self, pending: PendingQuestion) -> Outcome | None:
        """Show a question: as a form where the client has forms, else as a chat menu that parks the prompt."""
        if self.forms is not None:
            return await self.forms(pending)
        await self.emit(QuestionAsked(pending.id, pending.question, pending.tool_call_id))
        self.park(True)
        return None


class SessionRegistry:
    """The Sessions live in this process, opened from the store; each has its writer lock from ``locks``."""

    def __init__(self, sessions: SessionRepository, locks: Locks) -> None:
        self.sessions = sessions
        self.locks = locks
        self._live: dict[str, LiveSession] = {}

    async def get(self, session_id: str) -> SessionRecord:
        """The stored Session (SessionNotFound if there is none)."""
        record = await self.sessions.get_session(session_id)
        if record is None:
            raise SessionNotFound(f"no Session with id {session_id!r}")
        return record

    def add(self, record: SessionRecord) -> LiveSession:
        live = self._live[record.id] = LiveSession(record, self.locks(record.id))
        return live

    async def open(self, session_id: str) -> LiveSession:
        """The live Session, made live from the store (without reserving its writer) if it is not yet."""
        if (live := self._live.get(session_id)) is not None:
            return live  # each turn re-reads the record before it starts
        return self.add(await self.get(session_id))

    def find(self, session_id: str) -> LiveSession | None:
        return self._live.get(session_id)

    def remove(self, session_id: str) -> LiveSession | None:
        return self._live.pop(session_id, None)

    def ids(self) -> list[str]:
        return list(self._live)

    def is_busy(self, session_id: str) -> bool:
        live = self._live.get(session_id)
        return live is not None and live.busy

    async def writer_free(self, session_id: str) -> bool:
        """True when no process holds the Session's writer (checked without taking it: checking is not holding)."""
        return not await self.locks(session_id).taken()
