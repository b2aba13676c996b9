"""Effects are never repeated: a mutating request's ``requestId`` is claimed before it runs and its answer
recorded (so a repeat, from any connection or after a restart, gets that answer), and a request made on an
out-of-date view of a Session (its ``revision``, its ``project``) is refused before it does anything."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp import RequestError
from pydantic import BaseModel, ValidationError

from .extensions import CONFLICT_CODE, PROJECT, REQUEST_ID, REVISION, ConflictData, ConflictReason, MetaKey

if TYPE_CHECKING:
    from ..core.store.sessions import SessionRepository
    from ..core.store.workspace import WorkspaceRepository

MUTATING = frozenset(
    {"session/new", "session/prompt", "session/set_config_option", "session/close", "session/delete", "_session/steering"}
)
"""The methods whose ``requestId`` is honoured: every request that changes something."""
CONFLICT_MESSAGES: dict[ConflictReason, str] = {
    "staleRevision": "the Session has changed since the revision this request saw; reload it and decide again",
    "otherProject": "the Session belongs to another project than the one this request names",
    "requestIdReused": "this requestId was already used for a different request",
    "inProgress": "the request with this requestId is still running; its answer comes on the first connection",
}

INTERRUPTED = {"error": RequestError.internal_error({"details": "the request was cut short; what it did so far stands (see the Session's history)"}).to_error_obj()}


def conflict(reason: ConflictReason, **data: Any) -> RequestError:
    """The one authoritative refusal, the same on every transport: ``CONFLICT_CODE`` with ``ConflictData``."""
    return RequestError(CONFLICT_CODE, CONFLICT_MESSAGES[reason], ConflictData(reason=reason, **data).model_dump(by_alias=True, exclude_none=True))


def answer_of(result: Any) -> Any:
    """A handler's result as the connection sends it."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return result


def _params_hash(method: str, params: dict[str, Any]) -> str:
    """What identifies a request apart from its ``_meta``: the method and the other params."""
    body = {key: value for key, value in params.items() if key != "_meta"}
    return hashlib.sha256(json.dumps([method, body], sort_keys=True).encode("utf-8")).hexdigest()


def _read(key: MetaKey[Any], params: dict[str, Any]) -> Any:
    try:
        return key.read_strict(params.get("_meta") if isinstance(params.get("_meta"), dict) else None)
    except ValidationError:
        raise RequestError.invalid_params({"errors": [{"field": key.field, "problem": "has the wrong type"}]}) from None


class EffectLedger:
    """Runs mutating requests at most once per ``requestId``, after checking the view they were made on."""

    def __init__(self, requests: WorkspaceRepository, sessions: SessionRepository) -> None:
        self.requests = requests
        self.sessions = sessions

    async def run(self, method: str, params: dict[str, Any], handler: Callable[[], Awaitable[Any]]) -> Any:
        """``handler``'s answer, or the answer recorded for the same ``requestId``."""
        if method not in MUTATING:
            return await handler()
        request_id = _read(REQUEST_ID, params)
        if request_id is None:
            await self.check_view(params)
            return await handler()
        digest = _params_hash(method, params)
        if (earlier := await self.requests.claim_request(request_id, method, digest)) is not None:
            if (earlier.method, earlier.params_hash) != (method, digest):
                raise conflict("requestIdReused")
            if earlier.answer is None:
                raise conflict("inProgress")
            return _replayed(json.loads(earlier.answer))
        try:
            await self.check_view(params)
        except RequestError:
            await self.requests.forget_request(request_id)  # refused before any effect: the id stays free
            raise
        try:
            answer: dict[str, Any] = {"result": answer_of(await handler())}
        except RequestError as exc:
            answer = {"error": exc.to_error_obj()}
        except BaseException:  # cut short (the client left, the process stops): what it did so far stands
            await asyncio.shield(self.requests.record_answer(request_id, json.dumps(INTERRUPTED)))
            raise
        await self.requests.record_answer(request_id, json.dumps(answer))
        return _replayed(answer)

    async def check_view(self, params: dict[str, Any]) -> None:
        """Refuse a Session request whose ``revision`` is not the Session's now, or whose ``project`` is not its own."""
        revision, project = _read(REVISION, params), _read(PROJECT, params)
        session_id = params.get("sessionId")
        if (revision is None and project is None) or not isinstance(session_id, str):
            return
        record = await self.sessions.get_session(session_id)
        if record is None:
            return  # the handler says it is not found
        if project is not None and os.path.normpath(project) != os.path.normpath(record.cwd):
            raise conflict("otherProject", session_id=session_id, project=record.cwd)
        if revision is not None and revision != (now := await self.sessions.revision(session_id)):
            raise conflict("staleRevision", session_id=session_id, revision=now)


def _replayed(answer: dict[str, Any]) -> Any:
    if "error" in answer:
        error = answer["error"]
        raise RequestError(error["code"], error["message"], error.get("data"))
    return answer["result"]
