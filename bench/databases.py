"""A fresh database for a benchmark run: SQLite (no settings), or a new database on a PostgreSQL server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator


@contextlib.asynccontextmanager
async def fresh_database(server: str | None) -> AsyncIterator[dict[str, str]]:
    """The settings that put the store on a new database of its own on a PostgreSQL ``server`` (dropped afterwards),
    or none (SQLite in the temporary WLD_HOME)."""
    if server is None:
        yield {}
        return
    import asyncpg
    from sqlalchemy.engine import make_url

    url = make_url(server)
    admin = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False))
    name = f"wld_bench_{uuid.uuid4().hex[:12]}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield {"database_url": url.set(database=name).render_as_string(hide_password=False)}
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
