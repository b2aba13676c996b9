"""Sessions with their append-only transcripts and their turns: one aggregate, written together.

These are a turn's hot path, so they are SQLAlchemy Core statements (no ORM unit of work), each method one
transaction with as few statements as it needs, run together in one hand-off to the driver (``database.py``)."""

from __future__ import annotations

import functools
import json
import time
import uuid
from dataclasses import fields
from typing import Any

from sqlalchemy import Connection, RowMapping, and_, bindparam, func, insert, or_, select, update

from ..records import SessionRecord, TranscriptEntry
from .base import Repository
from .statements import Prepared
from .tables import SessionRow, TranscriptRow, TurnRow

Entry = tuple[str, str, dict[str, Any]]
"""A transcript entry to append: kind, text and data."""

SESSIONS = SessionRow.__table__
TRANSCRIPT = TranscriptRow.__table__
TURNS = TurnRow.__table__
SESSION_COLUMNS = [SESSIONS.c[f.name] for f in fields(SessionRecord)]
ENTRY_COLUMNS = [TRANSCRIPT.c[f.name] for f in fields(TranscriptEntry)]
# The statements of a turn, built once (building one costs more than running it on SQLite) and run on the driver
# itself there (statements.py).
GET_SESSION = Prepared(select(*SESSION_COLUMNS).where(SESSIONS.c.id == bindparam("session_id")))
ENTRIES_AFTER = Prepared(
    select(*ENTRY_COLUMNS)
    .where(TRANSCRIPT.c.session_id == bindparam("session_id"), TRANSCRIPT.c.id > bindparam("after"))
    .order_by(TRANSCRIPT.c.id)
)
ADD_ENTRIES = Prepared(insert(TRANSCRIPT).values({name: bindparam(name) for name in ("session_id", "kind", "text", "data", "created_at")}))
START_TURN = Prepared(insert(TURNS).values({name: bindparam(name) for name in ("id", "session_id", "state", "started_at")}))
SETTLE_TURN = Prepared(
    update(TURNS)
    .where(TURNS.c.id == bindparam("turn_id"))
    .values(state="settled", stop_reason=bindparam("stop_reason"), ended_at=bindparam("now"))
)
RUNNING = [TURNS.c.session_id == bindparam("of_session"), TURNS.c.state == "running"]
INTERRUPT_ALL = update(TURNS).where(*RUNNING).values(state="interrupted", ended_at=bindparam("now")).returning(TURNS.c.id)
INTERRUPT_RUNNING = Prepared(INTERRUPT_ALL)
INTERRUPT_SOME = INTERRUPT_ALL.where(TURNS.c.id.in_(bindparam("turn_ids", expanding=True)))
TITLE_UNTITLED = Prepared(
    update(SESSIONS)
    .where(SESSIONS.c.id == bindparam("of_session"), SESSIONS.c.title == "")
    .values(title=bindparam("title"), updated_at=bindparam("now"))
)


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


