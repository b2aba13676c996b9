"""The ACP client side of the Bridge: one SDK ``ClientSideConnection`` per agent, in-process or by command.

Thin extensions over the official SDK: the capabilities the Bridge advertises, a raw route for
``elicitation/create`` (``sdk_gaps.ClientRoute``: a malformed request is explained and declined
instead of bounced; the ``terminal/*`` methods, not advertised, are method-not-found), and a record
of which session each outgoing request belongs to (for request-scoped elicitations).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from acp import connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
)

from ..config import AgentConfig
from .agent_process import agent_process
from .sdk_gaps import ClientRoute, LineTransport, MessageTransport, Observed

log = logging.getLogger(__name__)

CLIENT_CAPABILITIES = ClientCapabilities(
    elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities(), url=ElicitationUrlCapabilities())
)
STDERR_LINES_KEPT = 5
HANGUP_GRACE = 1.0
"""Seconds an agent that closed its output gets to exit, so its exit status can say why it went."""

Connected = tuple[ClientSideConnection, Awaitable[str]]
"""A live connection, and an awaitable that completes (with the reason) when the agent goes away."""


class BridgeClient(Protocol):
    """The SDK's client interface, plus ``elicit``: ``elicitation/create`` from its raw params."""

    async def elicit(self, params: Any) -> dict[str, Any]: ...


class AgentEndpoint(Protocol):
    """Where an agent lives and how to reach it."""

    description: str

    def open(self, client: BridgeClient, observers: list[Callable[[StreamEvent], None]]) -> contextlib.AbstractAsyncContextManager[Connected]: ...


def client_connection(client: BridgeClient, transport: MessageTransport, observers: list[Callable[[StreamEvent], None]]) -> ClientSideConnection:
    """The SDK's client connection over ``transport``, with elicitations answered from their raw params."""
    return connect_to_agent(client, Observed(ClientRoute(transport, client.elicit), observers), use_unstable_protocol=True)


class CommandAgent:
    """An ACP agent started by ``[agents.NAME] command``, spoken to over its stdin and stdout."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.description = " ".join(config.command)
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES_KEPT)

    @contextlib.asynccontextmanager
    async def open(self, client: BridgeClient, observers: list[Callable[[StreamEvent], None]]) -> AsyncIterator[Connected]:
        command, *args = self.config.command
        async with agent_process(command, args, self.config.env, self.config.cwd) as process:
            assert process.stdin is not None and process.stdout is not None
            transport = LineTransport(process.stdout, process.stdin)
            conn = client_connection(client, transport, observers)
            drain = asyncio.create_task(self._drain_stderr(process.stderr), name=f"stderr:{command}")
            try:
                yield conn, self._gone(process, transport)
            finally:
                drain.cancel()
                await asyncio.gather(drain, return_exceptions=True)
                await conn.close()

    async def _gone(self, process: asyncio.subprocess.Process, transport: LineTransport) -> str:
        """Why the agent went away, once its process exits or it closes its output (the connection) and lives on,
        as a crashed agent's wrapper may: then stopping it is up to the caller."""
        exited = asyncio.ensure_future(process.wait())
        closed = asyncio.ensure_future(transport.ended.wait())
        try:
            await asyncio.wait([exited, closed], return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():  # a crash closes the output a moment before the exit is seen
                await asyncio.wait([exited], timeout=HANGUP_GRACE)
        finally:
            closed.cancel()
            exited.cancel()
        last = f"; it last said: {self.stderr_tail[-1]}" if self.stderr_tail else ""
        if process.returncode is None:
            return f"the agent closed the connection but did not exit{last}"
        code = process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return f"the agent process ended ({how}){last}"

    async def _drain_stderr(self, stream: asyncio.StreamReader | None) -> None:
        """Keep the agent's stderr flowing (a full pipe would stall it) and remember its last lines."""
        if stream is None:
            return
        while line := await stream.readline():
            text = line.decode(errors="replace").rstrip()
            if text:
                self.stderr_tail.append(text)
                log.info("agent %s: %s", self.description, text)


class SessionOfRequest:
    """A stream observer that remembers which session each outgoing request is about."""

    def __init__(self) -> None:
        self._sessions: dict[Any, str] = {}

    def __call__(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.OUTGOING and "method" in message and "id" in message:
            session_id = (message.get("params") or {}).get("sessionId")
            if isinstance(session_id, str):
                self._sessions[message["id"]] = session_id
        elif event.direction is StreamDirection.INCOMING and "method" not in message:
            self._sessions.pop(message.get("id"), None)

    def session_of(self, request_id: Any) -> str | None:
        return self._sessions.get(request_id)
