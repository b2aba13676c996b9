"""The schema's version: the Alembic migrations in ``migrations/`` bring a database to head, on start and by
``wld db upgrade``, under a lock so that processes starting together on one database take turns."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

MIGRATIONS = Path(__file__).with_name("migrations")
HEAD = "0009"
"""The newest migration (a test holds it to ``migrations/versions``): a database stamped with it needs nothing."""
ADDED_IN_0_2_0 = frozenset({"turns", "seen_updates"})
MIGRATION_LOCK = 0x52_57_64_62_6D_69_67  # "RWdbmig": the PostgreSQL advisory lock migrations run under


class SchemaError(RuntimeError):
    """The database's schema is not one this release can migrate; nothing was changed."""


class DatabaseUnavailable(RuntimeError):
    """The database could not be opened (no server there, no such database, credentials refused): nothing was done."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database stands: its version (None when empty), whether that version is only read from its tables
    (a database written before migrations, not yet stamped), and the newest version."""

    current: str | None
    unstamped: bool
    head: str = HEAD

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head and not self.unstamped


async def upgrade(engine: AsyncEngine) -> None:
    """Bring the database to the newest version (nothing to do, and no lock taken, when it is there)."""
    await _reachable(engine)
    if await _stamped(engine) == HEAD:
        return
    async with _exclusively(engine) as conn:
        await conn.run_sync(_upgrade)


async def status(engine: AsyncEngine) -> SchemaStatus:
    """The database's version, read without changing anything."""
    if engine.dialect.name == "sqlite" and not _sqlite_exists(engine):
        return SchemaStatus(None, unstamped=False)
    await _reachable(engine)
    async with engine.connect() as conn:
        return await conn.run_sync(_status)


def describe(revision: str | None) -> str:
    """A version with what it is (its migration's first line)."""
    if revision is None:
        return "none (an empty database)"
    doc = _scripts().get_revision(revision).doc
    return f"{revision} ({doc.split(':')[0].strip()})"


async def _reachable(engine: AsyncEngine) -> None:
    """Open a connection (the pool keeps it for what follows; an SQLite file is only tried): a database that cannot be
    opened is a DatabaseUnavailable that says where and why in one line, not a driver's traceback."""
    path = engine.url.database
    try:
        if engine.dialect.name == "sqlite" and path and path != ":memory:" and not path.startswith("file:"):
            sqlite3.connect(path).close()  # aiosqlite's thread outlives a connection that failed, and fails at exit
        else:
            async with engine.connect():
                pass
    except (OSError, DBAPIError, sqlite3.Error) as exc:
        reason = str(exc.orig if isinstance(exc, DBAPIError) else exc).strip()
        raise DatabaseUnavailable(f"cannot open {engine.url.render_as_string(hide_password=True)}: {reason}") from None


async def _stamped(engine: AsyncEngine) -> str | None:
    """The version recorded in the database, if any (a cheap check made on every start)."""
    async with engine.connect() as conn:
        try:
            return (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        except DBAPIError:
            return None


@contextlib.asynccontextmanager
async def _exclusively(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection in a transaction that no other process migrating the same database runs beside: a PostgreSQL
    advisory lock held by the transaction, or for SQLite a lock on a file next to the database."""
    if engine.dialect.name == "postgresql":
        async with engine.begin() as conn:
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            yield conn
        return
    path = engine.url.database
    with contextlib.ExitStack() as stack:
        if path and path != ":memory:" and not path.startswith("file:"):
            fd = os.open(f"{path}.migrate-lock", os.O_RDWR | os.O_CREAT, 0o600)
            stack.callback(os.close, fd)  # closing the file releases its lock
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        async with engine.begin() as conn:
            yield conn


def _upgrade(conn: Connection) -> None:
    from alembic import command
    from alembic.util import CommandError

    found = _status(conn)
    config = _config(conn)
    try:
        if found.unstamped:
            command.stamp(config, found.current)
        command.upgrade(config, "head")
    except CommandError as exc:
        raise SchemaError(f"the database is at version {found.current}, which this release does not know ({exc}); upgrade wld") from None


def _status(conn: Connection) -> SchemaStatus:
    from alembic.runtime.migration import MigrationContext

    if (current := MigrationContext.configure(conn).get_current_revision()) is not None:
        return SchemaStatus(current, unstamped=False)
    tables = set(inspect(conn).get_table_names())
    if "sessions" not in tables:
        return SchemaStatus(None, unstamped=False)
    present = ADDED_IN_0_2_0 & tables
    if present == ADDED_IN_0_2_0:
        return SchemaStatus("0002", unstamped=True)
    if not present:
        return SchemaStatus("0001", unstamped=True)
    raise SchemaError(f"the database has the tables {sorted(present)} but not {sorted(ADDED_IN_0_2_0 - present)}: no release wrote it")


def _config(conn: Connection) -> Any:
    """Alembic's configuration, made here (no alembic.ini): the migrations shipped in the package, on ``conn``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def _scripts() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))


def _sqlite_exists(engine: AsyncEngine) -> bool:
    path = engine.url.database
    return not path or path == ":memory:" or Path(path).exists()
