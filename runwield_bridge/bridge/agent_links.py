"""One supervised ACP connection per configured agent, carrying all of that agent's sessions."""

from __future__ import annotations

import asyncio
import logging
from importlib.metadata import version
from collections.abc import Awaitable
from typing import Any, Protocol

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import Implementation, InitializeResponse, PermissionOption, RequestPermissionResponse, ToolCallProgress, ToolCallUpdate
from pydantic import BaseModel, ValidationError

from ..acp.client import CLIENT_CAPABILITIES, AgentEndpoint, SessionOfRequest
from ..acp.extensions import STEERING, STEERING_SUPPORT_KEY, SteeringAnswer, SteeringSupport
from ..channels.types import Unavailable
from .supervisor import Backoff, Supervisor

log = logging.getLogger(__name__)
CLIENT_INFO = Implementation(name="runwield-bridge", title="RunWield Bridge", version=version("runwield-bridge"))


class AgentUnavailable(Exception):
    """The agent cannot be reached right now; the message says why, in words for the chat."""


class AgentStopped(Unavailable):
    """The agent's connection ended; the supervisor restarts it (one warning line, no traceback)."""


class ClientSink(Protocol):
    """Where agent-to-client traffic goes: the Bridge."""

    def on_update(self, agent: str, session_id: str, update: Any) -> None: ...

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse: ...

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]: ...


class LinkClient:
    """The ACP Client object the SDK calls for one agent; everything goes to the Bridge by session id."""

    def __init__(self, link: AgentLink) -> None:
        self.link = link

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.link.sink.on_update(self.link.name, session_id, update)

    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any) -> RequestPermissionResponse:
        # the request may be the only place the agent names the tool: it reaches the reply as an update too
        self.link.sink.on_update(self.link.name, session_id, ToolCallProgress(**tool_call.model_dump(), session_update="tool_call_update"))
        return await self.link.sink.on_permission(self.link.name, session_id, tool_call, options)

    async def complete_elicitation(self, elicitation_id: str, **_: Any) -> None:
        log.info("agent %s completed elicitation %s", self.link.name, elicitation_id)

    async def elicit(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if session_id is None and isinstance(params, dict):
            session_id = self.link.requests.session_of(params.get("requestId"))
        return await self.link.sink.on_elicitation(self.link.name, session_id if isinstance(session_id, str) else None, params)


class AgentLink:
    """Starts the agent on first use, keeps it running (restarting with backoff), and knows its sessions."""

    def __init__(self, name: str, endpoint: AgentEndpoint, sink: ClientSink, *, start_timeout: float = 30.0, backoff: Backoff = Backoff()) -> None:
        self.name = name
        self.endpoint = endpoint
        self.sink = sink
        self.start_timeout = start_timeout
        self.conn: ClientSideConnection | None = None
        self.info: InitializeResponse | None = None
        self.loaded: set[str] = set()
        """Sessions opened (new or loaded) on the current connection."""
        self.requests = SessionOfRequest()
        self.down: asyncio.Future[str] | None = None
        """Completes with the reason when the current connection ends."""
        self.supervisor = Supervisor(f"agent {name}", self._serve, self._failed, backoff)
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def can_load(self) -> bool:
        return bool(self.info and self.info.agent_capabilities and self.info.agent_capabilities.load_session)

    @property
    def takes_images(self) -> bool:
        caps = self.info.agent_capabilities if self.info else None
        return bool(caps and caps.prompt_capabilities and caps.prompt_capabilities.image)

    @property
    def steers(self) -> bool:
        """Whether the agent takes input into a running turn: ``_meta.steering.supported`` in its ``initialize`` answer."""
        raw = (self.info.field_meta or {}).get(STEERING_SUPPORT_KEY) if self.info else None
        try:
            return raw is not None and SteeringSupport.model_validate(raw).supported
        except ValidationError:
            return False

    async def steer(self, session_id: str, blocks: list[BaseModel]) -> bool:
        """Add input to the session's running turn (``_session/steering``); False when it needs an ordinary prompt.
        Raises ConnectionError, or RequestError when the agent refuses it (a slash command, say)."""
        assert self.conn is not None
        prompt = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]
        raw = await self.conn.ext_method(STEERING.name, {"sessionId": session_id, "prompt": prompt})
        answer = SteeringAnswer.model_validate(raw)
        return answer.outcome == "injected"

    @property
    def status(self) -> str:
        if self.conn is not None:
            return "connected"
        if not self.supervisor.running:
            return "not started"
        error = self.supervisor.last_error
        return f"restarting after: {error}" if error else "starting"

    async def connection(self) -> ClientSideConnection:
        """The live connection, starting the agent if needed; raises AgentUnavailable."""
        if self.conn is not None:
            return self.conn
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self.supervisor.start()
        try:
            await asyncio.wait_for(waiter, self.start_timeout)
        except TimeoutError:
            reason = f" (last error: {self.supervisor.last_error})" if self.supervisor.last_error else ""
            raise AgentUnavailable(f"Agent {self.name} did not start within {self.start_timeout:g}s{reason}.") from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        assert self.conn is not None
        return self.conn

    async def stop(self) -> None:
        await self.supervisor.stop()

    async def _serve(self) -> None:
        client = LinkClient(self)
        async with self.endpoint.open(client, [self.requests]) as (conn, gone):
            try:
                info = await asyncio.wait_for(
                    conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=CLIENT_CAPABILITIES, client_info=CLIENT_INFO),
                    self.start_timeout,
                )
            except ConnectionError:  # it went away before answering: say why, if it says
                raise AgentStopped(await _why_gone(gone)) from None
            if info.protocol_version != PROTOCOL_VERSION:
                raise AgentStopped(f"it speaks ACP version {info.protocol_version}; the bridge speaks {PROTOCOL_VERSION}")
            down: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self.conn, self.info, self.loaded, self.down = conn, info, set(), down
            self._wake_waiters(None)
            reason = "the connection was closed"
            try:
                reason = await gone
            finally:
                self.conn = None
                down.set_result(reason)
        raise AgentStopped(reason)

    async def _failed(self, exc: BaseException, delay: float) -> None:
        self._wake_waiters(AgentUnavailable(f"Agent {self.name} is not available: {exc}. Retrying in {delay:.1f}s."))

    def _wake_waiters(self, error: Exception | None) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None) if error is None else waiter.set_exception(error)
        self._waiters.clear()


async def _why_gone(gone: Awaitable[str]) -> str:
    try:
        return await asyncio.wait_for(gone, 2.0)
    except TimeoutError:
        return "it closed the connection before answering initialize"
