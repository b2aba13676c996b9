"""Benchmark the store's cost of a turn as a Session grows: early turns next to turns of a long Session.

    python bench/long_session.py --turns 5000 [--database-server postgresql+asyncpg://postgres@127.0.0.1:5432/test]

Each turn is what a prompt turn writes: ``begin_turn`` (the prompt, the Session's running turns interrupted, the
transcript read after the last entry seen) and ``end_turn`` (the reply, the cost). The Session is filled with
``--turns`` turns through the same calls, then a sample of turns is timed; the first sample is timed the same way.
What matters is the ratio in one run: a turn of a long Session should cost what an early one does. Each backend runs
on a fresh database (SQLite in a temporary directory; a new database on the server, dropped after).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from databases import fresh_database  # bench/, this script's directory

from runwield_bridge.core.store import Store
from runwield_bridge.core.transcript import INTERRUPTED_ENTRY

REPO_ROOT = Path(__file__).resolve().parent.parent

SAMPLE = 300


async def turn(store: Store, session_id: str, after: int, n: int) -> int:
    """One prompt turn's writes; the id of the last transcript entry it saw."""
    turn_id = uuid.uuid4().hex
    _, before = await store.sessions.begin_turn(session_id, turn_id, [("user", f"prompt {n}", {})], INTERRUPTED_ENTRY, after=after)
    await store.sessions.end_turn(session_id, turn_id, "end_turn", [("agent", f"You said: prompt {n}", {"message_id": turn_id})], cost_delta=1e-6)
    return max([after, *(entry.id or 0 for entry in before)])


async def timed(store: Store, session_id: str, after: int, start: int, count: int) -> tuple[list[float], int]:
    """Milliseconds of each of ``count`` turns."""
    times = []
    for n in range(start, start + count):
        began = time.perf_counter()
        after = await turn(store, session_id, after, n)
        times.append((time.perf_counter() - began) * 1000)
    return times, after


async def measure(url: str, turns: int) -> tuple[float, float]:
    """Median milliseconds of a turn among the first ones, and after ``turns`` turns."""
    store = await Store.open(url)
    try:
        session = await store.sessions.create_session(cwd=str(REPO_ROOT), agent="build", model="scripted", reasoning=None)
        early, after = await timed(store, session.id, 0, 0, SAMPLE)
        for n in range(SAMPLE, turns):
            after = await turn(store, session.id, after, n)
        late, _ = await timed(store, session.id, after, turns, SAMPLE)
        return statistics.median(early), statistics.median(late)
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5000, help="turns the Session has before the late sample")
    parser.add_argument("--database-server", help="also run on this PostgreSQL server (a fresh database on it)")
    args = parser.parse_args()
    print(f"turns={args.turns} sample={SAMPLE} python={sys.version.split()[0]}\n")
    print(f"| backend | turn of a new Session (ms, median) | turn after {args.turns:,} turns (ms, median) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as home:
        rows = [("SQLite", await measure(f"sqlite+aiosqlite:///{home}/wld.db", args.turns))]
    if args.database_server:
        async with fresh_database(args.database_server) as settings:
            rows.append(("PostgreSQL", await measure(settings["database_url"], args.turns)))
    for name, (early, late) in rows:
        print(f"| {name} | {early:.3f} | {late:.3f} | {late / early:.2f}× |")


if __name__ == "__main__":
    asyncio.run(main())
