"""The writer locks the store hands out, on SQLite (files on this host) and PostgreSQL (advisory locks in the
database, across hosts): one holder at a time, checks that take nothing, and a dead holder's lock freed."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from waiting import PATIENCE

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


async def test_one_holder_at_a_time_and_checking_takes_nothing(database_url: str, tmp_path: Path) -> None:
    here, there = await Store.open(database_url), await Store.open(database_url)  # two processes, to the database
    try:
        first, second = here.writer_locks(tmp_path)("ses_one"), there.writer_locks(tmp_path)("ses_one")
        other = there.writer_locks(tmp_path)("ses_two")
        assert not await second.taken() and await first.try_acquire() and first.held
        assert await second.taken() and not await second.try_acquire(), "a second writer is refused while the first holds it"
        assert not second.held and await other.try_acquire(), "another Session's writer is another lock"
        assert await first.taken(), "checking took nothing"
        await first.release()
        assert not await second.taken() and await second.try_acquire() and await first.taken()
        assert not await first.try_acquire()
        await second.release()
        await other.release()
    finally:
        await here.close()
        await there.close()


async def test_a_waiting_writer_goes_on_when_the_holder_lets_go(database_url: str, tmp_path: Path) -> None:
    here, there = await Store.open(database_url), await Store.open(database_url)
    try:
        holder, waiter = here.writer_locks(tmp_path)("ses_one"), there.writer_locks(tmp_path)("ses_one")
        assert await holder.try_acquire()
        waiting = asyncio.create_task(waiter.released())
        await holder.release()
        await asyncio.wait_for(waiting, PATIENCE)
        assert await waiter.try_acquire(), "waiting took nothing"
        await waiter.release()
    finally:
        await here.close()
        await there.close()


async def test_a_cancelled_wait_leaves_nothing_held(database_url: str, tmp_path: Path) -> None:
    here, there = await Store.open(database_url), await Store.open(database_url)
    try:
        holder, waiter = here.writer_locks(tmp_path)("ses_one"), there.writer_locks(tmp_path)("ses_one")
        assert await holder.try_acquire()
        waiting = asyncio.create_task(waiter.released())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.wait({waiting})
        await holder.release()
        assert not await waiter.taken() and await waiter.try_acquire()
        await waiter.release()
    finally:
        await here.close()
        await there.close()


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
