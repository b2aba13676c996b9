"""The chat bridge's follow-up queues: messages that came while a conversation's turn ran, and each conversation's mode."""

from __future__ import annotations

from sqlalchemy import delete
from sqlmodel import col, select, update

from ..records import QueuedMessage
from .base import Repository, frozen
from .tables import QueuedMessageRow, QueueModeRow


class FollowUpRepository(Repository):
    """What ``wld bridge`` keeps of each conversation's queue across restarts and instances."""

    async def queue_message(self, conversation: str, payload: str, size: int) -> QueuedMessage:
        async with self._db() as db:
            row = QueuedMessageRow(conversation=conversation, payload=payload, size=size)
            db.add(row)
            await db.commit()
            return frozen(QueuedMessage, row)

    async def queued_messages(self, conversation: str) -> list[QueuedMessage]:
        """The conversation's queue, oldest first."""
        query = select(QueuedMessageRow).where(QueuedMessageRow.conversation == conversation).order_by(col(QueuedMessageRow.id))
        async with self._db() as db:
            return [frozen(QueuedMessage, row) for row in (await db.exec(query)).all()]

    async def mark_sending(self, ids: list[int]) -> None:
        """These messages are handed to a turn: after a crash they are reported, not sent again."""
        async with self._db() as db:
            await db.exec(update(QueuedMessageRow).where(col(QueuedMessageRow.id).in_(ids)).values(sending=True))
            await db.commit()

    async def drop_queued(self, conversation: str, ids: list[int] | None = None) -> int:
        """Drop the given messages of the conversation's queue (None: all of it); how many were dropped."""
        query = delete(QueuedMessageRow).where(QueuedMessageRow.conversation == conversation)
        if ids is not None:
            query = query.where(col(QueuedMessageRow.id).in_(ids))
        async with self._db() as db:
            result = await db.exec(query)
            await db.commit()
            return int(result.rowcount)

    async def queued_conversations(self, prefix: str) -> list[str]:
        """The conversations (keys starting with ``prefix``) with messages in their queue."""
        query = select(QueuedMessageRow.conversation).where(col(QueuedMessageRow.conversation).startswith(prefix)).group_by(QueuedMessageRow.conversation)
        async with self._db() as db:
            return list((await db.exec(query)).all())

    async def queue_modes(self, prefix: str) -> dict[str, str]:
        """The modes set with ``/queue`` in the conversations whose keys start with ``prefix``."""
        query = select(QueueModeRow).where(col(QueueModeRow.conversation).startswith(prefix))
        async with self._db() as db:
            return {row.conversation: row.mode for row in (await db.exec(query)).all()}

    async def set_queue_mode(self, conversation: str, mode: str) -> None:
        async with self._db() as db:
            row = await db.get(QueueModeRow, conversation) or QueueModeRow(conversation=conversation, mode=mode)
            row.mode = mode
            db.add(row)
            await db.commit()
