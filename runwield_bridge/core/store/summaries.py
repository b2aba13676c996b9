"""The summaries compaction writes (``core/compaction.py``): each Session's newest is the one its model sees."""

from __future__ import annotations

from sqlalchemy import bindparam, select

from ..context import Summary
from .base import Repository
from .statements import Prepared
from .tables import SummaryRow

SUMMARIES = SummaryRow.__table__  # type: ignore[attr-defined]
LATEST = Prepared(  # read on every turn
    select(SUMMARIES.c.text, SUMMARIES.c.folded)
    .where(SUMMARIES.c.session_id == bindparam("session_id"))
    .order_by(SUMMARIES.c.id.desc())
    .limit(1)
)


class SummaryRepository(Repository):
    """Each compaction's summary, kept; the newest of a Session stands in for its first ``folded`` messages."""

    async def latest(self, session_id: str) -> Summary | None:
        row = await self._database.read(lambda conn: LATEST.first(conn, {"session_id": session_id}))
        return None if row is None else Summary(row["text"], row["folded"])

    async def add(self, session_id: str, summary: Summary) -> None:
        async with self._db() as db:
            db.add(SummaryRow(session_id=session_id, folded=summary.folded, text=summary.text))
            await db.commit()
