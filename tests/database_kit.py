"""The databases the store's tests run on: a SQLite file, and a database of its own on a real PostgreSQL server
(``WLD_TEST_POSTGRES_URL``, else the local one). Without a server those tests skip, saying why; where
``WLD_REQUIRE_POSTGRES`` is set (as `.ci/run` sets it) they fail instead."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

SERVER = os.environ.get("WLD_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgresql"]


def sqlite_url(directory: Path) -> str:
    return f"sqlite+aiosqlite:///{directory / 'wld.db'}"


@contextlib.asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """The URL of a new, empty database on the server, dropped afterwards (so runs never see each other's data)."""
    server = make_url(SERVER)
    try:
        admin = await asyncpg.connect(server.set(drivername="postgresql").render_as_string(hide_password=False))
    except (OSError, asyncpg.PostgresError) as exc:
        reason = f"no PostgreSQL server at {server.render_as_string(hide_password=True)} ({exc}); set WLD_TEST_POSTGRES_URL"
        if os.environ.get("WLD_REQUIRE_POSTGRES"):
            pytest.fail(f"WLD_REQUIRE_POSTGRES is set but there is {reason}", pytrace=False)
        pytest.skip(reason)
    name = f"wld_test_{uuid.uuid4().hex[:16]}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """The rows of one query on the PostgreSQL database ``url`` names (a connection of its own)."""
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


WRITTEN = "wld_test_written"
"""The table a test's triggers note every row written to the database in (its table's name, then the row as JSON)."""


async def note_every_write(url: str) -> None:
    """From now on, note every row inserted or updated in any table of the (migrated) database ``url`` in ``WRITTEN``,
    so a row deleted soon after it was written is still seen."""
    tables = [row[0] for row in await fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    statements = [
        f"CREATE TABLE {WRITTEN} (row text NOT NULL)",
        f"""CREATE FUNCTION {WRITTEN}_note() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO {WRITTEN} VALUES (TG_TABLE_NAME || ' ' || row_to_json(NEW)::text); RETURN NULL; END $$""",
        *(f'CREATE TRIGGER {WRITTEN}_note AFTER INSERT OR UPDATE ON "{table}" FOR EACH ROW EXECUTE FUNCTION {WRITTEN}_note()' for table in tables),
    ]
    for statement in statements:
        await fetch(url, statement)


async def every_row_written(url: str) -> list[str]:
    """Every row noted since ``note_every_write``, and every row each table holds now, as ``TABLE JSON``."""
    tables = [row[0] for row in await fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    rows = [str(row[0]) for row in await fetch(url, f"SELECT row FROM {WRITTEN}")]
    for table in tables:
        rows += [f"{table} {row[0]}" for row in await fetch(url, f'SELECT row_to_json(t)::text FROM "{table}" t')]
    return rows


async def conversation_owner(url: str, conversation: str) -> str:
    """The instance that owns a conversation, as the database says."""
    return str((await fetch(url, "SELECT instance FROM conversation_owners WHERE conversation = $1", conversation))[0][0])


@contextlib.asynccontextmanager
async def database(backend: str, directory: Path) -> AsyncIterator[str]:
    """A fresh database's URL on ``backend``: a SQLite file in ``directory``, or a new PostgreSQL database."""
    if backend == "sqlite":
        yield sqlite_url(directory)
        return
    async with postgres_database() as url:
        yield url
