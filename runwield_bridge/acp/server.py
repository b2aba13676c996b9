"""The ACP agent server, one per connection: every request checked against the official schema, ``initialize``
and ``authenticate`` answered here, the Session methods handed to ``session_methods.SessionMethods``.

``initialize`` is answered before the Session Host starts and before the modules only Sessions need are imported
(``session_methods`` and the core behind it), so an IDE is not kept waiting while they load."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError
from acp.connection import Connection
from acp.schema import (
    AgentCapabilities,
    AuthenticateRequest,
    CancelNotification,
    CloseSessionRequest,
    DeleteSessionRequest,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    LoadSessionRequest,
    McpCapabilities,
    NewSessionRequest,
    PromptCapabilities,
    PromptRequest,
    ResumeSessionRequest,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionSelectRequest,
)
from pydantic import BaseModel, ValidationError

from .extensions import HISTORY, STEERING, initialize_meta
from .transport import has_invalid_text
from .validation import schema_problems

if TYPE_CHECKING:
    from ..core.sessions import SessionHost
    from .session_methods import SessionMethods

log = logging.getLogger(__name__)

Route = tuple[str | None, type[BaseModel], str]  # the official schema's params type (none: ours), the model, the handler's name
HostStarter = Callable[[], Awaitable["SessionHost"]]
HOSTLESS_METHODS = frozenset({"initialize", "authenticate"})
"""Answered here, without the Session Host, so an IDE is not kept waiting while the store opens."""
NOT_INITIALIZED = "Invalid request: call initialize first; this connection is not initialized"
ROUTES: dict[str, Route] = {
    "initialize": ("InitializeRequest", InitializeRequest, "initialize"),
    "authenticate": ("AuthenticateRequest", AuthenticateRequest, "authenticate"),
    "session/new": ("NewSessionRequest", NewSessionRequest, "new_session"),
    "session/load": ("LoadSessionRequest", LoadSessionRequest, "load_session"),
    "session/resume": ("ResumeSessionRequest", ResumeSessionRequest, "resume_session"),
    "session/list": ("ListSessionsRequest", ListSessionsRequest, "list_sessions"),
    "session/prompt": ("PromptRequest", PromptRequest, "prompt"),
    "session/close": ("CloseSessionRequest", CloseSessionRequest, "close_session"),
    "session/delete": ("DeleteSessionRequest", DeleteSessionRequest, "delete_session"),
    "session/set_config_option": ("SetSessionConfigOptionRequest", SetSessionConfigOptionSelectRequest, "set_config_option"),
}
EXTENSIONS: dict[str, Route] = {
    STEERING.name: ("PromptRequest", STEERING.params, "steer"),
    HISTORY.name: (None, HISTORY.params, "history"),
}
NOTIFICATIONS: dict[str, Route] = {
    "session/cancel": ("CancelNotification", CancelNotification, "cancel"),
}


class AcpAgentServer:
    """One instance per ACP connection; many Sessions on it."""

    def __init__(
        self, host: SessionHost | None = None, *, start_host: HostStarter | None = None, accepts_images: bool = False, own_client: bool = False
    ) -> None:
        """Serve ``host``, or the one ``start_host`` makes once ``initialize`` is answered (or a request needs it);
        ``accepts_images`` is what ``initialize`` advertises when it is answered before that host has started.
        ``own_client``: the client is this process's own Bridge on an in-memory pipe, whose requests the SDK's models
        built: they are not checked against the official schema a second time (any other client's always are)."""
        self._own_client = own_client
        self._host = host
        self._start_host = start_host
        self._accepts_images = accepts_images
        self._starting: asyncio.Future[SessionHost] | None = None
        self._sessions: SessionMethods | None = None
        self.host_ready: asyncio.Future[SessionHost] = asyncio.get_running_loop().create_future()
        if host is not None:
            self.host_ready.set_result(host)
        self.conn: Connection | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.initialized = False
        """Whether ``initialize`` was answered on this connection: until then every other method is refused."""
        self._background: set[asyncio.Task[Any]] = set()
        self._deferred: dict[asyncio.Task[Any], list[Coroutine[Any, Any, object]]] = {}  # request -> work after its answer
        self._inflight: set[asyncio.Task[Any]] = set()

    async def _started(self) -> SessionMethods:
        """Start the Session Host if it is not yet (once), wait until it is, and serve its Sessions."""
        if self._host is None:
            if self._start_host is not None and self._starting is None:
                self._starting = asyncio.ensure_future(self._start_host())
                self._starting.add_done_callback(_settle(self.host_ready))
            self._host = await asyncio.shield(self.host_ready)
        if self._sessions is None:
            from .session_methods import SessionMethods  # only now: initialize is answered without it

            self._sessions = SessionMethods(self, self._host)
        return self._sessions

    async def started_host(self) -> SessionHost | None:
        """The Session Host once a start already begun has ended; None if none began or it failed."""
        if self._starting is not None:
            await asyncio.wait({self.host_ready})
        ready = self.host_ready
        return ready.result() if ready.done() and not ready.cancelled() and ready.exception() is None else None

    def attach(self, conn: Connection) -> None:
        """Serve on ``conn``, whose transport is a ``RequestIdNoting`` (so a form request can be withdrawn)."""
        self.conn = conn

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        """The connection's method handler: params valid against the official schema reach a handler,
        others get -32602 (a notification: no answer at all). ``_meta`` never overrides a parameter.
        Extension methods (``_name``) go to ``ext_method``, as in the SDK's agent interface."""
        if method.startswith("_") and not is_notification:
            return await self.ext_method(method[1:], params)
        routes = NOTIFICATIONS if is_notification else ROUTES
        if method not in routes:
            if is_notification:
                return None
            raise RequestError.method_not_found(method)
        return await self._dispatch(method, routes[method], params, is_notification)

    async def ext_method(self, name: str, params: Any) -> Any:
        """RunWield's extension methods (``extensions.STEERING``); others are -32601."""
        if name not in EXTENSIONS:
            raise RequestError.method_not_found(f"_{name}")
        return await self._dispatch(f"_{name}", EXTENSIONS[name], params, False)

    async def _dispatch(self, method: str, route: Route, params: Any, is_notification: bool) -> Any:
        type_name, model, handler = route
        params = {} if params is None else params
        try:
            if not self.initialized and method != "initialize":
                raise RequestError(-32600, NOT_INITIALIZED, {"method": method})
            request = _checked_params(None if self._own_client else type_name, model, params)
        except RequestError as exc:
            if is_notification:
                log.warning("ignored %s notification: %s %s", method, exc, exc.data)
                return None
            raise
        task = asyncio.current_task()
        assert task is not None
        self._inflight.add(task)
        self._deferred[task] = []
        try:
            if method in HOSTLESS_METHODS:
                return await getattr(self, handler)(request)
            sessions = await self._started()
            return await sessions.effects.run(method, params, functools.partial(getattr(sessions, handler), request))
        finally:
            self._inflight.discard(task)
            for work in self._deferred.pop(task):  # from here the connection queues the answer without yielding
                self._spawn(work)

    async def drain(self, timeout: float = 10.0) -> None:
        """Let requests already received finish (their answers still go out) before the connection closes."""
        await asyncio.sleep(0)  # handlers scheduled for the last lines read get to start and register
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        self.client_capabilities = request.client_capabilities.model_dump(by_alias=True, exclude_none=True) if request.client_capabilities else {}
        self.initialized = True
        if self._host is None:
            self.after_response(self._started())
        sessions = SessionCapabilities(
            list=SessionListCapabilities(), resume=SessionResumeCapabilities(), delete=SessionDeleteCapabilities(), close=SessionCloseCapabilities()
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the only version we speak, whatever was asked
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=self._images_accepted(), audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=sessions,
            ),
            agent_info=Implementation(name="runwield", title="RunWield", version=version("runwield-bridge")),
            auth_methods=[],
            field_meta=initialize_meta(),
        )

    def _images_accepted(self) -> bool:
        return self._host.accepts_images if self._host is not None else self._accepts_images

    async def authenticate(self, request: AuthenticateRequest) -> dict[str, Any]:
        """No authentication method is advertised, so no ``methodId`` can match one (-32602)."""
        details = "this agent advertises no authentication methods and needs no authentication"
        raise RequestError.invalid_params({"methodId": request.method_id, "details": details})

    def after_response(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` just after the current request's response: it is started once the request's handling has
        ended (whatever it awaits on the way: a revision read, the recorded answer of a ``requestId``), and the
        connection queues that response without yielding in between."""
        deferred = self._deferred.get(asyncio.current_task())  # type: ignore[arg-type]
        if deferred is None:
            self._spawn(work)
        else:
            deferred.append(work)

    def _spawn(self, work: Coroutine[Any, Any, object]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if task.cancelled() or (error := task.exception()) is None:
            return
        if isinstance(error, ConnectionError):  # the client is gone (end of input): nobody to tell
            log.debug("background update dropped: %s", error)
        else:
            log.error("background update failed: %s", error, exc_info=error)


def _checked_params(type_name: str | None, model: type[BaseModel], params: Any) -> Any:
    """``params`` as the SDK's ``model`` once they are valid against the official schema (ours, and the own client's:
    the model alone) and all valid Unicode."""
    if type_name is not None and (problems := schema_problems(type_name, params)):
        raise RequestError.invalid_params({"errors": problems})
    if has_invalid_text(params):
        raise RequestError.invalid_params({"errors": [{"field": "params", "problem": "strings must be valid Unicode (no lone surrogates)"}]})
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in exc.errors()]
        raise RequestError.invalid_params({"errors": problems}) from None


def _settle(future: asyncio.Future[SessionHost]) -> Callable[[asyncio.Future[SessionHost]], None]:
    """A done-callback that passes a task's result or error on to ``future``."""

    def settle(task: asyncio.Future[SessionHost]) -> None:
        if task.cancelled():
            future.cancel()
        elif (error := task.exception()) is not None:
            future.set_exception(error)
        else:
            future.set_result(task.result())

    return settle
