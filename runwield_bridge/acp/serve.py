"""Running the ACP agent server: on stdio (`wld acp`) or on an in-memory pipe inside this process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from acp.connection import Connection

from ..core.sessions import SessionHost
from .sdk_gaps import MemoryEnd, MessageTransport, memory_pair
from .server import AcpAgentServer
from .transport import protocol_stdio


async def serve_stdio(host: SessionHost) -> None:
    """Serve one ACP client on stdin/stdout until it closes the stream; then running turns settle as cancelled."""
    await serve_transport(host, await protocol_stdio(), at_end=host.shutdown)


async def serve_transport(host: SessionHost, transport: MessageTransport, at_end: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve one ACP client on ``transport`` until its input ends (stdio, a WebSocket), then run ``at_end``;
    requests already received still get their answers."""
    server = AcpAgentServer(host)
    conn = Connection(server, transport, listening=False)
    server.attach(conn)
    try:
        await conn.main_loop()
    finally:
        if at_end is not None:
            await at_end()
        await server.drain()
        await conn.close()


@contextlib.asynccontextmanager
async def in_memory_agent(host: SessionHost) -> AsyncIterator[MemoryEnd]:
    """An ACP server on one end of an in-memory pipe; yields the client's end."""
    server_end, client_end = memory_pair()
    server = AcpAgentServer(host)
    conn = Connection(server, server_end)
    server.attach(conn)
    try:
        yield client_end
    finally:
        await conn.close()
        await asyncio.sleep(0)
