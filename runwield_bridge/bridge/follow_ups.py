"""A conversation's follow-up queue: the messages that came while its turn ran, kept until a turn takes them.

With the store they are written down before the chat is told they were queued, so a crash or a restart loses none:
those still waiting are sent once the conversation goes on; those a turn had taken when the bridge stopped are not
sent again (part of the turn may have happened), and the conversation is told which they were.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Protocol, get_args

from ..channels.settings import QueueMode
from ..channels.types import Conversation, IncomingMessage
from .handed_events import message_from, message_json

QUEUE_MODES: tuple[str, ...] = get_args(QueueMode)
MAX_WAITING = 20
MAX_WAITING_BYTES = 32 * 1024
"""A queue holds at most this many messages, and this much text (UTF-8)."""
MODE_MEANING = {
    "steer": "added to the running turn where the agent can take them, else sent together when it ends",
    "collect": "sent together, as one prompt, when the running turn ends",
    "followup": "each sent as a turn of its own, in order, once the turn before it ends",
    "interrupt": "the running turn is cancelled, and what was sent meanwhile goes at once",
}

STEERED = "↪ added to the running turn"
INTERRUPTING = "⏹ Stopping the running turn; your message goes to the agent as soon as it has stopped."

class QueuedRecord(Protocol):
    id: int | None
    payload: str
    size: int
    sending: bool


class FollowUpLog(Protocol):
    """Where queues and modes are kept: ``Store.bridge.follow_ups`` (``runwield_bridge.core.store``), or memory."""

    async def queue_message(self, conversation: str, payload: str, size: int) -> QueuedRecord: ...

    async def queued_messages(self, conversation: str) -> list[QueuedRecord]: ...  # type: ignore[empty-body]

    async def mark_sending(self, ids: list[int]) -> None: ...

    async def drop_queued(self, conversation: str, ids: list[int] | None = None) -> int: ...  # type: ignore[empty-body]

    async def queued_conversations(self, prefix: str) -> list[str]: ...  # type: ignore[empty-body]

    async def queue_modes(self, prefix: str) -> dict[str, str]: ...  # type: ignore[empty-body]

    async def set_queue_mode(self, conversation: str, mode: str) -> None: ...


@dataclass
class MemoryRecord:
    id: int | None
    conversation: str
    payload: str
    size: int
    sending: bool = False


class MemoryFollowUpLog:
    """Queues that last as long as the process (``wld chat``)."""

    def __init__(self) -> None:
        self._records: list[MemoryRecord] = []
        self._modes: dict[str, str] = {}
        self._ids = itertools.count(1)

    async def queue_message(self, conversation: str, payload: str, size: int) -> QueuedRecord:
        record = MemoryRecord(next(self._ids), conversation, payload, size)
        self._records.append(record)
        return record

    async def queued_messages(self, conversation: str) -> list[QueuedRecord]:
        return [r for r in self._records if r.conversation == conversation]

    async def mark_sending(self, ids: list[int]) -> None:
        for record in self._records:
            record.sending = record.sending or record.id in ids

    async def drop_queued(self, conversation: str, ids: list[int] | None = None) -> int:
        kept = [r for r in self._records if r.conversation != conversation or (ids is not None and r.id not in ids)]
        dropped, self._records = len(self._records) - len(kept), kept
        return dropped

    async def queued_conversations(self, prefix: str) -> list[str]:
        return sorted({r.conversation for r in self._records if r.conversation.startswith(prefix)})

    async def queue_modes(self, prefix: str) -> dict[str, str]:
        return {key: mode for key, mode in self._modes.items() if key.startswith(prefix)}

    async def set_queue_mode(self, conversation: str, mode: str) -> None:
        self._modes[conversation] = mode


class StoredQueues:
    """Which conversations have a stored queue or mode, read per channel at a start or a take-over (two queries), so
    opening any other conversation reads nothing more."""

    def __init__(self, log: FollowUpLog) -> None:
        self.log = log
        self._queued: set[str] = set()
        self._modes: dict[str, str] = {}
        self._scanned: set[str] = set()

    async def scan(self, channel: str) -> set[str]:
        """Read the channel's stored queues and modes again; the conversations with messages queued."""
        prefix = f"{channel}:"
        queued = set(await self.log.queued_conversations(prefix))
        self._modes.update(await self.log.queue_modes(prefix))
        self._queued |= queued
        self._scanned.add(channel)
        return queued

    def mode(self, conversation: str) -> str | None:
        return self._modes.get(conversation)

    def may_hold(self, conversation: Conversation) -> bool:
        """Whether the conversation's queue must be read: it had one stored, or its channel was not scanned yet."""
        return conversation.key in self._queued or conversation.channel not in self._scanned


@dataclass(frozen=True)
class Waiting:
    """A queued message."""

    id: int
    message: IncomingMessage
    size: int

    @property
    def is_command(self) -> bool:
        """A slash command for the agent: it runs as a prompt of its own, never merged with other text."""
        return self.message.text.strip().startswith("/")


