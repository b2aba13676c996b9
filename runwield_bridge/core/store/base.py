"""What every repository shares: a way to open a database session, and rows turned into frozen records."""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, fields
from typing import Any, TypeVar

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel import SQLModel, col, update
from sqlmodel.ext.asyncio.session import AsyncSession

from .database import Database
from .statements import Prepared
from .tables import PlanSessionRow, ReviewRow

R = TypeVar("R")
Row = TypeVar("Row", bound=SQLModel)
Connect = async_sessionmaker[AsyncSession]
"""Opens a database session (a unit of work), not a RunWield Session."""


class Conflict(RuntimeError):
    """Another writer changed the row first; nothing was written."""


class Repository:
    """One aggregate's tables; every method is its own transaction. ``_db`` opens an ORM unit of work; ``_database``
    runs plain statements in one hand-off to the driver (what a turn's hot path uses)."""

    def __init__(self, connect: Connect, database: Database) -> None:
        self._db = connect
        self._database = database

    async def _get(self, record_type: type[R], row_type: type[SQLModel], key: Any) -> R | None:
        """The record of the row with this primary key (a tuple for a key of several columns), if there is one."""
        keys = key if isinstance(key, tuple) else (key,)
        params = {f"key{i}": value for i, value in enumerate(keys)}
        query = by_key(record_type, row_type)

        def read(conn: Connection) -> R | None:
            row = query.first(conn, params)
            return None if row is None else record_type(**row)

        return await self._database.read(read)

    async def _insert_new(self, row: SQLModel) -> bool:
        """Insert ``row`` unless a row with its key exists (then nothing is written); whether it was inserted."""
        async with self._db() as db:
            db.add(row)
            try:
                await db.commit()
                return True
            except IntegrityError:
                await db.rollback()
                return False

    async def _all(self, record_type: type[R], query: Any, params: dict[str, Any] | None = None) -> list[R]:
        """The records of the rows a query (a ``Prepared`` one where it runs on every turn) selects with its
        ``params``, read as plain rows (no ORM objects)."""
        names = [f.name for f in fields(record_type)]  # type: ignore[arg-type]

        def read(conn: Connection) -> list[R]:
            rows = query.rows(conn, params or {}) if isinstance(query, Prepared) else conn.execute(query, params).mappings()
            return [record_type(**{name: row[name] for name in names}) for row in rows]

        return await self._database.read(read)


@functools.cache
def by_key(record_type: type[Any], row_type: type[SQLModel]) -> Prepared:
    """The query of a record by its row's primary key (parameters ``key0``, ``key1``, ...), built once."""
    table = row_type.__table__  # type: ignore[attr-defined]
    columns = [table.c[f.name] for f in fields(record_type)]
    return Prepared(select(*columns).where(*(c == bindparam(f"key{i}") for i, c in enumerate(table.primary_key.columns))))


def frozen(record_type: type[R], row: SQLModel) -> R:
    """The frozen record for a row (the same fields, read once)."""
    return record_type(**{f.name: getattr(row, f.name) for f in fields(record_type)})  # type: ignore[arg-type]


def row_of(row_type: type[Row], record: Any) -> Row:
    """A new row to insert, from a record."""
    return row_type(**asdict(record))


async def change(db: AsyncSession, row_type: type[Row], key: Any, changes: dict[str, Any]) -> Row:
    """Set fields of one row in ``db`` (stamping ``updated_at``/``finished_at`` where the table has one)."""
    row = await db.get(row_type, key)
    if row is None:
        raise KeyError(key)
    for name, value in changes.items():
        setattr(row, name, value)
    for stamp in ("updated_at", "finished_at"):
        if stamp in row_type.model_fields:
            setattr(row, stamp, time.time())
    db.add(row)
    return row


async def link_session(db: AsyncSession, plan_id: str, session_id: str | None, role: str) -> None:
    """Remember that a Session had ``role`` in a Plan (once per role)."""
    if session_id:
        await db.merge(PlanSessionRow(plan_id=plan_id, session_id=session_id, role=role))


async def supersede_open_reviews(db: AsyncSession, plan_id: str) -> None:
    """The Plan's open reviews are of a revision no longer current: mark them superseded."""
    await db.exec(
        update(ReviewRow)
        .where(col(ReviewRow.plan_id) == plan_id, col(ReviewRow.state) == "open")
        .values(state="superseded", decided_at=time.time())
    )
