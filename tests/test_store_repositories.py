"""The store's repositories hand out plain frozen records, never its tables, on SQLite and PostgreSQL; and the schema
is the one the migrations make, the tables the code declares."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import SQLModel

from runwield_bridge.core import records
from runwield_bridge.core.records import PlanRecord, PlanRevisionRecord, ReviewRecord
from runwield_bridge.core.store import Store
from runwield_bridge.core.store.migrate import HEAD
from runwield_bridge.core.store.sessions import ENTRIES_AFTER, INTERRUPT_ALL

SCHEMA = Path(__file__).parent / "fixtures" / "schema-0.4.0.sql"


def schema(path: Path) -> str:
    """The database's tables and indexes as SQL, but for Alembic's record of the version (a table name quoted
    because a migration rebuilt the table reads as it does unquoted)."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "select type, name, sql from sqlite_master where sql is not null and name != 'alembic_version' order by type, name"
        ).fetchall()
    return "\n".join(re.sub(r'^CREATE TABLE "(\w+)"', r"CREATE TABLE \1", f"{sql};") for _, _, sql in rows) + "\n"


def version(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("select version_num from alembic_version")]


async def test_a_new_database_has_exactly_the_0_4_0_schema_made_by_the_migrations(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    await store.close()
    assert schema(tmp_path / "wld.db") == SCHEMA.read_text(), "the schema changes only through a migration"
    assert version(tmp_path / "wld.db") == [HEAD]


def test_the_migrations_make_exactly_the_tables_the_code_declares(tmp_path: Path) -> None:
    declared = tmp_path / "declared.db"
    with sqlite3.connect(declared) as db:
        from sqlalchemy import create_engine

        engine = create_engine(f"sqlite:///{declared}")
        SQLModel.metadata.create_all(engine)
        engine.dispose()
    assert schema(declared) == SCHEMA.read_text(), "a table class and its migration disagree"


def test_each_table_has_a_record_with_the_same_fields() -> None:
    tables = {table.name: table for table in SQLModel.metadata.sorted_tables}
    mirrored = {
        "sessions": records.SessionRecord,
        "transcript": records.TranscriptEntry,
        "bindings": records.Binding,
        "seen_updates": records.SeenUpdate,
        "unfinished_messages": records.UnfinishedMessage,
        "handoffs": records.Handoff,
        "client_requests": records.ClientRequest,
        "plans": records.PlanRecord,
        "plan_revisions": records.PlanRevisionRecord,
        "plan_sessions": records.PlanSessionLink,
        "reviews": records.ReviewRecord,
        "code_reviews": records.CodeReviewRecord,
        "artifact_reviews": records.ArtifactReviewRecord,
        "executions": records.ExecutionRecord,
        "execution_steps": records.ExecutionStep,
        "queued_messages": records.QueuedMessage,
    }
    store_own = {"turns", "workspace_logins", "leases", "conversation_owners", "queue_modes", "context_summaries"}
    assert set(tables) - set(mirrored) == store_own, (
        "every table but the store's own turn marks, login hashes, leases, queue modes and summaries (handed out as "
        "the core's Summary) is handed out"
    )
    for name, record in mirrored.items():
        assert [f.name for f in dataclasses.fields(record)] == list(tables[name].columns.keys()), name


async def test_every_repository_hands_out_frozen_records_that_outlive_the_store(database_url: str, tmp_path: Path) -> None:
    store = await Store.open(database_url)
    try:
        session = await store.sessions.create_session(cwd=str(tmp_path), agent="build", model="scripted", reasoning=None)
        await store.sessions.append_many(session.id, [("user", "hello", {})])
        plan = PlanRecord(id="plan_1", project="p", project_dir=str(tmp_path), title="T", slug="t")
        revision = PlanRevisionRecord(plan_id=plan.id, number=1, title="T", path="plan.md", session_id=session.id)
        await store.plans.create_plan(plan, revision)
        await store.reviews.add_review(ReviewRecord(id="rev_1", plan_id=plan.id, revision=0, token_hash="h", expires_at=1.0))
        binding = await store.bridge.set_binding("telegram:1", "runwield", session.id)
        handed_out = [
            session,
            *(await store.sessions.transcript(session.id)),
            *(await store.plans.list_plans()),
            *(await store.plans.plan_revisions(plan.id)),
            *(await store.plans.plan_sessions(plan.id)),
            *(await store.reviews.reviews_for_plan(plan.id)),
            binding,
        ]
    finally:
        await store.close()
    for record in handed_out:
        assert dataclasses.is_dataclass(record) and not isinstance(record, SQLModel), type(record)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, "changed")
    assert [e.text for e in handed_out if getattr(e, "kind", None) == "user"] == ["hello"], "readable after the store closed"


