"""``session/list``: stored Sessions as ``SessionInfo``, a page at a time behind an opaque cursor."""

from __future__ import annotations

import base64
import binascii
import json
import os
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import ListSessionsRequest, ListSessionsResponse, SessionInfo
from pydantic import ValidationError

from ..core.records import SessionRecord
from .extensions import ARCHIVED, INCLUDE_ARCHIVED

if TYPE_CHECKING:
    from ..core.store.sessions import SessionRepository

PAGE_SIZE = 50


async def list_sessions(sessions: SessionRepository, request: ListSessionsRequest) -> ListSessionsResponse:
    """One page of Sessions, most recently updated first; ``nextCursor`` while more follow."""
    if request.cwd is not None and not os.path.isabs(request.cwd):
        raise RequestError.invalid_params({"cwd": request.cwd, "details": "cwd must be an absolute path"})
    after = None if request.cursor is None else _decode(request.cursor)
    records = await sessions.list_sessions(
        include_archived=_include_archived(request.field_meta), cwd=request.cwd, after=after, limit=PAGE_SIZE + 1
    )
    page = records[:PAGE_SIZE]
    more = {"next_cursor": _encode(page[-1])} if len(records) > PAGE_SIZE else {}
    return ListSessionsResponse(sessions=[session_info(record) for record in page], **more)


def session_info(record: SessionRecord) -> SessionInfo:
    """The ``SessionInfo`` of a Session; an archived one says so in ``_meta.runwield.archived``."""
    updated = datetime.fromtimestamp(record.updated_at, timezone.utc).isoformat().replace("+00:00", "Z")
    extra: dict[str, Any] = {"title": record.title} if record.title else {}
    if record.archived:
        extra["field_meta"] = ARCHIVED.meta(True)
    return SessionInfo(session_id=record.id, cwd=record.cwd, updated_at=updated, **extra)


def _include_archived(meta: dict[str, Any] | None) -> bool:
    try:
        return bool(INCLUDE_ARCHIVED.read_strict(meta))
    except ValidationError:
        raise RequestError.invalid_params({"errors": [{"field": INCLUDE_ARCHIVED.field, "problem": "must be of type boolean"}]}) from None


def _encode(last: SessionRecord) -> str:
    """The cursor after ``last``: where the next page starts (a position, so new Sessions shift nothing)."""
    return base64.urlsafe_b64encode(json.dumps([last.updated_at, last.id]).encode()).decode()


def _decode(cursor: str) -> tuple[float, str]:
    try:
        updated_at, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        if isinstance(updated_at, (int, float)) and not isinstance(updated_at, bool) and isinstance(session_id, str):
            return float(updated_at), session_id
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        pass
    raise RequestError.invalid_params({"details": "the cursor is not one this agent gave; list again without one"})