class SessionRepository(Repository):
    """Sessions, their transcripts and their turns."""

    async def create_session(self, *, cwd: str, agent: str, model: str, reasoning: str | None, title: str = "") -> SessionRecord:
        record = SessionRecord(id=new_session_id(), cwd=cwd, agent=agent, model=model, reasoning=reasoning, title=title)
        values = _fields(record)
        await self._database.write(lambda conn: conn.execute(insert(SESSIONS).values(**values)))
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        def read(conn: Connection) -> SessionRecord | None:
            row = GET_SESSION.first(conn, {"session_id": session_id})
            return None if row is None else _session(row)

        return await self._database.read(read)

    async def list_sessions(
        self,
        *,
        include_archived: bool = False,
        cwd: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first (ties by id): those in ``cwd`` when given, only those after the
        ``(updated_at, id)`` of ``after`` (a page's last Session), at most ``limit``."""
        updated, ident = SESSIONS.c.updated_at, SESSIONS.c.id
        query = select(*SESSION_COLUMNS).order_by(updated.desc(), ident.desc()).limit(limit)
        if not include_archived:
            query = query.where(SESSIONS.c.archived.is_(False))
        if cwd is not None:
            query = query.where(SESSIONS.c.cwd == cwd)
        if after is not None:
            query = query.where(or_(updated < after[0], and_(updated == after[0], ident < after[1])))
        return await self._database.read(lambda conn: [_session(row) for row in conn.execute(query).mappings()])

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields of a Session; ``cost_delta`` adds to the cumulative cost."""
        return await self._database.write(lambda conn: _changed(conn, session_id, changes))

    async def append_many(self, session_id: str, entries: list[Entry], **changes: Any) -> SessionRecord | None:
        """Append transcript entries and apply Session changes (as ``update_session``) in one transaction."""
        return await self._database.write(lambda conn: _append(conn, session_id, entries, changes))

    async def begin_turn(
        self, session_id: str, turn_id: str, entries: list[Entry], interrupted: Entry, *, after: int = 0, title: str | None = None
    ) -> tuple[SessionRecord | None, list[TranscriptEntry]]:
        """Start a turn with its first entries, in one transaction; returns the Session as it is then and the
        transcript entries after ``after`` that were there before (None and nothing, and nothing written, if there
        is no such Session). Turns of the Session still running are interrupted first (only one turn runs at a time,
        so their process ended), each with the ``interrupted`` entry. An untitled Session gets ``title``."""

        def write(conn: Connection) -> tuple[SessionRecord | None, list[TranscriptEntry]]:
            if GET_SESSION.first(conn, {"session_id": session_id}) is None:
                return None, []
            before = [TranscriptEntry(**row) for row in ENTRIES_AFTER.rows(conn, {"session_id": session_id, "after": after})]
            _interrupt(conn, session_id, None, interrupted)
            START_TURN.run(conn, {"id": turn_id, "session_id": session_id, "state": "running", "started_at": time.time()})
            _append(conn, session_id, entries, {})
            if title:
                TITLE_UNTITLED.run(conn, {"of_session": session_id, "title": title, "now": time.time()})
            return _session(GET_SESSION.rows(conn, {"session_id": session_id})[0]), before

        return await self._database.write(write)

    async def end_turn(
        self, session_id: str, turn_id: str, stop_reason: str, entries: list[Entry], **changes: Any
    ) -> SessionRecord | None:
        """Settle a turn with its last entries and Session changes, in one transaction."""

        def write(conn: Connection) -> SessionRecord | None:
            SETTLE_TURN.run(conn, {"turn_id": turn_id, "stop_reason": stop_reason, "now": time.time()})
            return _append(conn, session_id, entries, changes)

        return await self._database.write(write)

    async def running_turns(self, session_id: str) -> list[str]:
        """Ids of the Session's turns that have not settled."""
        query = select(TURNS.c.id).where(TURNS.c.session_id == session_id, TURNS.c.state == "running")
        return await self._database.read(lambda conn: list(conn.execute(query).scalars()))

    async def interrupt_turns(self, session_id: str, turn_ids: list[str], interrupted: Entry) -> None:
        """Mark those of ``turn_ids`` still running interrupted, each with the ``interrupted`` entry, once."""
        await self._database.write(lambda conn: _interrupt(conn, session_id, turn_ids, interrupted))

    async def transcript(self, session_id: str, after: int = 0) -> list[TranscriptEntry]:
        """The Session's transcript, oldest first; ``after`` skips entries up to that id."""
        params = {"session_id": session_id, "after": after}
        return await self._database.read(lambda conn: [TranscriptEntry(**row) for row in ENTRIES_AFTER.rows(conn, params)])

    async def revision(self, session_id: str) -> int:
        """The Session's transcript revision: the id of its latest entry (0 before the first); it only grows."""
        query = select(func.max(TRANSCRIPT.c.id)).where(TRANSCRIPT.c.session_id == session_id)
        return await self._database.read(lambda conn: conn.execute(query).scalar() or 0)


def _fields(record: SessionRecord) -> dict[str, Any]:
    return {column.name: getattr(record, column.name) for column in SESSION_COLUMNS}


def _session(row: RowMapping | dict[str, Any]) -> SessionRecord:
    return SessionRecord(**row)


def _append(conn: Connection, session_id: str, entries: list[Entry], changes: dict[str, Any]) -> SessionRecord | None:
    """Add transcript entries (one statement) and apply Session changes on ``conn``; the changed Session, if any."""
    if entries:
        now = time.time()
        rows = [{"session_id": session_id, "kind": kind, "text": text, "data": json.dumps(data), "created_at": now} for kind, text, data in entries]
        ADD_ENTRIES.run(conn, rows)
    return _changed(conn, session_id, changes) if changes else None


def _changed(conn: Connection, session_id: str, changes: dict[str, Any]) -> SessionRecord:
    """Apply Session changes on ``conn`` in one statement: ``cost_delta`` adds to the cost (in the database, so
    concurrent writers never lose an addition), the rest are set; ``updated_at`` is stamped."""
    changes = dict(changes)
    delta = changes.pop("cost_delta", 0.0)
    params = {**{f"set_{name}": value for name, value in changes.items()}, "of_session": session_id, "now": time.time()}
    if delta:
        params["delta"] = delta
    row = _change_statement(tuple(sorted(changes)), bool(delta)).first(conn, params)
    if row is None:
        raise KeyError(session_id)
    return _session(row)


@functools.cache
def _change_statement(names: tuple[str, ...], adds_cost: bool) -> Prepared:
    """The statement that sets a Session's fields ``names`` (parameters ``set_<name>``) and stamps it (``now``),
    adding ``delta`` to its cost if it ``adds_cost``; it returns the changed Session. Built once per shape."""
    values = {name: bindparam(f"set_{name}") for name in names} | {"updated_at": bindparam("now")}
    if adds_cost:
        values["cost_usd"] = SESSIONS.c.cost_usd + bindparam("delta")
    return Prepared(update(SESSIONS).where(SESSIONS.c.id == bindparam("of_session")).values(values).returning(*SESSION_COLUMNS))


def _interrupt(conn: Connection, session_id: str, turn_ids: list[str] | None, entry: Entry) -> None:
    """Mark the Session's running turns (those of ``turn_ids`` when given) interrupted in one statement, so two
    processes never mark a turn twice, and add ``entry``, with the turn's id, for each."""
    params: dict[str, Any] = {"of_session": session_id, "now": time.time()}
    if turn_ids is None:
        marked = [row["id"] for row in INTERRUPT_RUNNING.rows(conn, params)]
    else:
        marked = list(conn.execute(INTERRUPT_SOME, params | {"turn_ids": turn_ids}).scalars())
    kind, text, data = entry
    stamped = [(kind, text, {**data, "turn": turn_id}) for turn_id in sorted(marked)]
    _append(conn, session_id, stamped, {})
