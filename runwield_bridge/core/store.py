"""Durable state: Sessions, their append-only transcripts, and conversation bindings. The only SQL."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession


class SessionRecord(SQLModel, table=True):
    """A Session as stored."""

    __tablename__ = "sessions"
    id: str = Field(primary_key=True)
    title: str = ""
    cwd: str
    archived: bool = False
    agent: str
    model: str
    reasoning: str | None = None
    cost_usd: float = 0.0
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)


class TranscriptEntry(SQLModel, table=True):
    """One entry of a Session's append-only transcript."""

    __tablename__ = "transcript"
    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(index=True, foreign_key="sessions.id")
    kind: str  # user | agent | thought | tool | notice
    text: str = ""
    data: str = "{}"
    created_at: float = Field(default_factory=time.time)

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.data)


class Binding(SQLModel, table=True):
    """A conversation bound to an ACP session on an agent."""

    __tablename__ = "bindings"
    conversation: str = Field(primary_key=True)
    agent: str
    acp_session_id: str
    cwd: str | None = None
    updated_at: float = Field(default_factory=time.time)


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


class Store:
    """Async access to the database; SQLite in WAL mode unless the URL names another database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: AsyncEngine = create_async_engine(url)
        if url.startswith("sqlite"):
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._sessions = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)

    @classmethod
    async def open(cls, url: str) -> Store:
        if url.startswith("sqlite") and ":///" in url:
            path = url.split(":///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        store = cls(url)
        async with store.engine.begin() as conn:
            await conn.run_sync(SQLModel.metadata.create_all)
        return store

    async def close(self) -> None:
        await self.engine.dispose()

    async def create_session(self, *, cwd: str, agent: str, model: str, reasoning: str | None, title: str = "") -> SessionRecord:
        record = SessionRecord(id=new_session_id(), cwd=cwd, agent=agent, model=model, reasoning=reasoning, title=title)
        async with self._sessions() as db:
            db.add(record)
            await db.commit()
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        async with self._sessions() as db:
            return await db.get(SessionRecord, session_id)

    async def list_sessions(self, *, include_archived: bool = False) -> list[SessionRecord]:
        query = select(SessionRecord).order_by(col(SessionRecord.updated_at).desc())
        if not include_archived:
            query = query.where(col(SessionRecord.archived).is_(False))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields of a Session; ``cost_delta`` adds to the cumulative cost."""
        async with self._sessions() as db:
            record = await db.get(SessionRecord, session_id)
            if record is None:
                raise KeyError(session_id)
            _apply(record, changes)
            db.add(record)
            await db.commit()
            return record

    async def append(self, session_id: str, kind: str, text: str = "", **data: Any) -> None:
        await self.append_many(session_id, [(kind, text, data)])

    async def append_many(
        self, session_id: str, entries: list[tuple[str, str, dict[str, Any]]], **changes: Any
    ) -> SessionRecord | None:
        """Append transcript entries and apply Session changes (as ``update_session``) in one transaction."""
        async with self._sessions() as db:
            for kind, text, data in entries:
                db.add(TranscriptEntry(session_id=session_id, kind=kind, text=text, data=json.dumps(data)))
            record = None
            if changes:
                record = await db.get(SessionRecord, session_id)
                if record is None:
                    raise KeyError(session_id)
                _apply(record, changes)
                db.add(record)
            await db.commit()
            return record

    async def transcript(self, session_id: str, after: int = 0) -> list[TranscriptEntry]:
        """The Session's transcript, oldest first; ``after`` skips entries up to that id."""
        query = (
            select(TranscriptEntry)
            .where(TranscriptEntry.session_id == session_id, col(TranscriptEntry.id) > after)
            .order_by(col(TranscriptEntry.id))
        )
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def get_binding(self, conversation: str) -> Binding | None:
        async with self._sessions() as db:
            return await db.get(Binding, conversation)

    async def set_binding(self, conversation: str, agent: str, acp_session_id: str, cwd: str | None = None) -> Binding:
        async with self._sessions() as db:
            binding = await db.get(Binding, conversation) or Binding(conversation=conversation, agent=agent, acp_session_id=acp_session_id)
            binding.agent, binding.acp_session_id, binding.cwd = agent, acp_session_id, cwd
            binding.updated_at = time.time()
            db.add(binding)
            await db.commit()
            return binding

    async def delete_binding(self, conversation: str) -> None:
        async with self._sessions() as db:
            if binding := await db.get(Binding, conversation):
                await db.delete(binding)
                await db.commit()


def _apply(record: SessionRecord, changes: dict[str, Any]) -> None:
    changes = dict(changes)
    record.cost_usd += changes.pop("cost_delta", 0.0)
    for key, value in changes.items():
        setattr(record, key, value)
    record.updated_at = time.time()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
