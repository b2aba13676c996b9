"""A transaction's statements run together, in one hand-off to the database driver.

Work is a plain function of a synchronous SQLAlchemy ``Connection``; ``write`` runs it in a transaction, ``read``
on a consistent snapshot. SQLite runs it in a thread of the store's own, on its own driver, so a turn's
transaction costs one thread hand-off rather than three or four per statement (aiosqlite's); other databases
(PostgreSQL with asyncpg) run it through ``AsyncConnection.run_sync``, each statement a round trip on the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")
Work = Callable[[Connection], T]
BEGIN_OPTION = "wld_begin"
"""The execution option that says how a SQLite connection begins its transactions."""
SQLITE_BUSY_TIMEOUT_MS = 60_000


class Database:
    """Runs work on a driver that is asynchronous itself (asyncpg): the statements await on the loop."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def write(self, work: Work[T]) -> T:
        """``work`` in one transaction, committed when it returns (rolled back if it raises)."""
        async with self.engine.begin() as conn:
            return await conn.run_sync(work)

    async def read(self, work: Work[T]) -> T:
        """``work`` on one connection, writing nothing."""
        async with self.engine.connect() as conn:
            return await conn.run_sync(work)

    async def close(self) -> None:
        """Nothing of its own to close: the engine is the store's."""


class SqliteDatabase(Database):
    """SQLite through Python's own driver in two threads of the store's, each with one connection of its own: the
    writer begins ``IMMEDIATE`` (it takes the write lock first, so writers queue for it, across processes too, for
    up to the busy timeout, instead of failing when a read turns into a write), the reader reads a snapshot (in WAL
    mode readers never wait for the writer). Work handed over runs to its end even if its caller is cancelled."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self.sync_engine = create_engine(engine.url.set(drivername="sqlite"), hide_parameters=True)
        event.listen(self.sync_engine, "connect", _driver_begins_nothing)
        event.listen(self.sync_engine, "begin", _begin)
        self._writer = DriverThread(self.sync_engine, "wld-sqlite-writer", "BEGIN IMMEDIATE")
        self._reader = DriverThread(self.sync_engine, "wld-sqlite-reader", "BEGIN")

    async def write(self, work: Work[T]) -> T:
        return await self._writer.run(work)

    async def read(self, work: Work[T]) -> T:
        return await self._reader.run(work)

    async def close(self) -> None:
        await self._writer.close()
        await self._reader.close()
        self.sync_engine.dispose()


class DriverThread:
    """One thread with one connection, opened in it on first use; each job is one transaction on that connection."""

    def __init__(self, engine: Any, name: str, begin: str) -> None:
        self._engine = engine
        self._begin = begin
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._conn: Connection | None = None
        self._used = False

    async def run(self, work: Work[T]) -> T:
        self._used = True
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._transaction, work)

    async def close(self) -> None:
        """Let the jobs handed over finish, then close the connection in its own thread."""
        if self._used:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=False)

    def _transaction(self, work: Work[T]) -> T:
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(**{BEGIN_OPTION: self._begin})
        with self._conn.begin():
            return work(self._conn)

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def database_for(engine: AsyncEngine) -> Database:
    """SQLite files get their own threads; anything else (PostgreSQL, an in-memory SQLite) runs on its engine."""
    path = engine.url.database
    if engine.dialect.name == "sqlite" and path and path != ":memory:" and not path.startswith("file:"):
        return SqliteDatabase(engine)
    return Database(engine)


def sqlite_pragmas(dbapi_conn: Any, _record: Any = None) -> None:
    """How every SQLite connection of the store works: WAL, foreign keys, a long busy timeout."""
    cursor = dbapi_conn.cursor()
    # first: a process starting beside another (migrating a new database, say) waits for it; on a busy machine
    # that can take well over 10 s, and a wait is better than a failed request
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _driver_begins_nothing(dbapi_conn: Any, record: Any) -> None:
    """The driver's own implicit transactions are off, so ``_begin`` says how each one begins."""
    sqlite_pragmas(dbapi_conn, record)
    dbapi_conn.isolation_level = None


def _begin(conn: Connection) -> None:
    conn.exec_driver_sql(conn.get_execution_options().get(BEGIN_OPTION, "BEGIN"))
