"""Sessions with their append-only transcripts and their turns: one aggregate, written together."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from sqlalchemy import and_, func, or_
from sqlmodel import col, select, update
from sqlmodel.ext.asyncio.session import AsyncSession

from ..records import SessionRecord, TranscriptEntry
from .base import Repository, frozen
from .tables import SessionRow, TranscriptRow, TurnRow

Entry = tuple[str, str, dict[str, Any]]
"""A transcript entry to append: kind, text and data."""


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


class SessionRepository(Repository):
    """Sessions, their transcripts and their turns."""

    async def create_session(self, *, cwd: str, agent: str, model: str, reasoning: str | None, title: str = "") -> SessionRecord:
        row = SessionRow(id=new_session_id(), cwd=cwd, agent=agent, model=model, reasoning=reasoning, title=title)
        async with self._db() as db:
            db.add(row)
            await db.commit()
            return frozen(SessionRecord, row)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._get(SessionRecord, SessionRow, session_id)

    async def list_sessions(
        self,
        *,
        include_archived: bool = False,
        cwd: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first (ties by id): those in ``cwd`` when given, only those after the
        ``(updated_at, id)`` of ``after`` (a page's last Session), at most ``limit``."""
        updated, ident = col(SessionRow.updated_at), col(SessionRow.id)
        query = select(SessionRow).order_by(updated.desc(), ident.desc()).limit(limit)
        if not include_archived:
            query = query.where(col(SessionRow.archived).is_(False))
        if cwd is not None:
            query = query.where(col(SessionRow.cwd) == cwd)
        if after is not None:
            query = query.where(or_(updated < after[0], and_(updated == after[0], ident < after[1])))
        return await self._all(SessionRecord, query)

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields of a Session; ``cost_delta`` adds to the cumulative cost."""
        async with self._db() as db:
            row = await _changed(db, session_id, changes)
            await db.commit()
            return frozen(SessionRecord, row)

    async def append_many(self, session_id: str, entries: list[Entry], **changes: Any) -> SessionRecord | None:
        """Append transcript entries and apply Session changes (as ``update_session``) in one transaction."""
        async with self._db() as db:
            return await _committed(db, await _append(db, session_id, entries, changes))

    async def begin_turn(
        self, session_id: str, turn_id: str, entries: list[Entry], interrupted: Entry, **changes: Any
    ) -> SessionRecord | None:
        """Start a turn with its first entries and Session changes, in one transaction. Turns of the Session still
        running are interrupted first (only one turn runs at a time, so their process ended), each with the
        ``interrupted`` entry."""
        async with self._db() as db:
            await _interrupt(db, session_id, None, interrupted)
            db.add(TurnRow(id=turn_id, session_id=session_id))
            return await _committed(db, await _append(db, session_id, entries, changes))

    async def end_turn(
        self, session_id: str, turn_id: str, stop_reason: str, entries: list[Entry], **changes: Any
    ) -> SessionRecord | None:
        """Settle a turn with its last entries and Session changes, in one transaction."""
        async with self._db() as db:
            await db.exec(
                update(TurnRow)
                .where(col(TurnRow.id) == turn_id)
                .values(state="settled", stop_reason=stop_reason, ended_at=time.time())
            )
            return await _committed(db, await _append(db, session_id, entries, changes))

    async def running_turns(self, session_id: str) -> list[str]:
        """Ids of the Session's turns that have not settled."""
        query = select(TurnRow.id).where(TurnRow.session_id == session_id, TurnRow.state == "running")
        async with self._db() as db:
            return list((await db.exec(query)).all())

    async def interrupt_turns(self, session_id: str, turn_ids: list[str], interrupted: Entry) -> None:
        """Mark those of ``turn_ids`` still running interrupted, each with the ``interrupted`` entry, once."""
        async with self._db() as db:
            await _interrupt(db, session_id, turn_ids, interrupted)
            await db.commit()

    async def transcript(self, session_id: str, after: int = 0) -> list[TranscriptEntry]:
        """The Session's transcript, oldest first; ``after`` skips entries up to that id."""
        query = (
            select(TranscriptRow)
            .where(TranscriptRow.session_id == session_id, col(TranscriptRow.id) > after)
            .order_by(col(TranscriptRow.id))
        )
        return await self._all(TranscriptEntry, query)


    async def revision(self, session_id: str) -> int:
        """The Session's transcript revision: the id of its latest entry (0 before the first); it only grows."""
        query = select(func.max(TranscriptRow.id)).where(TranscriptRow.session_id == session_id)
        async with self._db() as db:
            return (await db.exec(query)).one() or 0


async def _committed(db: AsyncSession, row: SessionRow | None) -> SessionRecord | None:
    await db.commit()
    return None if row is None else frozen(SessionRecord, row)


async def _append(db: AsyncSession, session_id: str, entries: list[Entry], changes: dict[str, Any]) -> SessionRow | None:
    """Add transcript entries and apply Session changes in ``db``; the changed Session, if any."""
    for kind, text, data in entries:
        db.add(TranscriptRow(session_id=session_id, kind=kind, text=text, data=json.dumps(data)))
    return await _changed(db, session_id, changes) if changes else None


async def _changed(db: AsyncSession, session_id: str, changes: dict[str, Any]) -> SessionRow:
    """Apply Session changes in ``db``: ``cost_delta`` adds to the cost, the rest are set; ``updated_at`` is stamped."""
    row = await db.get(SessionRow, session_id)
    if row is None:
        raise KeyError(session_id)
    changes = dict(changes)
    row.cost_usd += changes.pop("cost_delta", 0.0)
    for key, value in changes.items():
        setattr(row, key, value)
    row.updated_at = time.time()
    db.add(row)
    return row


async def _interrupt(db: AsyncSession, session_id: str, turn_ids: list[str] | None, entry: Entry) -> None:
    """Mark the Session's running turns (those of ``turn_ids`` when given) interrupted in one statement, so two
    processes never mark a turn twice, and add ``entry``, with the turn's id, for each."""
    condition = [col(TurnRow.session_id) == session_id, col(TurnRow.state) == "running"]
    if turn_ids is not None:
        condition.append(col(TurnRow.id).in_(turn_ids))
    marked = await db.exec(
        update(TurnRow).where(*condition).values(state="interrupted", ended_at=time.time()).returning(TurnRow.id)
    )
    kind, text, data = entry
    for turn_id in sorted(marked.scalars().all()):
        db.add(TranscriptRow(session_id=session_id, kind=kind, text=text, data=json.dumps({**data, "turn": turn_id})))
