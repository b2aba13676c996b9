"""A turn's events written to the transcript before they are shown, and a transcript read back as events."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .events import ArtifactLink, Event, MessageChunk, Notice, PlanLink, PlanSaved, SessionSpawned, Thought, ToolProgress, UserMessage
from .reviews import without_links
from .records import SessionRecord, TranscriptEntry

if TYPE_CHECKING:
    from .store.sessions import Entry, SessionRepository

T = TypeVar("T")
TOOL_SUMMARY = 2000  # characters of a tool's output kept for replay
INTERRUPTED = (
    "Interrupted: this turn stopped when the process ended; the rest of the reply was lost. "
    "Nothing was run again; send your message again to continue."
)
INTERRUPTED_ENTRY: Entry = ("notice", INTERRUPTED, {"level": "warning", "interrupted": True})


def new_turn_id() -> str:
    return f"turn_{uuid.uuid4().hex}"


class TurnJournal:
    """Writes one turn to the transcript in order: its first entries when it begins, then each thing it shows the
    user before it is shown (so a crash never loses what the client saw; SQLite's write takes microseconds on the
    loop), and the settled mark at its end. Writes run one after another in the order they were asked for, and
    outlive a cancelled caller."""

    def __init__(self, sessions: SessionRepository, session_id: str) -> None:
        self.sessions = sessions
        self.session_id = session_id
        self.turn_id = new_turn_id()
        self._writing: asyncio.Future[Any] | None = None

    async def begin(self, entries: list[Entry], *, after: int = 0, title: str | None = None) -> tuple[SessionRecord | None, list[TranscriptEntry]]:
        """Start the turn (interrupting any turn of the Session whose process ended) with its first entries, titling
        an untitled Session ``title``; the Session then, and the entries after ``after`` from before the turn."""
        rows = [self._stamped(entry) for entry in entries]
        return await self._write(self.sessions.begin_turn(self.session_id, self.turn_id, rows, INTERRUPTED_ENTRY, after=after, title=title))

    async def record(self, event: Event) -> None:
        """Write what ``event`` shows the user (if it is kept), before it is shown."""
        if (entry := entry_for(event)) is not None:
            await self._append(entry)

    async def write(self, kind: str, text: str = "", **data: Any) -> None:
        """Write an entry now, after everything written before."""
        await self._append((kind, text, data))

    async def _append(self, entry: Entry) -> None:
        await self._write(self.sessions.append_many(self.session_id, [self._stamped(entry)]))

    async def end(self, stop_reason: str, **changes: Any) -> SessionRecord | None:
        """Settle the turn: the settled mark and Session changes, in one transaction."""
        return await self._write(self.sessions.end_turn(self.session_id, self.turn_id, stop_reason, [], **changes))

    def _stamped(self, entry: Entry) -> Entry:
        kind, text, data = entry
        return kind, text, {**data, "turn": self.turn_id}

    async def _write(self, work: Awaitable[T]) -> T:
        """Run a store write after the writes asked for before it; a cancelled caller does not stop it."""
        previous = self._writing

        async def after_previous() -> T:
            if previous is not None:
                await asyncio.wait({previous})
            return await work

        self._writing = asyncio.ensure_future(after_previous())
        return await asyncio.shield(self._writing)


def entry_for(event: Event) -> Entry | None:
    """The transcript entry for what an event shows the user, or None for events that are not kept."""
    if isinstance(event, UserMessage):
        return "user", event.text, {"message_id": event.message_id}
    if isinstance(event, MessageChunk):
        return "agent", event.text, {"message_id": event.message_id} | ({"audience": "user"} if event.aside else {})
    if isinstance(event, (PlanLink, ArtifactLink)):
        return "agent", event.kept, {"message_id": event.message_id, "audience": "user"}  # never the link itself
    if isinstance(event, PlanSaved):
        return "agent", event.text, {"message_id": event.message_id, "audience": "user"}
    if isinstance(event, SessionSpawned):
        spawned = {"session_id": event.session_id, "agent": event.agent, "task": event.task, "place": event.place, "cwd": event.cwd}
        return "agent", event.text, {"message_id": event.message_id, "audience": "user", "spawned": spawned}
    if isinstance(event, Thought):
        return "thought", event.text, {}
    if isinstance(event, Notice):
        return "notice", event.text, {"level": event.level}
    if isinstance(event, ToolProgress) and (event.started or event.status in ("completed", "failed")):
        data = {"call_id": event.call_id, "title": event.title, "kind": event.kind, "status": event.status}
        return "tool", "" if event.started else _summary(event.output or ""), data | ({"started": True} if event.started else {})
    return None


def replay(entries: Iterable[TranscriptEntry]) -> list[Event]:
    """A transcript as the events the user saw, oldest first: pieces of one message joined; tool calls as they
    started and ended; a turn that was interrupted ends with its open tool calls failed, then the notice."""
    events: list[Event] = []
    open_tools: dict[str, tuple[str | None, ToolProgress]] = {}  # call id -> its turn, and how it started
    for entry in entries:
        data = entry.payload
        if data.get("audience") == "model":
            continue
        if entry.kind == "user":
            events.append(UserMessage(entry.text, data.get("message_id")))
        elif entry.kind == "agent" and isinstance(spawned := data.get("spawned"), dict):
            events.append(SessionSpawned(entry.text, **spawned, message_id=data.get("message_id")))
        elif entry.kind == "agent":
            _join(events, MessageChunk(without_links(entry.text), data.get("message_id")))
        elif entry.kind == "thought":
            _join(events, Thought(entry.text))
        elif entry.kind == "tool":
            events.extend(_tool_events(data, entry.text, open_tools))
        elif entry.kind == "notice":
            if data.get("interrupted"):
                events.extend(_close_tools(open_tools, data["turn"]))
            events.append(Notice(entry.text, data.get("level", "info")))
    return events


def _join(events: list[Event], event: MessageChunk | Thought) -> None:
    """Append a message piece, or add its text to the piece before it when both belong to the same message."""
    last = events[-1] if events else None
    if isinstance(event, Thought) and isinstance(last, Thought):
        events[-1] = Thought(last.text + event.text)
    elif isinstance(event, MessageChunk) and isinstance(last, MessageChunk) and event.message_id and last.message_id == event.message_id:
        events[-1] = MessageChunk(last.text + event.text, event.message_id)
    else:
        events.append(event)


def _tool_events(data: dict[str, Any], output: str, open_tools: dict[str, tuple[str | None, ToolProgress]]) -> list[ToolProgress]:
    """A tool call's start, or its end (with its start first for an entry written before starts were kept)."""
    start = ToolProgress(data["call_id"], data.get("title", ""), data.get("kind", "other"), data["status"], started=True)
    if data.get("started"):
        open_tools[start.call_id] = (data.get("turn"), start)
        return [start]
    final = ToolProgress(start.call_id, start.title, start.kind, data["status"], output=output)
    return [final] if open_tools.pop(start.call_id, None) is not None else [start, final]


def _close_tools(open_tools: dict[str, tuple[str | None, ToolProgress]], turn: str) -> list[ToolProgress]:
    """The tool calls an interrupted turn left open, now failed."""
    closing = [tool for owner, tool in open_tools.values() if owner == turn]
    for tool in closing:
        del open_tools[tool.call_id]
    return [ToolProgress(t.call_id, t.title, t.kind, "failed", output="interrupted") for t in closing]


def _summary(output: str) -> str:
    """A tool's output as kept for replay: all of it, or its start and how much was left out."""
    if len(output) <= TOOL_SUMMARY:
        return output
    return f"{output[:TOOL_SUMMARY]}\n… ({len(output) - TOOL_SUMMARY} more characters)"
