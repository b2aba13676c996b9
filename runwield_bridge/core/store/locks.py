"""Writer locks in PostgreSQL: session-level advisory locks, all of a process's held on one connection of their own,
so they hold across hosts and the server drops them when that connection (or the process) dies."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..locks import NamedLock

log = logging.getLogger(__name__)

TRY = text("SELECT pg_try_advisory_lock(:key)")
WAIT = text("SELECT pg_advisory_lock(:key)")
UNLOCK = text("SELECT pg_advisory_unlock(:key)")
# A bigint advisory lock shows in pg_locks as its high and low 32 bits (classid, objid) with objsubid 1.
HELD = text(
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = :high AND objid = :low)"
)


class AdvisoryLocks:
    """Every advisory lock this process holds, on one connection of their own: a held lock costs no server connection
    (hundreds of turns at once stay within ``max_connections``), and the server drops them all when the process, or
    that connection, dies. ``engine`` is in autocommit mode, so a held lock keeps no transaction open.

    Session-level advisory locks stack on one connection, so this process's holders are kept apart here: a key is
    given to one holder at a time, in the process as across processes."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._conn: AsyncConnection | None = None
        self._held: set[int] = set()
        self._turn = asyncio.Lock()  # one statement at a time on the shared connection

    def __call__(self, name: str) -> NamedLock:
        return NamedLock(self, name)

    def holds(self, key: int) -> bool:
        return key in self._held

    async def try_lock(self, key: int) -> bool:
        """Take ``key`` without waiting. A caller cancelled meanwhile holds nothing: what the statement took is given back."""
        attempt = asyncio.ensure_future(self._try_lock(key))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                if await attempt:
                    await self.unlock(key)
            raise

    async def unlock(self, key: int) -> None:
        async with self._turn:
            if key not in self._held:
                return
            self._held.discard(key)
            if self._conn is not None:
                await self._run(self._conn, UNLOCK, key)

    async def taken(self, key: int) -> bool:
        if self.holds(key):
            return True
        async with self.engine.connect() as conn:
            return bool((await conn.execute(HELD, {"high": key >> 32, "low": key & 0xFFFFFFFF})).scalar())

    async def released(self, key: int) -> None:
        """Wait for the lock on a connection of its own (the server wakes it: nothing polls), then let go at once."""
        conn = await self.engine.connect()
        try:
            await conn.execute(WAIT, {"key": key})
            await conn.execute(UNLOCK, {"key": key})
        except BaseException:
            await _discard(conn)  # cancelled while waiting: the lock may have been granted to this connection
            raise
        await conn.close()

    async def close(self) -> None:
        async with self._turn:
            await self._lose()

    async def _try_lock(self, key: int) -> bool:
        async with self._turn:
            if key in self._held:
                return False
            if self._conn is None:
                self._conn = await self.engine.connect()
            taken = bool(await self._run(self._conn, TRY, key))
            if taken:
                self._held.add(key)
            return taken

    async def _run(self, conn: AsyncConnection, statement: TextClause, key: int) -> object:
        # shielded by the callers: a statement is never cut off half-way, so what the connection holds stays known
        try:
            return (await conn.execute(statement, {"key": key})).scalar()
        except Exception:
            log.warning("the connection holding this process's writer locks failed; the server dropped them all", exc_info=True)
            await self._lose()
            raise

    async def _lose(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            await _discard(conn)


async def _discard(conn: AsyncConnection) -> None:
    """Close a connection for good (not back to the pool), which drops whatever locks it holds."""
    await conn.invalidate()
    await conn.close()
