"""Browser reviews of files an agent produced, answered once."""

from __future__ import annotations

import time

from sqlmodel import col, select, update

from ..records import ArtifactReviewRecord
from .base import Repository, frozen, row_of
from .tables import ArtifactReviewRow


class ArtifactReviewRepository(Repository):
    """Artifact Reviews: saved open, then settled once (answered, expired or withdrawn)."""

    async def add(self, review: ArtifactReviewRecord) -> ArtifactReviewRecord:
        async with self._db() as db:
            row = row_of(ArtifactReviewRow, review)
            db.add(row)
            await db.commit()
            return frozen(ArtifactReviewRecord, row)

    async def get(self, review_id: str) -> ArtifactReviewRecord | None:
        return await self._get(ArtifactReviewRecord, ArtifactReviewRow, review_id)

    async def find(self, token_hash: str) -> ArtifactReviewRecord | None:
        async with self._db() as db:
            row = (await db.exec(select(ArtifactReviewRow).where(ArtifactReviewRow.token_hash == token_hash))).first()
            return None if row is None else frozen(ArtifactReviewRecord, row)

    async def settle(self, review_id: str, state: str, feedback: str = "") -> bool:
        """Close an open review once; False, and nothing changed, if it was not open."""
        async with self._db() as db:
            settled = await db.exec(
                update(ArtifactReviewRow)
                .where(col(ArtifactReviewRow.id) == review_id, col(ArtifactReviewRow.state) == "open")
                .values(state=state, feedback=feedback, decided_at=time.time())
            )
            await db.commit()
            return settled.rowcount == 1
