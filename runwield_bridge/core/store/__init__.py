"""Durable state, the only SQL: one repository per aggregate, each handing out the frozen records of ``core/records.py``."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from ..locks import FileLocks, Locks
from ..records import (
    ArtifactReviewRecord,
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
from .artifact_reviews import ArtifactReviewRepository
from .base import Conflict
from .bridge import BridgeStateRepository
from .code_reviews import CodeReviewRepository
from .database import database_for, sqlite_pragmas
from .executions import ExecutionRepository
from .instances import InstanceRepository
from .locks import AdvisoryLocks
from .notifier import LocalNotifier, Notifier, PostgresNotifier
from .migrate import upgrade
from .pool_log import install as quiet_cancelled_checkins
from .plans import PlanRepository
from .reviews import ReviewRepository
from .sessions import Entry, SessionRepository, new_session_id
from .summaries import SummaryRepository
from .workspace import WorkspaceRepository

__all__ = [
    "ArtifactReviewRecord",
    "Binding",
    "ClientRequest",
    "Conflict",
    "Entry",
    "ExecutionRecord",
    "ExecutionStep",
    "Notifier",
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
    """The database (SQLite in WAL mode unless the URL names another, PostgreSQL say) and its repositories: ``sessions``
    (with transcripts and turns), ``plans``, ``reviews``, ``code_reviews``, ``artifact_reviews``, ``executions``,
    ``bridge`` (bindings, update claims and unfinished chat messages), ``workspace`` (client request ids, Workspace
    logins) and ``summaries`` (what compaction wrote); and the writer locks that go with it. On PostgreSQL also
    ``instances`` (leases, conversation owners and handoffs between ``wld bridge`` instances); ``notifier`` wakes
    waiters in other processes there (``LISTEN/NOTIFY``), else in this one."""

    def __init__(self, url: str) -> None:
        self.url = url
        # Many turns starting at once queue for a connection rather than failing after the default 30 s.
        # SQL parameters (prompts, replies) never reach a log or an error message.
        self.engine: AsyncEngine = create_async_engine(url, pool_timeout=POOL_TIMEOUT_SECONDS, hide_parameters=True)
        if url.startswith("sqlite"):
            event.listen(self.engine.sync_engine, "connect", sqlite_pragmas)
        self.advisory_locks: AdvisoryLocks | None = None
        self.file_locks: dict[Path, FileLocks] = {}
        self.instances: InstanceRepository | None = None
        self.notifier: Notifier = LocalNotifier()
        if self.engine.dialect.name == "postgresql":
            # The held writer locks share one connection, and each wait for one (rare) has its own: a pool apart from the queries.
            lock_engine = create_async_engine(url, isolation_level="AUTOCOMMIT", max_overflow=-1, hide_parameters=True)
            self.advisory_locks = AdvisoryLocks(lock_engine)
            self.instances = InstanceRepository(self.engine)
            self.notifier = PostgresNotifier(url, self.engine)
        connect = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)
        self.database = database_for(self.engine)  # what the hot path (a turn's reads and writes) runs on
        self.sessions = SessionRepository(connect, self.database)
        self.plans = PlanRepository(connect, self.database)
        self.reviews = ReviewRepository(connect, self.database)
        self.code_reviews = CodeReviewRepository(connect, self.database)
        self.artifact_reviews = ArtifactReviewRepository(connect, self.database)
        self.executions = ExecutionRepository(connect, self.database)
        self.bridge = BridgeStateRepository(connect, self.database)
        self.workspace = WorkspaceRepository(connect, self.database)
        self.summaries = SummaryRepository(connect, self.database)

    @classmethod
    async def open(cls, url: str) -> Store:
        """The store, its database brought to the newest schema version first (see ``migrate.py``)."""
        quiet_cancelled_checkins()
        if url.startswith("sqlite") and ":///" in url:
            path = url.split(":///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        store = cls(url)
        try:
            await upgrade(store.engine)
        except BaseException:
            await store.close()
            raise
        return store

    def writer_locks(self, directory: Path) -> Locks:
        """One writer at a time per name: advisory locks in PostgreSQL (across hosts), else lock files in ``directory``
        (opened once per store, however many turns run)."""
        if self.advisory_locks is not None:
            return self.advisory_locks
        if (locks := self.file_locks.get(directory)) is None:
            locks = self.file_locks[directory] = FileLocks(directory)
        return locks

    async def close(self) -> None:
        for locks in self.file_locks.values():
            locks.close()
        await self.notifier.close()
        await self.database.close()
        await self.engine.dispose()
        if self.advisory_locks is not None:
            await self.advisory_locks.close()
            await self.advisory_locks.engine.dispose()