async def test_cost_added_by_writers_beside_each_other_is_never_lost(database_url: str, tmp_path: Path) -> None:
    """Two processes (two stores) add to one Session's cost at once: every addition counts."""
    here, there = await Store.open(database_url), await Store.open(database_url)
    try:
        session = await here.sessions.create_session(cwd=str(tmp_path), agent="build", model="scripted", reasoning=None)
        await asyncio.gather(*(store.sessions.update_session(session.id, cost_delta=0.5) for store in [here, there] * 10))
        await asyncio.gather(*(store.sessions.append_many(session.id, [("agent", "hi", {})], cost_delta=0.25) for store in [here, there] * 2))
        cost = (await there.sessions.get_session(session.id)).cost_usd  # type: ignore[union-attr]
        assert cost == 11.0
    finally:
        await here.close()
        await there.close()


async def test_unfinished_notes_of_two_chats_with_one_message_id_are_kept_apart_and_by_instance(database_url: str) -> None:
    """Telegram numbers messages per chat: two chats' notes of message 5 are two notes; each instance finds its own."""
    store = await Store.open(database_url)
    try:
        await store.bridge.keep_message("telegram", "5", "telegram:1", "one", "reply")
        await store.bridge.keep_message("telegram", "5", "telegram:2", "two", "reply", "instance-a")
        await asyncio.gather(*(store.bridge.keep_message("telegram", "5", "telegram:1", f"one {n}", "reply") for n in range(5)))
        assert [n.conversation for n in await store.bridge.unfinished_messages("telegram")] == ["telegram:1"]
        await store.bridge.drop_message("telegram", "5", "telegram:1")
        assert await store.bridge.unfinished_messages("telegram") == []
        assert [n.text for n in await store.bridge.unfinished_messages("telegram", "instance-a")] == ["two"], "the other chat's note stays"
    finally:
        await store.close()


async def plan(store: Store, statement: Any, **params: Any) -> str:
    """How the database would run ``statement`` (one of the store's own) with ``params``, as it explains it."""
    async with store.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SET enable_seqscan = off"))  # tables this small would be read whole whatever the indexes
        compiled = statement.compile(dialect=conn.dialect)
        values = {**compiled.params, **params}
        explain = "EXPLAIN " if conn.dialect.name == "postgresql" else "EXPLAIN QUERY PLAN "
        rows = await conn.exec_driver_sql(explain + str(compiled), tuple(values[name] for name in compiled.positiontup))
        return "\n".join(str(row[-1]) for row in rows)


async def test_a_turns_reads_go_by_index_to_what_they_need_however_long_the_session(database_url: str) -> None:
    """Starting a turn finds the Session's running turns, and its transcript after the entry last seen, through an
    index on both of the columns each narrows by: a Session's thousandth turn reads no more than its first."""
    store = await Store.open(database_url)
    try:
        running = await plan(store, INTERRUPT_ALL, of_session="ses_1", now=1.0)
        after = await plan(store, ENTRIES_AFTER.statement, session_id="ses_1", after=5)
    finally:
        await store.close()
    assert "ix_turns_session_id_state" in running and re.search(r"session_id\)?(::\w+)? ?= ?\S+ AND \(?\(?state\b", running), running
    assert "ix_transcript_session_id_id" in after and re.search(r"session_id\)?(::\w+)? ?= ?\S+ AND \(?(row)?id ?> ?", after), after
