"""The ACP client side of the Bridge: one SDK ``ClientSideConnection`` per agent, in-process or by command.

Thin extensions over the official SDK: the capabilities the Bridge advertises, a raw route for
``elicitation/create`` (``sdk_gaps.ClientRoute``: a malformed request is explained and declined
instead of bounced; the ``terminal/*`` methods, not advertised, are method-not-found), and a record
of which session each outgoing request belongs to (for request-scoped elicitations).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shlex
import shutil
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
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
from acp.transports import default_environment

from ..config import AgentConfig
from ..core.command_supervisor import supervised
from .sdk_gaps import ClientRoute, LineTransport, MessageTransport
from .transport import STREAM_LIMIT

log = logging.getLogger(__name__)

CLIENT_CAPABILITIES = ClientCapabilities(
    elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities(), url=ElicitationUrlCapabilities())
)
STDERR_LINES_KEPT = 5
AGENT_EXIT_GRACE = 2.0
"""Seconds an agent gets to exit after end of input, and again after SIGTERM."""

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
    return connect_to_agent(client, ClientRoute(transport, client.elicit), use_unstable_protocol=True, observers=observers)


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
            conn = client_connection(client, LineTransport(process.stdout, process.stdin), observers)
            drain = asyncio.create_task(self._drain_stderr(process.stderr), name=f"stderr:{command}")
            try:
                yield conn, self._exited(process)
            finally:
                drain.cancel()
                await asyncio.gather(drain, return_exceptions=True)
                await conn.close()

    async def _exited(self, process: asyncio.subprocess.Process) -> str:
        code = await process.wait()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        last = f"; it last said: {self.stderr_tail[-1]}" if self.stderr_tail else ""
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


@contextlib.asynccontextmanager
async def agent_process(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> AsyncIterator[asyncio.subprocess.Process]:
    """The agent on pipes, in a session of its own: a terminal's Ctrl-C goes to its foreground process
    group, and must reach wld (which cancels the turn), not the agent. It runs under the command supervisor, so that
    stopping it stops whatever it started, and the agent and all it started end with wld, also when wld is killed
    (an agent waiting on a question may not end at the end of its input)."""
    env = {**default_environment(), **env}
    program = found_program(command, env.get("PATH"), cwd)
    process = await asyncio.create_subprocess_exec(
        *supervised("exec " + shlex.join([program, *args])),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        limit=STREAM_LIMIT,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        await _stop(process)


def found_program(command: str, path: str | None, cwd: str | None) -> str:
    """The agent's program as its command names it (on ``path``, or relative to ``cwd``); FileNotFoundError, as
    starting a missing program raises, when there is none."""
    found = shutil.which(command, path=path) if os.sep not in command else str(Path(cwd or ".", command))
    if found is None or not os.access(found, os.X_OK):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return found


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End of input; then SIGTERM, then SIGKILL, each when the agent has not exited ``AGENT_EXIT_GRACE`` seconds later."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, RuntimeError):
        process.stdin.close()
    for ask in (process.terminate, process.kill):
        try:
            await asyncio.wait_for(process.wait(), AGENT_EXIT_GRACE)
            return
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                ask()
    await process.wait()


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
