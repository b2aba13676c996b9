"""One supervised ACP connection per configured agent, carrying all of its sessions: used by the Bridge and by the acp runtime.

It starts the agent (``client.py``: a command, or the in-process Session Host), initializes it, routes what the agent
sends (updates, permission requests, elicitations) to a sink by session id, restarts it with backoff when it goes
away, and stops it (its whole process group) when asked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from importlib.metadata import version
from typing import Any, Protocol

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import Implementation, InitializeResponse, PermissionOption, RequestPermissionResponse, ToolCallProgress, ToolCallUpdate

from ..supervision import Backoff, Supervisor
from .client import CLIENT_CAPABILITIES, AgentEndpoint, SessionOfRequest

log = logging.getLogger(__name__)
CLIENT_INFO = Implementation(name="runwield-bridge", title="RunWield Bridge", version=version("runwield-bridge"))
START_TIMEOUT = 30.0


class AgentUnavailable(Exception):
    """The agent cannot be reached right now; the message says why, in words for the chat."""


class AgentStopped(ConnectionError):
    """The agent's connection ended; the supervisor restarts it (one warning line, no traceback)."""


class SessionSink(Protocol):
    """Where the agent's traffic goes, by the agent's name and session id."""

    def on_update(self, agent: str, session_id: str, update: Any) -> None: ...

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse: ...

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]: ...


class ConnectionClient:
    """The ACP Client object the SDK calls for one agent; everything goes to the sink by session id."""

    def __init__(self, agent: AgentConnection) -> None:
        self.agent = agent

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.agent.sink.on_update(self.agent.name, session_id, update)

    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any) -> RequestPermissionResponse:
        # the request may be the only place the agent names the tool: it is shown as an update before the question
        self.agent.sink.on_update(self.agent.name, session_id, ToolCallProgress(**tool_call.model_dump(), session_update="tool_call_update"))
        return await self.agent.sink.on_permission(self.agent.name, session_id, tool_call, options)

    async def complete_elicitation(self, elicitation_id: str, **_: Any) -> None:
        log.info("agent %s completed elicitation %s", self.agent.name, elicitation_id)

    async def elicit(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if session_id is None and isinstance(params, dict):
            session_id = self.agent.requests.session_of(params.get("requestId"))
        return await self.agent.sink.on_elicitation(self.agent.name, session_id if isinstance(session_id, str) else None, params)


class AgentConnection:
    """Starts the agent on first use, keeps it running (restarting with backoff), and knows its sessions."""

    def __init__(self, name: str, endpoint: AgentEndpoint, sink: SessionSink, *, start_timeout: float = START_TIMEOUT, backoff: Backoff = Backoff()) -> None:
        self.name = name
        self.endpoint = endpoint
        self.sink = sink
        self.start_timeout = start_timeout
        self.conn: ClientSideConnection | None = None
        self.info: InitializeResponse | None = None
        self.loaded: set[str] = set()
        """Sessions opened (new, loaded or resumed) on the current connection."""
        self.requests = SessionOfRequest()
        self.down: asyncio.Future[str] | None = None
        """Completes with the reason when the current connection ends."""
        self.supervisor = Supervisor(f"agent {name}", self._serve, self._failed, backoff)
        self._waiters: list[asyncio.Future[None]] = []
        self._was_up = False
        """Whether the latest start got as far as a connection (so its end is no failure to start)."""

    def offers(self, method: str) -> bool:
        """Whether the agent offers ``session/load``, or the ``session/METHOD`` its ``sessionCapabilities`` name
        (``resume``, ``list``, ``close``, ...)."""
        caps = self.info.agent_capabilities if self.info else None
        if caps is None:
            return False
        if method == "load":
            return bool(caps.load_session)
        return getattr(caps.session_capabilities, method, None) is not None

    @property
    def can_load(self) -> bool:
        return self.offers("load")

    @property
    def takes_images(self) -> bool:
        caps = self.info.agent_capabilities if self.info else None
        return bool(caps and caps.prompt_capabilities and caps.prompt_capabilities.image)

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

    def lost(self, conn: ClientSideConnection | None) -> None:
        """``conn`` failed (the agent closed it, or crashed): end it and the agent's process now, so that the supervisor
        starts the agent again instead of the next turn finding the dead connection before the process's exit is noticed."""
        if conn is not None and conn is self.conn and self.down is not None and not self.down.done():
            self.conn = None
            self.down.set_result("the agent closed the connection")

    async def stop(self) -> None:
        """Stop the agent (end of input, then SIGTERM and SIGKILL to its process group) and its supervision."""
        await self.supervisor.stop()

    async def _serve(self) -> None:
        self._was_up = False
        async with self.endpoint.open(ConnectionClient(self), [self.requests]) as (conn, gone):
            try:
                info = await asyncio.wait_for(
                    conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=CLIENT_CAPABILITIES, client_info=CLIENT_INFO),
                    self.start_timeout,
                )
            except ConnectionError:  # it went away before answering: say why, if it says
                raise AgentStopped(await _why_gone(gone)) from None
            if info.protocol_version != PROTOCOL_VERSION:
                raise AgentStopped(f"it speaks ACP version {info.protocol_version}; RunWield speaks {PROTOCOL_VERSION}")
            down: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self.conn, self.info, self.loaded, self.down = conn, info, set(), down
            self._was_up = True
            self._wake_waiters(None)
            ended = asyncio.ensure_future(gone)
            try:
                await asyncio.wait([ended, down], return_when=asyncio.FIRST_COMPLETED)
            finally:
                self.conn = None
                if not down.done():
                    down.set_result(ended.result() if ended.done() and not ended.cancelled() and ended.exception() is None else "the connection was closed")
                ended.cancel()
        raise AgentStopped(down.result())

    async def _failed(self, exc: BaseException, delay: float) -> None:
        """A failure to start tells those waiting; the end of a connection that was up lets them wait for the restart."""
        if not self._was_up:
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
