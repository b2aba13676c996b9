"""Workspace logins: a one-time login token (what `wld workspace` prints) becomes a browser's login session
(its cookie). Both are stored only as hashes, so the state directory alone lets nobody in."""

from __future__ import annotations

import secrets
import time

from .reviews import TOKEN_BYTES, hash_token
from .store.workspace import WorkspaceRepository

LOGIN_TOKEN_TTL = 15 * 60.0
LOGIN_SESSION_TTL = 30 * 24 * 3600.0


class WorkspaceLogins:
    """Mints login tokens, spends them once for a login session, and checks sessions."""

    def __init__(self, repository: WorkspaceRepository, token_ttl: float = LOGIN_TOKEN_TTL, session_ttl: float = LOGIN_SESSION_TTL) -> None:
        self.repository = repository
        self.token_ttl = token_ttl
        self.session_ttl = session_ttl

    async def mint_token(self) -> str:
        """A new one-time login token (valid for ``token_ttl`` seconds)."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        await self.repository.add_login(hash_token(token), "token", time.time() + self.token_ttl)
        return token

    async def log_in(self, token: str) -> str | None:
        """Spend a login token: a new login session's secret, or None if the token is unknown, used or expired."""
        if not token or not await self.repository.use_token(hash_token(token)):
            return None
        session = secrets.token_urlsafe(TOKEN_BYTES)
        await self.repository.add_login(hash_token(session), "session", time.time() + self.session_ttl)
        return session

    async def is_logged_in(self, session: str | None) -> bool:
        return bool(session) and await self.repository.has_session(hash_token(session))
