"""The Session methods of one ACP connection: each request translated to the Session Host, and the Session's
events back as ``session/update``. Imported only once the Session Host has started (``server.py``)."""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from acp import RequestError
from acp.connection import Connection
from acp.schema import (
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionSelectRequest,
)
from pydantic import BaseModel

from ..core.catalog import UnknownChoice
from ..core.events import Event, Notice
from ..core.interactions import Outcome, PendingQuestion
from ..core.models import ModelError
from ..core.records import SessionRecord
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
from ..core.shortage import OutOfResources
from ..core.steering import SteeringRejected
from .effects import EffectLedger
from .extensions import NAMESPACE, REVISION, HistoryPage, HistoryRequest, SteeringAnswer, meta_of
from .forms import form_outcome, form_request
from .history import history_page
from .listing import list_sessions
from .mcp_specs import stdio_specs
from .menus import ChatReply, NoMatch, did_not_match, interpret, other_prompt, read_reply
from .sdk_gaps import request_withdrawn_on_cancel
from .updates import Update, commands_update, event_to_update, notification, own_choice, question_update, record_options, wire

log = logging.getLogger(__name__)

BUSY_CODE = -32001
NOT_FOUND_CODE = -32002
FORM_ATTEMPTS = 3  # a form whose answer is not usable is shown again, at most this many times in all


class Server(Protocol):
    """What the Session methods use of their connection's ``server.AcpAgentServer``."""

    conn: Connection | None
    client_capabilities: dict[str, Any]

    def after_response(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` just after the current request's response."""


class SessionMethods:
    """The Session Host's side of one ACP connection.

    It has more than 15 public methods because it is the Session side of the protocol: one method per ACP
    method (session/new, session/prompt, ...), each only translating to the Session Host, plus ``send_update``
    and ``emitter``, which carry a Session's events to the client.
    """

    def __init__(self, server: Server, host: SessionHost) -> None:
        self.server = server
        self.host = host
        self._typing_other: dict[str, str] = {}  # session id -> the interview question whose Other text is owed

    @functools.cached_property
    def effects(self) -> EffectLedger:
        """Mutating requests once per ``requestId``, on views that are current (``effects.py``)."""
        return EffectLedger(self.host.store.workspace, self.host.store.sessions)

    async def send_update(self, session_id: str, update: Update) -> None:
        assert self.server.conn is not None
        await self.server.conn.send_notification("session/update", notification(session_id, update))

    def emitter(self, session_id: str) -> Callable[[Event], Awaitable[None]]:
        async def emit(event: Event) -> None:
            if (update := event_to_update(event, self.host.models)) is None:
                return
            try:
                await self.send_update(session_id, update)
            except ConnectionError:  # the client left (a closed WebSocket): the turn goes on, its transcript keeps it
                log.debug("update for Session %s dropped: the client is gone", session_id)

        return emit

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        cwd = _checked_cwd(request.cwd)
        record = await self.host.create(cwd)
        problems = await self._start_mcp_servers(record.id, request.mcp_servers)
        self.host.attach(record.id, self.emitter(record.id), self._forms(record.id))
        self.server.after_response(self._advertise_commands(record.id))
        self.server.after_response(self._tell(record.id, problems))
        options = await self._options(record)
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
        self.server.after_response(self._advertise_commands(record.id))
        self.server.after_response(self._tell(record.id, problems))
        self.server.after_response(self.host.attend(record.id, emit, self._forms(record.id)))
        return await self._options(record)

    async def _options(self, record: SessionRecord) -> list[Any]:
        """The Session's complete config options, its external agent's own modes and models among them once known."""
        runtimes = self.host.runtimes
        return record_options(self.host.models, record, await runtimes.of(record.id), await runtimes.own_choices(record.id))

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
        except (SessionBusy, QuestionPending, OutOfResources) as exc:
            reason = {SessionBusy: "busy", QuestionPending: "questionPending"}.get(type(exc), "outOfResources")
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
        if (self.server.client_capabilities.get("elicitation") or {}).get("form") is None:
            return None
        return functools.partial(self._ask_form, session_id)

    async def _ask_form(self, session_id: str, pending: PendingQuestion) -> Outcome:
        """Show a question as a form; an unusable answer shows it again, a failure to show it settles it."""
        assert self.server.conn is not None
        problem = ""
        for _ in range(FORM_ATTEMPTS):
            try:  # cancelled or expired: the form is closed on the client too
                response = await request_withdrawn_on_cancel(self.server.conn, "elicitation/create", wire(form_request(session_id, pending, problem)))
            except (RequestError, ConnectionError) as exc:
                return Outcome.failed(f"the client could not show the form: {exc}")
            outcome = form_outcome(pending.question, response)
            if isinstance(outcome, Outcome):
                return outcome
            problem = outcome
        return Outcome.failed(f"no usable answer after {FORM_ATTEMPTS} forms: {problem}")

    async def _advertise_commands(self, session_id: str) -> None:
        await self.send_update(session_id, commands_update(await self.host.commands_for(session_id)))

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
        (``config_option_update`` is for changes the agent makes). The external agent's own mode or model goes to
        its session; when the agent approves itself in the chosen mode, a notice says so."""
        session_id = request.session_id
        await self._open(session_id)
        field = {"model": "model", "thought_level": "reasoning", "mode": "agent"}.get(request.config_id)
        own = own_choice(await self.host.runtimes.own_choices(session_id), request.config_id, request.value)
        if field is None and own is None:
            raise RequestError.invalid_params({"configId": request.config_id, "details": "unknown config option"})
        try:
            if own is not None:
                self.server.after_response(self._tell(session_id, await self.host.runtimes.choose_own(session_id, *own)))
                record = await self.host.get(session_id)
            else:
                record = await self.host.select(session_id, **{str(field): request.value})
        except UnknownChoice as exc:
            raise RequestError.invalid_params({"configId": request.config_id, "details": str(exc)}) from None
        except ModelError as exc:
            raise RequestError.internal_error({"configId": request.config_id, "details": str(exc)}) from None
        except SessionBusy as exc:
            raise _busy(session_id, str(exc)) from None
        return SetSessionConfigOptionResponse(config_options=await self._options(record))

    async def _open(self, session_id: str):
        try:
            return await self.host.open(session_id)
        except SessionNotFound:
            raise _not_found(session_id) from None


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
