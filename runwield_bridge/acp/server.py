"""The ACP agent server: protocol in, Session Host calls out, events back as ``session/update``."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.connection import Connection
from acp.schema import (
    CancelNotification,
    CloseSessionRequest,
    DeleteSessionRequest,
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    SetSessionConfigOptionSelectRequest,
)
from pydantic import BaseModel, ValidationError

from ..core.catalog import UnknownChoice
from ..core.events import Event, TurnSettled
from ..core.sessions import SessionBusy, SessionHost, SessionNotFound
from .updates import event_to_update, record_options

log = logging.getLogger(__name__)

BUSY_CODE = -32001
Handler = Callable[..., Awaitable[Any]]


class AcpAgentServer:
    """One instance per ACP connection; many Sessions on it."""

    def __init__(self, host: SessionHost) -> None:
        self.host = host
        self.conn: Connection | None = None
        self.client_capabilities: dict[str, Any] = {}
        self._routes: dict[str, tuple[type[BaseModel], Handler]] = {
            "initialize": (InitializeRequest, self.initialize),
            "session/new": (NewSessionRequest, self.new_session),
            "session/load": (LoadSessionRequest, self.load_session),
            "session/prompt": (PromptRequest, self.prompt),
            "session/close": (CloseSessionRequest, self.close_session),
            "session/delete": (DeleteSessionRequest, self.delete_session),
            "session/set_config_option": (SetSessionConfigOptionSelectRequest, self.set_config_option),
        }
        self._notifications: dict[str, tuple[type[BaseModel], Handler]] = {
            "session/cancel": (CancelNotification, self.cancel),
        }

    def attach(self, conn: Connection) -> None:
        self.conn = conn

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        """The connection's method handler. ``_meta`` is passed apart and never overrides a parameter."""
        routes = self._notifications if is_notification else self._routes
        if method not in routes:
            if is_notification:
                return None
            raise RequestError.method_not_found(method)
        model, handler = routes[method]
        try:
            request = model.model_validate(params if params is not None else {})
        except ValidationError as exc:
            problems = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in exc.errors()]
            raise RequestError.invalid_params({"errors": problems}) from None
        return await handler(request)

    async def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        assert self.conn is not None
        await self.conn.send_notification("session/update", {"sessionId": session_id, "update": update})

    def emitter(self, session_id: str) -> Callable[[Event], Awaitable[None]]:
        async def emit(event: Event) -> None:
            if (update := event_to_update(event, self.host.models)) is not None:
                await self.send_update(session_id, update)

        return emit

    async def initialize(self, request: InitializeRequest) -> dict[str, Any]:
        self.client_capabilities = request.client_capabilities.model_dump(by_alias=True, exclude_none=True) if request.client_capabilities else {}
        return {
            "protocolVersion": PROTOCOL_VERSION,  # the only version we speak, whatever was asked
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {"delete": {}, "close": {}},
            },
            "agentInfo": {"name": "runwield", "title": "RunWield", "version": version("runwield-bridge")},
            "authMethods": [],
        }

    async def new_session(self, request: NewSessionRequest) -> dict[str, Any]:
        cwd = _checked_cwd(request.cwd)
        record = await self.host.create(cwd)
        return {"sessionId": record.id, "configOptions": record_options(self.host.models, record)}

    async def load_session(self, request: LoadSessionRequest) -> dict[str, Any]:
        _checked_cwd(request.cwd)
        record = await self._open(request.session_id)
        emit = self.emitter(record.id)
        for event in await self.host.history(record.id):
            await emit(event)
        return {"configOptions": record_options(self.host.models, record)}

    async def prompt(self, request: PromptRequest) -> dict[str, Any]:
        text = prompt_text(request.prompt)
        await self._open(request.session_id)
        try:
            settled: TurnSettled = await self.host.prompt(request.session_id, text, self.emitter(request.session_id))
        except SessionBusy as exc:
            raise RequestError(BUSY_CODE, str(exc), {"sessionId": request.session_id, "reason": "busy", "prompt": text}) from None
        if settled.stop_reason == "error":
            raise RequestError.internal_error({"details": settled.error, "sessionId": request.session_id})
        return {"stopReason": settled.stop_reason}

    async def cancel(self, request: CancelNotification) -> None:
        await self.host.cancel(request.session_id)

    async def close_session(self, request: CloseSessionRequest) -> dict[str, Any]:
        await self._open(request.session_id)
        await self.host.close(request.session_id)
        return {}

    async def delete_session(self, request: DeleteSessionRequest) -> dict[str, Any]:
        try:
            await self.host.archive(request.session_id)
        except SessionNotFound:
            pass
        return {}

    async def set_config_option(self, request: SetSessionConfigOptionSelectRequest) -> dict[str, Any]:
        await self._open(request.session_id)
        field = {"model": "model", "thought_level": "reasoning", "mode": "agent"}.get(request.config_id)
        if field is None:
            raise RequestError.invalid_params({"configId": request.config_id, "details": "unknown config option"})
        try:
            record = await self.host.select(request.session_id, **{field: request.value})
        except UnknownChoice as exc:
            raise RequestError.invalid_params({"configId": request.config_id, "details": str(exc)}) from None
        except SessionBusy as exc:
            raise RequestError(BUSY_CODE, str(exc), {"sessionId": request.session_id, "reason": "busy"}) from None
        return {"configOptions": record_options(self.host.models, record)}

    async def _open(self, session_id: str):
        try:
            return await self.host.open(session_id)
        except SessionNotFound:
            raise RequestError(-32002, f"Session {session_id} not found", {"sessionId": session_id}) from None


def prompt_text(blocks: list[Any]) -> str:
    """The prompt as text: text blocks as they are, resource links and embedded text resources by reference."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(f"<resource uri={block.resource.uri!r}>\n{block.resource.text}\n</resource>")
        else:
            raise RequestError.invalid_params({"details": f"prompt content of type {kind!r} is not supported"})
    text = "\n".join(parts)
    if not text.strip():
        raise RequestError.invalid_params({"details": "the prompt is empty"})
    return text


def _checked_cwd(cwd: str) -> str:
    if not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be an absolute path"})
    return cwd
