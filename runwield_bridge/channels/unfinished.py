"""Messages left unfinished by a bridge that stopped: buttons nobody can answer any more, a reply cut off mid-stream.

While a reply streams or a question waits, its message is noted in a ``MessageLog`` (the store's
``unfinished_messages`` table under ``wld bridge``); once finished, the note goes. A bridge that starts
finds the notes its predecessor left and finishes those messages: a reply ends ``(interrupted)`` instead of
its streaming ``…``, a question loses its buttons and says ``(expired)``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from .contract import Channel
from .types import Conversation, MessageRef

log = logging.getLogger(__name__)
EXPIRED = "This button has expired (its question is over, or the bridge restarted since); nothing was done."
EXPIRED_MARK = "(expired)"
INTERRUPTED_MARK = "(interrupted)"
RETRIES = (0.5, 1.0, 2.0, 4.0, 8.0)
Kind = Literal["reply", "question"]


class UnfinishedRecord(Protocol):
    message_id: str
    conversation: str
    text: str
    kind: str


class MessageLog(Protocol):
    """Where unfinished messages are noted; ``runwield_bridge.core.store.Store`` is one."""

    async def keep_message(self, channel: str, message_id: str, conversation: str, text: str, kind: str, instance: str | None = None) -> None:
        """Note a message ``instance`` shows (None where one instance runs: SQLite, ``wld chat``)."""

    async def drop_message(self, channel: str, message_id: str, conversation: str) -> None: ...

    async def unfinished_messages(self, channel: str, instance: str | None = None) -> list[UnfinishedRecord]:  # type: ignore[empty-body]
        """The channel's messages ``instance`` noted and has not finished."""


@dataclass
class _Note:
    message_id: str
    conversation: str
    text: str
    kind: str
    instance: str | None = None


class MemoryMessageLog:
    """Notes that last as long as the process (``wld chat``: nothing outlives it to be finished)."""

    def __init__(self) -> None:
        self._notes: dict[tuple[str, str, str], _Note] = {}

    async def keep_message(self, channel: str, message_id: str, conversation: str, text: str, kind: str, instance: str | None = None) -> None:
        self._notes[(channel, message_id, conversation)] = _Note(message_id, conversation, text, kind, instance)

    async def drop_message(self, channel: str, message_id: str, conversation: str) -> None:
        self._notes.pop((channel, message_id, conversation), None)

    async def unfinished_messages(self, channel: str, instance: str | None = None) -> list[UnfinishedRecord]:
        return [note for (name, _, _), note in self._notes.items() if name == channel and note.instance == instance]


@dataclass(frozen=True)
class Keeper:
    """Notes one channel's messages of one kind while they are unfinished; a failure to note is logged, never raised."""

    messages: MessageLog
    channel: str
    kind: Kind
    instance: str | None = None

    async def kept(self, ref: MessageRef, text: str) -> None:
        """Note the message as it reads now (a reply: without its streaming cursor)."""
        try:
            await self.messages.keep_message(self.channel, ref.id, ref.conversation.key, text, self.kind, self.instance)
        except Exception as exc:
            log.warning("could not note an unfinished message in %s: %s", ref.conversation.key, exc)

    async def done(self, ref: MessageRef) -> None:
        try:
            await self.messages.drop_message(self.channel, ref.id, ref.conversation.key)
        except Exception as exc:
            log.warning("could not note a finished message in %s: %s", ref.conversation.key, exc)


async def finish_left(channel: Channel, messages: MessageLog, instance: str | None = None, retries: Sequence[float] = RETRIES) -> None:
    """Finish the messages an earlier run (or ``instance``, which stopped) left unfinished in ``channel``; what the
    platform refuses (a channel still starting) is tried again after each of ``retries`` seconds, then left for the
    next start."""
    for delay in (*retries, None):
        left = 0
        for note in await messages.unfinished_messages(channel.name, instance):
            ref = MessageRef(Conversation.from_key(note.conversation), note.message_id)
            if note.kind == "question":
                finished = await mark_expired(channel, ref, note.text)
            else:
                finished = await _edit(channel, ref, f"{note.text} {INTERRUPTED_MARK}")
            if finished:
                await messages.drop_message(channel.name, note.message_id, note.conversation)
            else:
                left += 1
        if not left or delay is None:
            return
        await asyncio.sleep(delay)


async def mark_expired(channel: Channel, message: MessageRef, text: str) -> bool:
    """Take a stale message's buttons away and say it expired (once); False if the platform refused."""
    return text.endswith(EXPIRED_MARK) or await _edit(channel, message, f"{text}\n\n{EXPIRED_MARK}".strip())


async def _edit(channel: Channel, message: MessageRef, text: str) -> bool:
    try:
        await channel.edit(message, text, ())
    except Exception as exc:  # the old message keeps its look for now
        log.warning("could not finish an old message in %s: %s", message.conversation.key, exc)
        return False
    return True