class FollowUpQueue:
    """One conversation's queue and mode, mirrored in its ``FollowUpLog``."""

    __slots__ = ("log", "conversation", "mode", "waiting", "taken")  # one per conversation: no __dict__ each

    def __init__(self, log: FollowUpLog, conversation: str, mode: str) -> None:
        self.log = log
        self.conversation = conversation
        self.mode = mode
        self.waiting: list[Waiting] = []
        self.taken: list[Waiting] = []
        """The batch handed to the running turn, dropped once it settles."""

    def __len__(self) -> int:
        return len(self.waiting)

    async def load(self) -> list[IncomingMessage]:
        """Read the stored queue; returns the messages a stopped run had handed to a turn (now dropped)."""
        records = await self.log.queued_messages(self.conversation)
        cut = [r for r in records if r.sending]
        if cut:
            await self.log.drop_queued(self.conversation, [r.id for r in cut if r.id is not None])
        self.waiting = [Waiting(r.id, message_from(r.payload), r.size) for r in records if not r.sending and r.id is not None]
        return [message_from(r.payload) for r in cut]

    async def put(self, message: IncomingMessage) -> str | None:
        """Queue the message (stored first); a refusal to tell the person if the queue is full (then nothing changes)."""
        size = len(message.text.encode("utf-8"))
        if len(self.waiting) >= MAX_WAITING or sum(w.size for w in self.waiting) + size > MAX_WAITING_BYTES:
            return (
                f"🚫 The queue is full ({len(self.waiting)} messages waiting; at most {MAX_WAITING} messages or "
                f"{MAX_WAITING_BYTES // 1024} KiB), so this message was not queued. Wait for the agent, or send /queue clear or /cancel."
            )
        record = await self.log.queue_message(self.conversation, await message_json(message), size)
        assert record.id is not None
        self.waiting.append(Waiting(record.id, message, size))
        return None

    async def take(self) -> list[Waiting]:
        """The next batch for a turn, marked as taken: in ``followup`` mode the first message, else every message up to
        the next slash command (a slash command alone)."""
        if not self.waiting:
            return []
        if self.mode == "followup" or self.waiting[0].is_command:
            count = 1
        else:
            count = next((i for i, w in enumerate(self.waiting) if w.is_command), len(self.waiting))
        batch, self.waiting = self.waiting[:count], self.waiting[count:]
        await self.log.mark_sending([w.id for w in batch])
        self.taken = batch
        return batch

    async def settled(self) -> None:
        """The turn that took the last batch has settled: its messages are done with."""
        taken, self.taken = self.taken, []
        if taken:
            await self.log.drop_queued(self.conversation, [w.id for w in taken])

    async def clear(self) -> int:
        """Drop every waiting message; how many there were."""
        ids, self.waiting = [w.id for w in self.waiting], []
        if ids:
            await self.log.drop_queued(self.conversation, ids)
        return len(ids)

    async def set_mode(self, mode: str) -> None:
        await self.log.set_queue_mode(self.conversation, mode)
        self.mode = mode

    async def command(self, argument: str) -> str:
        """``/queue``: the mode and what waits; ``/queue MODE`` sets the mode; ``/queue clear`` drops what waits.
        Returns what to tell the person; an unknown mode changes nothing."""
        word = argument.strip().lower()
        if not word:
            return self.describe()
        if word == "clear":
            dropped = await self.clear()
            return f"🗑 Dropped {_count(dropped, 'queued message')}." if dropped else "Nothing was waiting."
        if word not in QUEUE_MODES:
            return f"There is no queue mode {argument.strip()!r}; nothing was changed. Use /queue {', /queue '.join(QUEUE_MODES)}, or /queue clear."
        await self.set_mode(word)
        return mode_line(word)

    def describe(self) -> str:
        """The mode and what is waiting, as ``/queue`` shows them."""
        lines = [mode_line(self.mode)]
        if not self.waiting:
            lines.append("Nothing is waiting.")
        else:
            lines.append(f"Waiting ({len(self.waiting)}):")
            lines += [f"{i}. {_excerpt(w.message.text)}" for i, w in enumerate(self.waiting, 1)]
        lines.append("Change it with /queue steer, /queue collect, /queue followup or /queue interrupt; /queue clear drops what is waiting.")
        return "\n".join(lines)


def mode_line(mode: str) -> str:
    return f"Queue mode: {mode}: messages sent while the agent works are {MODE_MEANING[mode]}."


def queued_notice(waiting: int) -> str:
    return f"📥 Queued ({_count(waiting, 'message')} waiting): sent to the agent when the running turn ends. /queue shows what waits."


def sending_notice(batch: int, left: int) -> str:
    """The line above the prompt a queued batch becomes."""
    if batch > 1:
        return f"📨 Sending the {batch} messages queued meanwhile to the agent, as one prompt."
    return "📨 Sending the message queued meanwhile to the agent" + (f" ({left} more waiting)." if left else ".")


def going_next(waiting: int) -> str:
    """After /cancel: what is queued is not dropped with the turn."""
    return f"{_count(waiting, 'queued message')} {'go' if waiting > 1 else 'goes'} next; /queue clear drops {'them' if waiting > 1 else 'it'}."


def cut_notice(cut: list[IncomingMessage]) -> str:
    """Which queued messages a stopped run had handed to a turn, and were therefore not sent again."""
    listed = "\n".join(f"• {m.text.strip() or '(an image)'}" for m in cut)
    which, were = ("these queued messages", "they were") if len(cut) > 1 else ("this queued message", "it was")
    return f"⚠️ The bridge stopped while the agent was answering {which}, so {were} not sent again (nothing is answered twice):\n{listed}\nSend again what still matters."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split()) or "(an image)"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
