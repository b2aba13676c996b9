"""The ACP agent server: protocol in, Session Host calls out, events back as ``session/update``."""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine
from importlib.metadata import version
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.connection import Connection
from acp.schema import (
    AgentCapabilities,
    AuthenticateRequest,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionSelectRequest,
)
from pydantic import BaseModel, ValidationError

from ..core.catalog import UnknownChoice
from ..core.events import Event, Notice
from ..core.interactions import Outcome, PendingQuestion
from ..core.sessions import (
    AwaitingReply,
    FormAsker,
    Image,
    ImagesUnsupported,
    PromptResult,
    QuestionPending,
    SessionBusy,
    SessionClosed,
    SessionHost,
    SessionNotFound,
)
from ..core.steering import SteeringRejected
from .effects import EffectLedger
from .extensions import HISTORY, NAMESPACE, REVISION, STEERING, HistoryPage, HistoryRequest, SteeringAnswer, initialize_meta, meta_of
from .forms import form_outcome, form_request
from .history import history_page
from .listing import list_sessions
from .mcp_specs import stdio_specs
from .menus import ChatReply, NoMatch, did_not_match, interpret, other_prompt, read_reply
from .sdk_gaps import request_withdrawn_on_cancel
from .transport import has_invalid_text
from .updates import Update, commands_update, event_to_update, notification, question_update, record_options, wire
from .validation import schema_problems

log = logging.getLogger(__name__)

BUSY_CODE = -32001
NOT_FOUND_CODE = -32002
FORM_ATTEMPTS = 3  # a form whose answer is not usable is shown again, at most this many times in all
Handler = Callable[..., Awaitable[Any]]
Route = tuple[str | None, type[BaseModel], Handler]  # the official schema's params type (none: ours), the model, the handler
HostStarter = Callable[[], Awaitable[SessionHost]]
HOSTLESS_METHODS = frozenset({"initialize", "authenticate"})
"""Answered without the Session Host, so an IDE is not kept waiting while the store opens."""


