"""Durable state, the only SQL: one repository per aggregate, each handing out the frozen records of ``core/records.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from ..records import (
    Binding,
    ClientRequest,
    ExecutionRecord,
    ExecutionStep,
    PlanRecord,
    PlanRevisionRecord,
    PlanSessionLink,
    ReviewRecord,
    SeenUpdate,
    SessionRecord,
    TranscriptEntry,
)
from .base import Conflict
from .bridge import BridgeStateRepository
from .executions import ExecutionRepository
from .plans import PlanRepository
from .reviews import ReviewRepository
from .sessions import Entry, SessionRepository, new_session_id
from .tables import create_schema
from .workspace import WorkspaceRepository

__all__ = [
    "Binding",
    "ClientRequest",
    "Conflict",
    "Entry",
    "ExecutionRecord",
    "ExecutionStep",
    "PlanRecord",
    "PlanRevisionRecord",
    "PlanSessionLink",
    "ReviewRecord",
    "SeenUpdate",
    "SessionRecord",
    "Store",
    "TranscriptEntry",
    "new_session_id",
]

POOL_TIMEOUT_SECONDS = 600


class Store:
    """The database (SQLite in WAL mode unless the URL names another) and its repositories: ``sessions`` (with
    transcripts and turns), ``plans``, ``reviews``, ``executions``, ``bridge`` (bindings and update claims)
    and ``workspace`` (client request ids, Workspace logins)."""

    def __init__(self, url: str) -> None:
        self.url = url
        # Many turns starting at once queue for a connection rather than failing after the default 30 s.
        # SQL parameters (prompts, replies) never reach a log or an error message.
        self.engine: AsyncEngine = create_async_engine(url, pool_timeout=POOL_TIMEOUT_SECONDS, hide_parameters=True)
        if url.startswith("sqlite"):
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        connect = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)
        self.sessions = SessionRepository(connect)
        self.plans = PlanRepository(connect)
        self.reviews = ReviewRepository(connect)
        self.executions = ExecutionRepository(connect)
        self.bridge = BridgeStateRepository(connect)
        self.workspace = WorkspaceRepository(connect)

    @classmethod
    async def open(cls, url: str) -> Store:
        if url.startswith("sqlite") and ":///" in url:
            path = url.split(":///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        store = cls(url)
        async with store.engine.begin() as conn:
            await conn.run_sync(create_schema)
        return store

    async def close(self) -> None:
        await self.engine.dispose()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
