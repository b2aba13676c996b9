"""What a platform POSTs is checked before its library reads it: the fields a channel uses, with their types."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from ..config import describe_errors

log = logging.getLogger(__name__)


class Payload(BaseModel):
    """The fields a channel reads, strictly typed; anything else the platform sends passes unread."""

    model_config = ConfigDict(extra="allow", strict=True)


def misfit(model: type[Payload], data: Any) -> str | None:
    """Why ``data`` does not fit ``model`` (one line per problem), or None if it does."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return describe_errors(exc)
    return None


def refuse(status: int, reason: str, where: str) -> web.Response:
    """A 4xx with the reason, logged quietly (a malformed request is the sender's problem, not ours)."""
    log.debug("%s refused a request (%d): %s", where, status, reason)
    return web.Response(status=status, text=reason)
