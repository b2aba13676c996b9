"""Running the ACP agent server: on stdio (`wld acp`), on a transport such as a WebSocket, or on an in-memory pipe
inside this process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from acp.connection import Connection

from .sdk_gaps import MemoryEnd, MessageTransport, RequestIdNoting, memory_pair
from .server import AcpAgentServer, HostStarter
from .transport import protocol_stdio

if TYPE_CHECKING:
    from ..core.sessions import SessionHost


async def serve_stdio(start_host: HostStarter, *, accepts_images: bool = False) -> None:
    """Serve one ACP client on stdin/stdout until it closes the stream. The Session Host is started by
    ``start_host`` once ``initialize`` is answered, so an IDE does not wait for the store and the plugins; if it
    cannot start, serving stops and its error is raised. ``accepts_images``: what ``initialize`` advertises
    before the host has started (some configured model sees images). When the client is gone, the host shuts
    down: running turns settle as cancelled."""
    server = AcpAgentServer(start_host=start_host, accepts_images=accepts_images)
    await _serve(server, await protocol_stdio(), shut_down=True)


async def serve_transport(host: SessionHost, transport: MessageTransport) -> None:
    """Serve one ACP client of a running (shared) Session Host on ``transport`` (a WebSocket) until its input ends;
    requests already received still get their answers."""
    await _serve(AcpAgentServer(host), transport, shut_down=False)


async def _serve(server: AcpAgentServer, transport: MessageTransport, *, shut_down: bool) -> None:
    conn = Connection(server, RequestIdNoting(transport), listening=False)
    server.attach(conn)
    receiving = asyncio.ensure_future(conn.main_loop())
    server.host_ready.add_done_callback(lambda ready: _failed(ready) and receiving.cancel())
    try:
        await receiving
    except asyncio.CancelledError:
        if not _failed(server.host_ready):
            raise
    finally:
        if shut_down and (host := await server.started_host()) is not None:
            await host.shutdown()
        await server.drain()
        await conn.close()
    if _failed(server.host_ready):
        raise server.host_ready.exception()  # type: ignore[misc]


def _failed(ready: asyncio.Future[SessionHost]) -> bool:
    return ready.done() and not ready.cancelled() and ready.exception() is not None


@contextlib.asynccontextmanager
async def in_memory_agent(host: SessionHost) -> AsyncIterator[MemoryEnd]:
    """An ACP server on one end of an in-memory pipe for this process's own client (the Bridge); yields the client's end."""
    server_end, client_end = memory_pair()
    server = AcpAgentServer(host, own_client=True)
    conn = Connection(server, RequestIdNoting(server_end))
    server.attach(conn)
    try:
        yield client_end
    finally:
        await conn.close()
        await asyncio.sleep(0)
