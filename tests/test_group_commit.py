"""Writes asked for at once (a burst of turns, each writing what it shows before showing it) share one SQLite commit;
each caller still gets its answer only once its write is committed, and a write that fails is undone alone."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from runwield_bridge.core.records import SessionRecord
from runwield_bridge.core.store import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    yield store
    await store.close()


def commits_of(store: Store) -> list[str]:
    """The COMMITs the store's own SQLite connections run from now on (its hot path's, opened on first use)."""
    seen: list[str] = []

    def trace(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)

    event.listen(store.database.sync_engine, "connect", trace)  # type: ignore[attr-defined]
    return seen


async def sessions(store: Store, count: int) -> list[SessionRecord]:
    return [await store.sessions.create_session(cwd="/tmp", agent="runwield", model="m", reasoning=None) for _ in range(count)]


def committed(path: Path, session_id: str) -> list[str]:
    """The session's transcript as another process reads it from the file: only what was committed."""
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("select text from transcript where session_id = ? order by id", (session_id,))]


async def test_fifty_turns_writing_at_once_commit_once_and_every_write_is_on_disk_when_its_caller_hears(store: Store, tmp_path: Path) -> None:
    commits = commits_of(store)
    made = await sessions(store, 50)
    assert len(commits) == 50, "one at a time, each write is its own commit"
    commits.clear()

    async def show(session: SessionRecord) -> list[str]:
        await store.sessions.append_many(session.id, [("agent", f"working on {session.id}", {})])
        return committed(tmp_path / "wld.db", session.id)  # what a crash now would leave

    seen = await asyncio.gather(*(show(s) for s in made))
    assert seen == [[f"working on {s.id}"] for s in made]
    assert len(commits) == 1, f"50 writes asked for at once took {len(commits)} commits"


async def test_a_write_that_fails_among_others_is_undone_alone_and_its_caller_gets_the_error(store: Store, tmp_path: Path) -> None:
    first, last = await sessions(store, 2)
    results = await asyncio.gather(
        store.sessions.append_many(first.id, [("agent", "kept", {})]),
        store.sessions.append_many(first.id, [("agent", "undone", {})], title="x", no_such_field=1),
        store.sessions.append_many(last.id, [("agent", "kept too", {})]),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Exception)
    assert committed(tmp_path / "wld.db", first.id) == ["kept"]
    assert committed(tmp_path / "wld.db", last.id) == ["kept too"]
