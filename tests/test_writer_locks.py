"""The writer locks the store hands out, on SQLite (files on this host) and PostgreSQL (advisory locks in the
database, across hosts): one holder at a time, checks that take nothing, and a dead holder's lock freed."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from waiting import PATIENCE, POLL

from runwield_bridge.core.locks import Locks
from runwield_bridge.core.store import Store

HOLDER = """
import asyncio, sys
from pathlib import Path
from runwield_bridge.core.store import Store

async def main():
    store = await Store.open(sys.argv[1])
    assert await store.writer_locks(Path(sys.argv[2]))("ses_held").try_acquire()
    print("holding", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.fixture
async def locks(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[Locks, Locks]]:
    """The writer locks of two stores on one database: two processes, to the database (and on SQLite, to the OS)."""
    here, there = await Store.open(database_url), await Store.open(database_url)
    try:
        yield here.writer_locks(tmp_path), there.writer_locks(tmp_path)
    finally:
        await here.close()
        await there.close()


async def test_one_holder_at_a_time_and_checking_takes_nothing(locks: tuple[Locks, Locks]) -> None:
    here, there = locks
    first, second, other = here("ses_one"), there("ses_one"), there("ses_two")
    assert not await second.taken() and await first.try_acquire() and first.held
    assert await second.taken() and not await second.try_acquire(), "a second writer is refused while the first holds it"
    assert not second.held and await other.try_acquire(), "another Session's writer is another lock"
    assert await first.taken(), "checking took nothing"
    await first.release()
    assert not await second.taken() and await second.try_acquire() and await first.taken()
    assert not await first.try_acquire()
    await second.release()
    await other.release()


async def test_a_waiting_writer_goes_on_when_the_holder_lets_go(locks: tuple[Locks, Locks]) -> None:
    holder, waiter = locks[0]("ses_one"), locks[1]("ses_one")
    assert await holder.try_acquire()
    waiting = asyncio.create_task(waiter.released())
    await holder.release()
    await asyncio.wait_for(waiting, PATIENCE)
    assert await waiter.try_acquire(), "waiting took nothing"
    await waiter.release()


async def waiting(database_url: str) -> bool:
    """Whether a writer waits for a lock: a thread the OS will wake (SQLite), an ungranted advisory lock (PostgreSQL)."""
    if database_url.startswith("sqlite"):
        return any(thread.name.startswith("writer-wait:") for thread in threading.enumerate())
    conn = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)"))
    finally:
        await conn.close()


async def test_a_cancelled_wait_leaves_nothing_held(database_url: str, locks: tuple[Locks, Locks]) -> None:
    holder, waiter = locks[0]("ses_one"), locks[1]("ses_one")
    assert await holder.try_acquire()
    wait = asyncio.create_task(waiter.released())
    deadline = time.monotonic() + PATIENCE
    while not await waiting(database_url):
        assert time.monotonic() < deadline, "the waiter never waited"
        await asyncio.sleep(POLL)
    wait.cancel()
    await asyncio.wait({wait})
    await holder.release()
    while not await waiter.try_acquire():  # on SQLite the OS still wakes the cancelled wait's thread, for a moment
        assert time.monotonic() < deadline, "a cancelled wait kept the lock"
        await asyncio.sleep(POLL)
    await waiter.release()


async def test_the_lock_of_a_killed_process_is_freed(database_url: str, tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLDER, database_url, str(tmp_path), stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.readline(), PATIENCE) == b"holding\n"
    store = await Store.open(database_url)
    try:
        lock = store.writer_locks(tmp_path)("ses_held")
        assert await lock.taken() and not await lock.try_acquire()
        waiting = asyncio.create_task(lock.released())
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await asyncio.wait_for(waiting, PATIENCE)
        assert await lock.try_acquire(), "the server (or the OS) dropped the dead holder's lock"
        await lock.release()
    finally:
        await store.close()


async def test_in_one_process_too_a_name_has_one_holder(database_url: str, tmp_path: Path) -> None:
    store = await Store.open(database_url)
    try:
        locks = store.writer_locks(tmp_path)
        first, second = locks("ses_one"), locks("ses_one")
        assert await first.try_acquire() and await first.try_acquire(), "taking a lock one holds again is a no-op"
        assert not await second.try_acquire() and not second.held, "another holder in the same process is refused"
        await first.release()
        assert not await first.taken() and await second.try_acquire()
        await second.release()
    finally:
        await store.close()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_more_writers_at_once_than_the_server_has_connections(database_url: str, tmp_path: Path) -> None:
    """Every Session with a turn running holds its writer lock: hundreds of them cost no more server connections."""
    admin = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False))
    here, there = await Store.open(database_url), await Store.open(database_url)
    try:
        limit = int(await admin.fetchval("SHOW max_connections"))
        held = [here.writer_locks(tmp_path)(f"ses_{i}") for i in range(limit + 20)]
        assert all(await asyncio.gather(*(lock.try_acquire() for lock in held)))
        assert not await there.writer_locks(tmp_path)(f"ses_{limit}").try_acquire(), "each is still held against another process"
        await asyncio.gather(*(lock.release() for lock in held))
        assert await there.writer_locks(tmp_path)(f"ses_{limit}").try_acquire()
    finally:
        await here.close()
        await there.close()
        await admin.close()
