"""A hot-path statement: built once as SQLAlchemy Core, and on SQLite run on the driver's own cursor.

SQLAlchemy's execution machinery (execution context, parameter processing, result set-up) costs several times what
SQLite itself spends on a turn's small statements. So on SQLite through Python's own driver a ``Prepared`` statement
is compiled once and run with ``sqlite3`` directly, in the transaction of the SQLAlchemy ``Connection`` it is given, with the column types'
own bind and result conversions; on any other driver (asyncpg, aiosqlite) it runs through SQLAlchemy as it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql import Executable

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class _Compiled:
    """A statement compiled for SQLite: its SQL, its parameters in order with their conversions, the values of
    those that are literals in the statement, and its columns with theirs."""

    sql: str
    names: tuple[str, ...]
    binds: tuple[Convert | None, ...]
    literals: dict[str, Any]
    columns: tuple[tuple[str, Convert | None], ...]

    def values(self, params: dict[str, Any]) -> tuple[Any, ...]:
        given = {**self.literals, **params} if self.literals else params
        return tuple(given[name] if bind is None else bind(given[name]) for name, bind in zip(self.names, self.binds))

    def row(self, raw: Sequence[Any]) -> dict[str, Any]:
        return {name: value if result is None else result(value) for (name, result), value in zip(self.columns, raw)}


class Prepared:
    """One statement with named bind parameters, run on a ``Connection`` in the transaction it is in."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._sqlite: _Compiled | None = None

    def rows(self, conn: Connection, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows it returns (a query's, or ``RETURNING``'s), each a dict by column name."""
        if not _direct(conn):
            return [dict(row) for row in conn.execute(self.statement, params).mappings()]
        compiled = self._compiled(conn)
        cursor = conn.connection.driver_connection.execute(compiled.sql, compiled.values(params))  # type: ignore[union-attr]
        return [compiled.row(raw) for raw in cursor.fetchall()]

    def first(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any] | None:
        """Its first row, if any."""
        rows = self.rows(conn, params)
        return rows[0] if rows else None

    def run(self, conn: Connection, params: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Run it once, or once for each of a list of parameter sets (in one call to the driver)."""
        if not _direct(conn):
            conn.execute(self.statement, params)
            return
        compiled = self._compiled(conn)
        driver = conn.connection.driver_connection
        if isinstance(params, list):
            driver.executemany(compiled.sql, [compiled.values(p) for p in params])  # type: ignore[union-attr]
        else:
            driver.execute(compiled.sql, compiled.values(params))  # type: ignore[union-attr]

    def _compiled(self, conn: Connection) -> _Compiled:
        if self._sqlite is None:
            dialect = conn.dialect
            compiled = self.statement.compile(dialect=dialect)  # type: ignore[attr-defined]
            names = tuple(compiled.positiontup or ())
            binds = tuple(compiled.binds[name].type.bind_processor(dialect) for name in names)
            literals = {name: compiled.binds[name].value for name in names if not compiled.binds[name].required}
            exported = getattr(self.statement, "exported_columns", ())
            columns = tuple((column.key, column.type.result_processor(dialect, None)) for column in exported)
            self._sqlite = _Compiled(str(compiled), names, binds, literals, columns)
        return self._sqlite


def _direct(conn: Connection) -> bool:
    """Whether ``conn`` is on Python's own ``sqlite3``, whose connection can run the statement itself."""
    return conn.dialect.driver == "pysqlite"
