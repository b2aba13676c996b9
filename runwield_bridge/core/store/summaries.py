"""The summaries compaction writes (``core/compaction.py``): each Session's newest is the one its model sees."""

from __future__ import annotations

from sqlmodel import col, select

from ..context import Summary
from .base import Repository
from .tables import SummaryRow


class SummaryRepository(Repository):
    """Each compaction's summary, kept; the newest of a Session stands in for its first ``folded`` messages."""

    async def latest(self, session_id: str) -> Summary | None:
        query = select(SummaryRow).where(col(SummaryRow.session_id) == session_id).order_by(col(SummaryRow.id).desc()).limit(1)
        async with self._db() as db:
            row = (await db.exec(query)).first()
        return None if row is None else Summary(row.text, row.folded)

    async def add(self, session_id: str, summary: Summary) -> None:
        async with self._db() as db:
            db.add(SummaryRow(session_id=session_id, folded=summary.folded, text=summary.text))
            await db.commit()
