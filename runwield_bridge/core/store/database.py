"""A transaction's statements run together, in one hand-off to the database driver.

Work is a plain function of a synchronous SQLAlchemy ``Connection``; ``write`` runs it in a transaction, ``read``
on a consistent snapshot. SQLite runs it on Python's own driver, on the event loop's thread unless it would wait for
a lock (then in a thread of the store's own), so a turn's transaction costs no hand-off at all rather than three or
four per statement (aiosqlite's); other databases (PostgreSQL with asyncpg) run it through
``AsyncConnection.run_sync``, each statement a round trip on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")
Work = Callable[[Connection], T]
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
    """SQLite through Python's own driver, on the event loop's thread where it can be: a turn's statements take
    microseconds there, less than a hand-off to a thread and back. Reads run on a connection of their own (in WAL mode
    readers never wait for the writer). A write begins ``IMMEDIATE`` (it takes the write lock before its first read, so
    it never fails when a read turns into a write) on a connection that does not wait for the lock; when another
    writer holds it (in this process or another), the write goes to the writer thread instead, whose connection waits
    for the lock up to the busy timeout, so waiting writers queue there and the loop never blocks on a lock. Work
    handed to the thread runs to its end even if its caller is cancelled.

    Writes asked for in one round of the event loop share one transaction (group commit: a burst of turns, each
    writing what it shows before showing it, costs one commit a round, not one a write), each in a savepoint of its
    own so one that fails is undone alone; every caller gets its result only once that transaction is committed, and
    a write runs even if its caller is cancelled meanwhile."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self.sync_engine = create_engine(engine.url.set(drivername="sqlite"), hide_parameters=True)
        event.listen(self.sync_engine, "connect", _driver_begins_nothing)
        self._writer = DriverThread(self.sync_engine, "wld-sqlite-writer", "BEGIN IMMEDIATE")
        self._inline_writer = InlineConnection(self.sync_engine, "BEGIN IMMEDIATE", busy_timeout_ms=0)
        self._reader = InlineConnection(self.sync_engine, "BEGIN", busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS)
        self._round: list[tuple[Work[Any], asyncio.Future[Any]]] = []

    async def write(self, work: Work[T]) -> T:
        loop = asyncio.get_running_loop()
        if not self._round:
            loop.call_soon(self._commit_round)
        done: asyncio.Future[T] = loop.create_future()
        self._round.append((work, done))
        return await done

    def _commit_round(self) -> None:
        """The writes asked for since the last round, in one transaction: here, or in the writer thread when another
        writer holds the lock (or jobs wait there, which go first)."""
        round_, self._round = self._round, []
        if not round_:  # committed already, by close
            return
        works = [work for work, _ in round_]
        if not self._writer.pending:
            try:
                _settle(round_, self._inline_writer.run_all(works))
                return
            except LockHeld:
                pass
            except Exception as error:
                _settle(round_, [Failed(error)] * len(round_))
                return
        job = asyncio.ensure_future(self._writer.run(lambda conn: InlineConnection.each(conn, works)))
        job.add_done_callback(lambda ended: _settle(round_, [Failed(error)] * len(round_) if (error := ended.exception()) else ended.result()))

    async def read(self, work: Work[T]) -> T:
        return self._reader.run(work)

    async def close(self) -> None:
        self._commit_round()  # the writes asked for in this round, before the connections close
        await self._writer.close()
        self._inline_writer.close()
        self._reader.close()
        self.sync_engine.dispose()


class LockHeld(Exception):
    """Another writer holds SQLite's write lock: nothing was done."""


class InlineConnection:
    """One connection used on the thread that calls it, opened on first use; each job is one transaction on it. A
    connection that does not wait for locks raises LockHeld when its transaction cannot begin."""

    def __init__(self, engine: Any, begin: str, *, busy_timeout_ms: int) -> None:
        self._engine = engine
        self._begin = begin
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: Connection | None = None

    def run(self, work: Work[T]) -> T:
        """``work`` in a transaction begun and ended on the driver itself; SQLAlchemy's own, which the work's first
        Core statement begins, emits nothing on this driver and so is part of it."""
        conn = self._connection()
        driver = conn.connection.driver_connection
        try:
            driver.execute(self._begin)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorname in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                raise LockHeld from error
            raise
        try:
            result = work(conn)
        except BaseException:
            conn.rollback() if conn.in_transaction() else driver.rollback()
            raise
        conn.commit() if conn.in_transaction() else driver.commit()
        return result

    def run_all(self, works: list[Work[Any]]) -> list[Any]:
        """Several works in one transaction, each in a savepoint: the result of each, or `Failed` with what it raised."""
        return self.run(lambda conn: InlineConnection.each(conn, works))

    @staticmethod
    def each(conn: Connection, works: list[Work[Any]]) -> list[Any]:
        """Run works one after another in ``conn``'s transaction; one that raises is rolled back to where it began and
        its exception (as `Failed`) is its result. A lone work needs no savepoint: its exception undoes the transaction."""
        if len(works) == 1:
            return [works[0](conn)]
        driver = conn.connection.driver_connection
        outcomes: list[Any] = []
        for work in works:
            driver.execute("SAVEPOINT round")
            try:
                outcomes.append(work(conn))
            except Exception as error:
                driver.execute("ROLLBACK TO round")
                outcomes.append(Failed(error))
            driver.execute("RELEASE round")
        return outcomes

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> Connection:
        if self._conn is None:
            conn = self._engine.connect()
            conn.connection.driver_connection.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
            self._conn = conn
        return self._conn


class DriverThread:
    """One thread with one connection, opened in it on first use; each job is one transaction on that connection."""

    def __init__(self, engine: Any, name: str, begin: str) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._connection = InlineConnection(engine, begin, busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS)
        self._used = False
        self.pending = 0
        """Jobs handed over and not yet done."""

    async def run(self, work: Work[T]) -> T:
        self._used = True
        self.pending += 1
        job = asyncio.get_running_loop().run_in_executor(self._executor, self._connection.run, work)
        job.add_done_callback(self._done)
        return await asyncio.shield(job)

    def _done(self, _job: asyncio.Future[Any]) -> None:
        self.pending -= 1

    async def close(self) -> None:
        """Let the jobs handed over finish, then close the connection in its own thread."""
        if self._used:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._connection.close)
        self._executor.shutdown(wait=False)


@dataclass(frozen=True)
class Failed:
    """What a write of a round raised (its savepoint undone)."""

    error: Exception


def _settle(round_: list[tuple[Work[Any], asyncio.Future[Any]]], outcomes: list[Any]) -> None:
    """Hand each write's caller its result (or exception), unless it stopped waiting."""
    for (_, done), outcome in zip(round_, outcomes):
        if done.done():
            continue
        if isinstance(outcome, Failed):
            done.set_exception(outcome.error)
        else:
            done.set_result(outcome)


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
    _wal(cursor)
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _wal(cursor: Any) -> None:
    """``journal_mode=WAL``: a fresh file's connections opening at once can find its lock taken without SQLite
    calling the busy handler ("database is locked" at once), so that is retried, up to the busy timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as error:  # sqlite3's, or SQLAlchemy's wrapping of it (aiosqlite's adapter)
            if "database is locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # only on a brand-new file, while another connection converts it


def _driver_begins_nothing(dbapi_conn: Any, record: Any) -> None:
    """The driver's own implicit transactions are off (and SQLAlchemy's begin nothing on it): each one is begun
    explicitly, by ``InlineConnection.run``."""
    sqlite_pragmas(dbapi_conn, record)
    dbapi_conn.isolation_level = None

