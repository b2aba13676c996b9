"""Browser reviews of Plan revisions, decided once."""

from __future__ import annotations

import time
from typing import Any

from sqlmodel import col, select, update

from ..records import ReviewRecord
from .base import Conflict, Repository, change, frozen, link_session, row_of, supersede_open_reviews
from .tables import PlanRow, ReviewRow


class ReviewRepository(Repository):
    """Reviews; opening and deciding one changes its Plan in the same transaction."""

    async def add_review(self, review: ReviewRecord) -> ReviewRecord:
        """Save a review of the Plan's current revision (else Conflict); earlier open reviews become superseded."""
        row = row_of(ReviewRow, review)
        async with self._db() as db:
            moved = await db.exec(
                update(PlanRow)
                .where(col(PlanRow.id) == review.plan_id, col(PlanRow.current_revision) == review.revision)
                .values(state="in_review", updated_at=time.time())
            )
            if moved.rowcount != 1:
                raise Conflict(f"Plan {review.plan_id} is not at revision {review.revision}")
            await supersede_open_reviews(db, review.plan_id)
            db.add(row)
            await link_session(db, review.plan_id, review.session_id, "reviewed")
            await db.commit()
            return frozen(ReviewRecord, row)

    async def get_review(self, review_id: str) -> ReviewRecord | None:
        return await self._get(ReviewRecord, ReviewRow, review_id)

    async def find_review(self, token_hash: str) -> ReviewRecord | None:
        async with self._db() as db:
            row = (await db.exec(select(ReviewRow).where(ReviewRow.token_hash == token_hash))).first()
            return None if row is None else frozen(ReviewRecord, row)

    async def reviews_for_plan(self, plan_id: str) -> list[ReviewRecord]:
        """The Plan's reviews, newest first."""
        query = select(ReviewRow).where(ReviewRow.plan_id == plan_id).order_by(col(ReviewRow.created_at).desc())
        return await self._all(ReviewRecord, query)

    async def reviews_for_session(self, session_id: str) -> list[ReviewRecord]:
        """The reviews a Session started, newest first."""
        query = select(ReviewRow).where(ReviewRow.session_id == session_id).order_by(col(ReviewRow.created_at).desc())
        return await self._all(ReviewRecord, query)

    async def settle_review(self, review_id: str, state: str, feedback: str, plan_changes: dict[str, Any]) -> bool:
        """Decide an open review once, changing its Plan with it; False, and nothing changed, if it was not open."""
        async with self._db() as db:
            review = await db.get(ReviewRow, review_id)
            decided = await db.exec(
                update(ReviewRow)
                .where(col(ReviewRow.id) == review_id, col(ReviewRow.state) == "open")
                .values(state=state, feedback=feedback, decided_at=time.time())
            )
            if review is None or decided.rowcount != 1:
                await db.rollback()
                return False
            if plan_changes:
                await change(db, PlanRow, review.plan_id, plan_changes)
            await db.commit()
            return True
