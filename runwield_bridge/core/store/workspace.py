"""What Workspace clients rely on: request ids answered once, and login tokens and sessions kept only as hashes."""

from __future__ import annotations

import time

from sqlalchemy import delete
from sqlmodel import col, update

from ..records import ClientRequest
from .base import Repository
from .tables import ClientRequestRow, WorkspaceLoginRow


class WorkspaceRepository(Repository):
    """Client request claims and Workspace logins."""

    async def claim_request(self, request_id: str, method: str, params_hash: str) -> ClientRequest | None:
        """Claim a request id; None if this is the first claim, else the earlier claim (unchanged)."""
        if await self._insert_new(ClientRequestRow(request_id=request_id, method=method, params_hash=params_hash)):
            return None
        return await self._get(ClientRequest, ClientRequestRow, request_id)

    async def record_answer(self, request_id: str, answer: str) -> None:
        async with self._db() as db:
            await db.exec(update(ClientRequestRow).where(col(ClientRequestRow.request_id) == request_id).values(answer=answer))
            await db.commit()

    async def forget_request(self, request_id: str) -> None:
        """Drop a claim whose request never ran (so the same id may be sent again)."""
        async with self._db() as db:
            await db.exec(delete(ClientRequestRow).where(col(ClientRequestRow.request_id) == request_id))
            await db.commit()

    async def add_login(self, token_hash: str, kind: str, expires_at: float) -> None:
        async with self._db() as db:
            db.add(WorkspaceLoginRow(token_hash=token_hash, kind=kind, expires_at=expires_at))
            await db.commit()

    async def use_token(self, token_hash: str) -> bool:
        """Spend a live, unused login token; False if there is none (unknown, expired or used)."""
        query = update(WorkspaceLoginRow).where(
            col(WorkspaceLoginRow.token_hash) == token_hash,
            col(WorkspaceLoginRow.kind) == "token",
            col(WorkspaceLoginRow.used).is_(False),
            col(WorkspaceLoginRow.expires_at) > time.time(),
        )
        async with self._db() as db:
            result = await db.exec(query.values(used=True))
            await db.commit()
            return bool(result.rowcount)

    async def has_session(self, token_hash: str) -> bool:
        """Whether a login session with this hash is live."""
        async with self._db() as db:
            row = await db.get(WorkspaceLoginRow, token_hash)
            return row is not None and row.kind == "session" and row.expires_at > time.time()
