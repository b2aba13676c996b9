"""Browser reviews of an execution's change, one decision per round."""

from __future__ import annotations

import time

from sqlmodel import col, select, update

from ..records import CodeReviewRecord
from .base import Repository, frozen, row_of
from .tables import CodeReviewRow


class CodeReviewRepository(Repository):
    """Code reviews; opening one supersedes the execution's earlier open ones in the same transaction."""

    async def add_code_review(self, review: CodeReviewRecord) -> CodeReviewRecord:
        row = row_of(CodeReviewRow, review)
        async with self._db() as db:
            await db.exec(
                update(CodeReviewRow)
                .where(col(CodeReviewRow.execution_id) == review.execution_id, col(CodeReviewRow.state) == "open")
                .values(state="superseded", decided_at=time.time())
            )
            db.add(row)
            await db.commit()
            return frozen(CodeReviewRecord, row)

    async def get_code_review(self, review_id: str) -> CodeReviewRecord | None:
        return await self._get(CodeReviewRecord, CodeReviewRow, review_id)

    async def find_code_review(self, token_hash: str) -> CodeReviewRecord | None:
        async with self._db() as db:
            row = (await db.exec(select(CodeReviewRow).where(CodeReviewRow.token_hash == token_hash))).first()
            return None if row is None else frozen(CodeReviewRecord, row)

    async def settle_code_review(self, review_id: str, state: str, notes: str = "") -> bool:
        """Decide an open review once; False, and nothing changed, if it was not open."""
        async with self._db() as db:
            decided = await db.exec(
                update(CodeReviewRow)
                .where(col(CodeReviewRow.id) == review_id, col(CodeReviewRow.state) == "open")
                .values(state=state, notes=notes, decided_at=time.time())
            )
            await db.commit()
            return decided.rowcount == 1