class AcpAgentServer:
    """One instance per ACP connection; many Sessions on it.

    It has more than 15 public methods because it is the agent side of the protocol: one method per ACP
    method it answers (initialize, session/new, session/prompt, ...), each only translating to the Session
    Host, plus the few the transport calls (attach, drain, send_update, emitter).
    """

    def __init__(self, host: SessionHost | None = None, *, start_host: HostStarter | None = None, accepts_images: bool = False) -> None:
        """Serve ``host``, or the one ``start_host`` makes once ``initialize`` is answered (or a request needs it);
        ``accepts_images`` is what ``initialize`` advertises when it is answered before that host has started."""
        self._host = host
        self._start_host = start_host
        self._accepts_images = accepts_images
        self._starting: asyncio.Future[SessionHost] | None = None
        self.host_ready: asyncio.Future[SessionHost] = asyncio.get_running_loop().create_future()
        if host is not None:
            self.host_ready.set_result(host)
        self.conn: Connection | None = None
        self.client_capabilities: dict[str, Any] = {}
        self._typing_other: dict[str, str] = {}  # session id -> the interview question whose Other text is owed
        self._background: set[asyncio.Task[None]] = set()
        self._deferred: dict[asyncio.Task[Any], list[Coroutine[Any, Any, None]]] = {}  # request -> work after its answer
        self._inflight: set[asyncio.Task[Any]] = set()
        self._routes: dict[str, Route] = {
            "initialize": ("InitializeRequest", InitializeRequest, self.initialize),
            "authenticate": ("AuthenticateRequest", AuthenticateRequest, self.authenticate),
            "session/new": ("NewSessionRequest", NewSessionRequest, self.new_session),
            "session/load": ("LoadSessionRequest", LoadSessionRequest, self.load_session),
            "session/resume": ("ResumeSessionRequest", ResumeSessionRequest, self.resume_session),
            "session/list": ("ListSessionsRequest", ListSessionsRequest, self.list_sessions),
            "session/prompt": ("PromptRequest", PromptRequest, self.prompt),
            "session/close": ("CloseSessionRequest", CloseSessionRequest, self.close_session),
            "session/delete": ("DeleteSessionRequest", DeleteSessionRequest, self.delete_session),
            "session/set_config_option": ("SetSessionConfigOptionRequest", SetSessionConfigOptionSelectRequest, self.set_config_option),
        }
        self._extensions: dict[str, Route] = {
            STEERING.name: ("PromptRequest", STEERING.params, self.steer),
            HISTORY.name: (None, HISTORY.params, self.history),
        }
        self._notifications: dict[str, Route] = {
            "session/cancel": ("CancelNotification", CancelNotification, self.cancel),
        }

    @functools.cached_property
    def effects(self) -> EffectLedger:
        """Mutating requests once per ``requestId``, on views that are current (``effects.py``)."""
        return EffectLedger(self.host.store.workspace, self.host.store.sessions)

    @property
    def host(self) -> SessionHost:
        assert self._host is not None, "only initialize and authenticate are answered before the Session Host starts"
        return self._host

    async def _started(self) -> None:
        """Start the Session Host if it is not yet (once), and wait until it is."""
        if self._host is None:
            if self._start_host is not None and self._starting is None:
                self._starting = asyncio.ensure_future(self._start_host())
                self._starting.add_done_callback(_settle(self.host_ready))
            self._host = await asyncio.shield(self.host_ready)

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
        routes = self._notifications if is_notification else self._routes
        if method not in routes:
            if is_notification:
                return None
            raise RequestError.method_not_found(method)
        return await self._dispatch(method, routes[method], params, is_notification)

    async def ext_method(self, name: str, params: Any) -> Any:
        """RunWield's extension methods (``extensions.STEERING``); others are -32601."""
        if name not in self._extensions:
            raise RequestError.method_not_found(f"_{name}")
        return await self._dispatch(f"_{name}", self._extensions[name], params, False)

    async def _dispatch(self, method: str, route: Route, params: Any, is_notification: bool) -> Any:
        type_name, model, handler = route
        params = {} if params is None else params
        try:
            request = _checked_params(type_name, model, params)
        except RequestError as exc:
            if is_notification:
                log.warning("ignored %s notification with invalid params: %s", method, exc.data)
                return None
            raise
        task = asyncio.current_task()
        assert task is not None
        self._inflight.add(task)
        self._deferred[task] = []
        try:
            if method in HOSTLESS_METHODS:
                return await handler(request)
            await self._started()
            return await self.effects.run(method, params, functools.partial(handler, request))
        finally:
            self._inflight.discard(task)
            for work in self._deferred.pop(task):  # from here the connection queues the answer without yielding
                self._spawn(work)

    async def drain(self, timeout: float = 10.0) -> None:
        """Let requests already received finish (their answers still go out) before the connection closes."""
        await asyncio.sleep(0)  # handlers scheduled for the last lines read get to start and register
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)

    async def send_update(self, session_id: str, update: Update) -> None:
        assert self.conn is not None
        await self.conn.send_notification("session/update", notification(session_id, update))

    def emitter(self, session_id: str) -> Callable[[Event], Awaitable[None]]:
        async def emit(event: Event) -> None:
            if (update := event_to_update(event, self.host.models)) is None:
                return
            try:
                await self.send_update(session_id, update)
            except ConnectionError:  # the client left (a closed WebSocket): the turn goes on, its transcript keeps it
                log.debug("update for Session %s dropped: the client is gone", session_id)

        return emit

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        self.client_capabilities = request.client_capabilities.model_dump(by_alias=True, exclude_none=True) if request.client_capabilities else {}
        if self._host is None:
            self._after_response(self._started())
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

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        cwd = _checked_cwd(request.cwd)
        record = await self.host.create(cwd)
        problems = await self._start_mcp_servers(record.id, request.mcp_servers)
        self.host.attach(record.id, self.emitter(record.id), self._forms(record.id))
        self._after_response(self._advertise_commands(record.id))
        self._after_response(self._tell(record.id, problems))
        runtime = await self.host.runtimes.of(record.id)
        options = record_options(self.host.models, record, runtime)
        return NewSessionResponse(session_id=record.id, config_options=options, field_meta=await self._revision_meta(record.id, request))

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        options = await self._reopen(request.session_id, request.cwd, request.mcp_servers, replay=True)
        return LoadSessionResponse(config_options=options, field_meta=await self._revision_meta(request.session_id, request))

    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        """Like ``session/load``, without replaying the conversation: the client shows what it already has."""
        options = await self._reopen(request.session_id, request.cwd, request.mcp_servers, replay=False)
        return ResumeSessionResponse(config_options=options, field_meta=await self._revision_meta(request.session_id, request))

    async def _revision_meta(self, session_id: str, request: BaseModel) -> dict[str, Any] | None:
        """``_meta.runwield.revision``, the Session's transcript revision now, for a client that sent ``_meta.runwield``
        (a Workspace client, which sends it back); ordinary clients get answers without it."""
        if NAMESPACE not in meta_of(request):
            return None
        return REVISION.meta(await self.host.store.sessions.revision(session_id))

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        return await list_sessions(self.host.store.sessions, request)

    async def _reopen(self, session_id: str, cwd: str, mcp_servers: list[Any] | None, *, replay: bool) -> list[Any]:
        """Open a stored Session for this client with its MCP servers (replaying its history first if asked) and
        attend to it."""
        _checked_cwd(cwd)
        await self._open(session_id)
        problems = await self._start_mcp_servers(session_id, mcp_servers)
        record = await self.host.get(session_id)  # fresh: another process may have changed it
        emit = self.emitter(record.id)
        if replay:
            for event in await self.host.history(record.id):
                await emit(event)
        self._after_response(self._advertise_commands(record.id))
        self._after_response(self._tell(record.id, problems))
        self._after_response(self.host.attend(record.id, emit, self._forms(record.id)))
        return record_options(self.host.models, record, await self.host.runtimes.of(record.id))

    async def _start_mcp_servers(self, session_id: str, servers: list[Any] | None) -> list[str]:
        """Start the client's stdio MCP servers for the Session; what could not be used, in words."""
        specs, refused = stdio_specs(servers)
        return [*refused, *await self.host.use_tool_servers(session_id, specs)]

    async def _tell(self, session_id: str, problems: list[str]) -> None:
        """Warn the client about each problem, as a notice."""
        emit = self.emitter(session_id)
        for problem in problems:
            await emit(Notice(problem, "warning"))

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        """A prompt runs a turn, unless a chat question waits: then it is the reply to that question."""
        session_id = request.session_id
        await self._open(session_id)
        reply = read_reply(request.prompt)
        if (pending := await self.host.waiting_question(session_id)) is not None:
            return await self._with_revision(await self._answer(pending, reply), request)
        images = prompt_images(request.prompt)
        text = reply.command or prompt_text(request.prompt, with_images=bool(images))
        try:
            result = await self.host.prompt(session_id, text, self.emitter(session_id), forms=self._forms(session_id), images=images)
        except ImagesUnsupported as exc:
            raise RequestError.invalid_params({"sessionId": session_id, "details": str(exc)}) from None
        except (SessionBusy, QuestionPending) as exc:
            reason = "busy" if isinstance(exc, SessionBusy) else "questionPending"
            raise _busy(session_id, str(exc), reason, prompt=text) from None
        return await self._with_revision(_stop_reason(result, session_id), request)

    async def _answer(self, pending: PendingQuestion, reply: ChatReply) -> PromptResponse:
        """Apply a chat reply to the waiting question: settle it (the turn goes on), or say why it did not."""
        session_id = pending.session_id
        typing_other = self._typing_other.get(session_id) == pending.id
        decision = interpret(pending.question, reply, typing_other)
        if isinstance(decision, Outcome):
            self._typing_other.pop(session_id, None)
            emit = self.emitter(session_id)
            try:
                result = await self.host.reply(session_id, decision, emit, forms=self._forms(session_id))
            except LookupError:  # it expired or was cancelled while this reply was on its way
                message = "the question is no longer waiting; send your message again"
                raise _busy(session_id, message) from None
            return _stop_reason(result, session_id)
        if isinstance(decision, NoMatch):
            update = question_update(did_not_match(pending.question, decision), pending.id, "unmatched")
        else:
            self._typing_other[session_id] = pending.id
            update = question_update(other_prompt(pending.question), pending.id, "other")
        await self.send_update(session_id, update)
        return PromptResponse(stop_reason="end_turn")

    async def _with_revision(self, response: PromptResponse, request: PromptRequest) -> PromptResponse:
        if (meta := await self._revision_meta(request.session_id, request)) is None:
            return response
        return response.model_copy(update={"field_meta": meta})

    async def steer(self, request: PromptRequest) -> SteeringAnswer:
        """``_session/steering``: add input to the running turn, or say that it needs an ordinary prompt."""
        text = read_reply(request.prompt).command or prompt_text(request.prompt)
        try:
            result = await self.host.steer(request.session_id, text)
        except SessionNotFound:
            raise _not_found(request.session_id) from None
        except SessionClosed as exc:
            raise RequestError(NOT_FOUND_CODE, str(exc), {"sessionId": request.session_id, "reason": "closed"}) from None
        except SteeringRejected as exc:
            raise RequestError.invalid_params({"sessionId": request.session_id, "details": str(exc)}) from None
        return SteeringAnswer(outcome=result.outcome, **({"reason": result.reason} if result.reason else {}))

    async def history(self, request: HistoryRequest) -> HistoryPage:
        """``_runwield/history``: a window of the saved conversation, as ``session/load`` would replay it."""
        await self._open(request.session_id)
        events = await self.host.history(request.session_id)
        return history_page([u for e in events if (u := event_to_update(e, self.host.models)) is not None], request)

    def _forms(self, session_id: str) -> FormAsker | None:
        """How this client answers a Session's questions in place: forms when it advertised them."""
        if (self.client_capabilities.get("elicitation") or {}).get("form") is None:
            return None
        return functools.partial(self._ask_form, session_id)

    async def _ask_form(self, session_id: str, pending: PendingQuestion) -> Outcome:
        """Show a question as a form; an unusable answer shows it again, a failure to show it settles it."""
        assert self.conn is not None
        problem = ""
        for _ in range(FORM_ATTEMPTS):
            try:  # cancelled or expired: the form is closed on the client too
                response = await request_withdrawn_on_cancel(self.conn, "elicitation/create", wire(form_request(session_id, pending, problem)))
            except (RequestError, ConnectionError) as exc:
                return Outcome.failed(f"the client could not show the form: {exc}")
            outcome = form_outcome(pending.question, response)
            if isinstance(outcome, Outcome):
                return outcome
            problem = outcome
        return Outcome.failed(f"no usable answer after {FORM_ATTEMPTS} forms: {problem}")

    async def _advertise_commands(self, session_id: str) -> None:
        await self.send_update(session_id, commands_update(await self.host.commands_for(session_id)))

    def _after_response(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` just after the current request's response: it is started once the request's handling has
        ended (whatever it awaits on the way: a revision read, the recorded answer of a ``requestId``), and the
        connection queues that response without yielding in between."""
        deferred = self._deferred.get(asyncio.current_task())  # type: ignore[arg-type]
        if deferred is None:
            self._spawn(work)
        else:
            deferred.append(work)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if task.cancelled() or (error := task.exception()) is None:
            return
        if isinstance(error, ConnectionError):  # the client is gone (end of input): nobody to tell
            log.debug("background update dropped: %s", error)
        else:
            log.error("background update failed: %s", error, exc_info=error)

    async def cancel(self, request: CancelNotification) -> None:
        await self.host.cancel(request.session_id)

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        await self._open(request.session_id)
        await self.host.close(request.session_id)
        return CloseSessionResponse()

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        try:
            await self.host.archive(request.session_id)
        except SessionNotFound:
            pass
        await self.host.close(request.session_id)
        return DeleteSessionResponse()

    async def set_config_option(self, request: SetSessionConfigOptionSelectRequest) -> SetSessionConfigOptionResponse:
        """The client's own change: the answer carries the complete options, and no update echoes it back
        (``config_option_update`` is for changes the agent makes; nothing is said outside a turn)."""
        await self._open(request.session_id)
        field = {"model": "model", "thought_level": "reasoning", "mode": "agent"}.get(request.config_id)
        if field is None:
            raise RequestError.invalid_params({"configId": request.config_id, "details": "unknown config option"})
        try:
            record = await self.host.select(request.session_id, **{field: request.value})
        except UnknownChoice as exc:
            raise RequestError.invalid_params({"configId": request.config_id, "details": str(exc)}) from None
        except SessionBusy as exc:
            raise _busy(request.session_id, str(exc)) from None
        runtime = await self.host.runtimes.of(record.id)
        return SetSessionConfigOptionResponse(config_options=record_options(self.host.models, record, runtime))

    async def _open(self, session_id: str):
        try:
            return await self.host.open(session_id)
        except SessionNotFound:
            raise _not_found(session_id) from None


def _checked_params(type_name: str | None, model: type[BaseModel], params: Any) -> Any:
    """``params`` as the SDK's ``model`` once they are valid against the official schema (ours: the model alone)
    and all valid Unicode."""
    if type_name is not None and (problems := schema_problems(type_name, params)):
        raise RequestError.invalid_params({"errors": problems})
    if has_invalid_text(params):
        raise RequestError.invalid_params({"errors": [{"field": "params", "problem": "strings must be valid Unicode (no lone surrogates)"}]})
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = [{"field": ".".join(map(str, e["loc"])), "problem": e["msg"]} for e in exc.errors()]
        raise RequestError.invalid_params({"errors": problems}) from None


def _busy(session_id: str, message: str, reason: str = "busy", **data: Any) -> RequestError:
    """The Session cannot take this now; ``data`` (such as the prompt) goes back so nothing is lost."""
    return RequestError(BUSY_CODE, message, {"sessionId": session_id, "reason": reason, **data})


def _not_found(session_id: str) -> RequestError:
    return RequestError(NOT_FOUND_CODE, f"Session {session_id} not found", {"sessionId": session_id})


def _stop_reason(result: PromptResult, session_id: str) -> PromptResponse:
    """The ``session/prompt`` answer: a turn parked on a chat question ends this request with ``end_turn``."""
    if isinstance(result, AwaitingReply):
        return PromptResponse(stop_reason="end_turn")
    if result.stop_reason == "error":
        raise RequestError.internal_error({"details": result.error, "sessionId": session_id})
    return PromptResponse(stop_reason=result.stop_reason)


def prompt_images(blocks: list[Any]) -> list[Image]:
    """The prompt's image blocks, decoded; undecodable data is invalid params."""
    images: list[Image] = []
    for block in blocks:
        if getattr(block, "type", None) == "image":
            try:
                images.append(Image(base64.b64decode(block.data, validate=True), block.mime_type))
            except binascii.Error:
                raise RequestError.invalid_params({"details": "an image block's data is not valid base64"}) from None
    return images


def prompt_text(blocks: list[Any], *, with_images: bool = False) -> str:
    """The prompt as text: text blocks as they are, resource links and embedded text resources by reference;
    ``with_images``: image blocks are taken apart (``prompt_images``) and the text may be empty."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "image" and with_images:
            continue
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(f"<resource uri={block.resource.uri!r}>\n{block.resource.text}\n</resource>")
        else:
            raise RequestError.invalid_params({"details": f"prompt content of type {kind!r} is not supported"})
    text = "\n".join(parts)
    if not text.strip() and not with_images:
        raise RequestError.invalid_params({"details": "the prompt is empty"})
    return text


def _checked_cwd(cwd: str) -> str:
    if not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be an absolute path"})
    if not os.path.isdir(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd is not an existing directory"})
    return cwd


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
