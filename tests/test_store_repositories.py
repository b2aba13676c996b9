"""The store's repositories hand out plain frozen records, never its tables; and the schema is the 0.2.0 one
plus the Workspace's tables (new tables, made where missing when a store opens)."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest
from sqlmodel import SQLModel

from runwield_bridge.core import records
from runwield_bridge.core.records import PlanRecord, PlanRevisionRecord, ReviewRecord
from runwield_bridge.core.store import Store

SCHEMA = Path(__file__).parent / "fixtures" / "schema-0.2.0.sql"
WORKSPACE_TABLES = Path(__file__).parent / "fixtures" / "schema-workspace.sql"


def schema(path: Path) -> str:
    with sqlite3.connect(path) as db:
        rows = db.execute("select type, name, sql from sqlite_master where sql is not null order by type, name").fetchall()
    return "\n".join(f"{sql};" for _, _, sql in rows) + "\n"


def statements(text: str) -> set[str]:
    return {statement for statement in text.split(";\n") if statement.strip()}


async def test_a_new_database_has_exactly_the_0_2_0_schema_and_the_workspace_tables(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    await store.close()
    expected = statements(SCHEMA.read_text()) | statements(WORKSPACE_TABLES.read_text())
    assert statements(schema(tmp_path / "wld.db")) == expected, "the schema changes only through a migration"


def test_each_table_has_a_record_with_the_same_fields() -> None:
    tables = {table.name: table for table in SQLModel.metadata.sorted_tables}
    mirrored = {
        "sessions": records.SessionRecord,
        "transcript": records.TranscriptEntry,
        "bindings": records.Binding,
        "seen_updates": records.SeenUpdate,
        "client_requests": records.ClientRequest,
        "plans": records.PlanRecord,
        "plan_revisions": records.PlanRevisionRecord,
        "plan_sessions": records.PlanSessionLink,
        "reviews": records.ReviewRecord,
        "executions": records.ExecutionRecord,
        "execution_steps": records.ExecutionStep,
    }
    store_own = {"turns", "workspace_logins"}
    assert set(tables) - set(mirrored) == store_own, "every table but the store's own turn marks and login hashes is handed out"
    for name, record in mirrored.items():
        assert [f.name for f in dataclasses.fields(record)] == list(tables[name].columns.keys()), name


async def test_every_repository_hands_out_frozen_records_that_outlive_the_store(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
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
