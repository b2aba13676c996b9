"""``session/list``: stored Sessions as ``SessionInfo``, a page at a time behind an opaque cursor."""

from __future__ import annotations

import base64
import binascii
import json
import os
from datetime import datetime, timezone
from typing import Any

from acp import RequestError
from acp.schema import ListSessionsRequest

from ..core.records import SessionRecord
from ..core.store.sessions import SessionRepository

PAGE_SIZE = 50
INCLUDE_ARCHIVED = "includeArchived"  # ``_meta.runwield.includeArchived``: the standard has no archive


async def list_sessions(sessions: SessionRepository, request: ListSessionsRequest) -> dict[str, Any]:
    """One page of Sessions, most recently updated first; ``nextCursor`` while more follow."""
    if request.cwd is not None and not os.path.isabs(request.cwd):
        raise RequestError.invalid_params({"cwd": request.cwd, "details": "cwd must be an absolute path"})
    after = None if request.cursor is None else _decode(request.cursor)
    records = await sessions.list_sessions(
        include_archived=_include_archived(request.field_meta), cwd=request.cwd, after=after, limit=PAGE_SIZE + 1
    )
    page = records[:PAGE_SIZE]
    response: dict[str, Any] = {"sessions": [session_info(record) for record in page]}
    if len(records) > PAGE_SIZE:
        response["nextCursor"] = _encode(page[-1])
    return response


def session_info(record: SessionRecord) -> dict[str, Any]:
    """The ``SessionInfo`` of a Session; an archived one says so in ``_meta.runwield.archived``."""
    updated = datetime.fromtimestamp(record.updated_at, timezone.utc).isoformat().replace("+00:00", "Z")
    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd, "updatedAt": updated}
    if record.title:
        info["title"] = record.title
    if record.archived:
        info["_meta"] = {"runwield": {"archived": True}}
    return info


def _include_archived(meta: dict[str, Any] | None) -> bool:
    ours = (meta or {}).get("runwield")
    value = ours.get(INCLUDE_ARCHIVED, False) if isinstance(ours, dict) else False
    if not isinstance(value, bool):
        field = f"_meta.runwield.{INCLUDE_ARCHIVED}"
        raise RequestError.invalid_params({"errors": [{"field": field, "problem": "must be of type boolean"}]})
    return value


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
