"""Plans with their revisions and the Sessions that worked on them."""

from __future__ import annotations

import time
from typing import Any

from sqlmodel import col, select, update

from ..records import PlanRecord, PlanRevisionRecord, PlanSessionLink
from .base import Conflict, Repository, change, frozen, link_session, row_of, supersede_open_reviews
from .tables import PlanRevisionRow, PlanRow, PlanSessionRow


class PlanRepository(Repository):
    """Plans, their revisions and their Sessions."""

    async def create_plan(self, plan: PlanRecord, revision: PlanRevisionRecord) -> PlanRecord:
        """Save a new Plan and its first revision (and the Session that wrote it) in one transaction."""
        row = row_of(PlanRow, plan)
        async with self._db() as db:
            db.add(row)
            await db.flush()
            db.add(row_of(PlanRevisionRow, revision))
            await link_session(db, plan.id, revision.session_id, "wrote")
            await db.commit()
            return frozen(PlanRecord, row)

    async def get_plan(self, plan_id: str) -> PlanRecord | None:
        return await self._get(PlanRecord, PlanRow, plan_id)

    async def list_plans(self, project: str | None = None) -> list[PlanRecord]:
        """Plans, most recently changed first; only the project's when ``project`` is given."""
        query = select(PlanRow).order_by(col(PlanRow.updated_at).desc())
        if project is not None:
            query = query.where(PlanRow.project == project)
        return await self._all(PlanRecord, query)

    async def update_plan(self, plan_id: str, **changes: Any) -> PlanRecord:
        async with self._db() as db:
            row = await change(db, PlanRow, plan_id, changes)
            await db.commit()
            return frozen(PlanRecord, row)

    async def add_plan_revision(self, revision: PlanRevisionRecord) -> PlanRecord:
        """Make ``revision`` current if it follows the current one (else Conflict); open reviews become superseded."""
        async with self._db() as db:
            moved = await db.exec(
                update(PlanRow)
                .where(col(PlanRow.id) == revision.plan_id, col(PlanRow.current_revision) == revision.number - 1)
                .values(current_revision=revision.number, title=revision.title, state="draft", updated_at=time.time())
            )
            if moved.rowcount != 1:
                raise Conflict(f"Plan {revision.plan_id} is no longer at revision {revision.number - 1}")
            await supersede_open_reviews(db, revision.plan_id)
            db.add(row_of(PlanRevisionRow, revision))
            await link_session(db, revision.plan_id, revision.session_id, "revised")
            await db.commit()
            return frozen(PlanRecord, await db.get(PlanRow, revision.plan_id, populate_existing=True))

    async def plan_revisions(self, plan_id: str) -> list[PlanRevisionRecord]:
        query = select(PlanRevisionRow).where(PlanRevisionRow.plan_id == plan_id).order_by(col(PlanRevisionRow.number))
        return await self._all(PlanRevisionRecord, query)

    async def link_plan_session(self, plan_id: str, session_id: str, role: str) -> None:
        async with self._db() as db:
            await link_session(db, plan_id, session_id, role)
            await db.commit()

    async def plan_sessions(self, plan_id: str) -> list[PlanSessionLink]:
        query = select(PlanSessionRow).where(PlanSessionRow.plan_id == plan_id).order_by(col(PlanSessionRow.created_at))
        return await self._all(PlanSessionLink, query)

    async def plans_for_session(self, session_id: str) -> list[PlanRecord]:
        """Plans the Session wrote, revised, reviewed or executed, most recently changed first."""
        linked = select(PlanSessionRow.plan_id).where(PlanSessionRow.session_id == session_id)
        query = select(PlanRow).where(col(PlanRow.id).in_(linked)).order_by(col(PlanRow.updated_at).desc())
        return await self._all(PlanRecord, query)
