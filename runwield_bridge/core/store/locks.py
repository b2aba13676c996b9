"""Writer locks in PostgreSQL: session-level advisory locks, each held on a connection of its own for as long as the
lock is, so they hold across hosts and the server drops them when the holder's connection (or process) dies."""

from __future__ import annotations

import asyncio
import hashlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

TRY = text("SELECT pg_try_advisory_lock(:key)")
WAIT = text("SELECT pg_advisory_lock(:key)")
UNLOCK = text("SELECT pg_advisory_unlock(:key)")
# A bigint advisory lock shows in pg_locks as its high and low 32 bits (classid, objid) with objsubid 1.
HELD = text(
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = :high AND objid = :low)"
)


def lock_key(name: str) -> int:
    """The advisory lock's key for a name: 63 bits of its hash (a non-negative bigint)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big") >> 1


class AdvisoryLock:
    """One name's lock (a Session's writer, a Plan's execution), taken without waiting; see `core.locks.Lock`.
    ``engine`` is in autocommit mode, so a held lock keeps no transaction open."""

    def __init__(self, engine: AsyncEngine, name: str) -> None:
        self.engine = engine
        self.key = lock_key(name)
        self._conn: AsyncConnection | None = None
        self._turn = asyncio.Lock()  # this object's takes and releases, one at a time

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def try_acquire(self) -> bool:
        async with self._turn:
            if self._conn is not None:
                return True
            conn = await self.engine.connect()
            try:
                taken = bool((await conn.execute(TRY, {"key": self.key})).scalar())
            except BaseException:
                await _discard(conn)
                raise
            if not taken:
                await conn.close()
                return False
            self._conn = conn
            return True

    async def release(self) -> None:
        async with self._turn:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                await conn.execute(UNLOCK, {"key": self.key})
            except BaseException:
                await _discard(conn)  # a connection that may still hold the lock is never reused
                raise
            await conn.close()

    async def taken(self) -> bool:
        if self._conn is not None:
            return True
        async with self.engine.connect() as conn:
            return bool((await conn.execute(HELD, {"high": self.key >> 32, "low": self.key & 0xFFFFFFFF})).scalar())

    async def released(self) -> None:
        """Wait for the lock on a connection of its own (the server wakes it: nothing polls), then let go at once."""
        conn = await self.engine.connect()
        try:
            await conn.execute(WAIT, {"key": self.key})
            await conn.execute(UNLOCK, {"key": self.key})
        except BaseException:
            await _discard(conn)  # cancelled while waiting: the lock may have been granted to this connection
            raise
        await conn.close()


async def _discard(conn: AsyncConnection) -> None:
    """Close a connection for good (not back to the pool), which drops whatever locks it holds."""
    await conn.invalidate()
    await conn.close()
