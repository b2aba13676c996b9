"""The Workspace page on a real Session Host for browser tests: the page, review pages and an ACP WebSocket on one server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import WSMsgType, web
from acp.connection import Connection
from playwright.async_api import Page

from runwield_bridge.acp.sdk_gaps import memory_pair
from runwield_bridge.acp.server import AcpAgentServer
from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.web.workspace import add_workspace_routes

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"


@dataclass
class Workspace:
    """A running `wld` web server with the Workspace page; ``url`` opens it."""

    app: App
    base_url: str
    sockets: set[web.WebSocketResponse] = field(default_factory=set)
    strip_workspace: bool = False

    def url(self, **query: str | int) -> str:
        tail = "&".join(f"{k}={v}" for k, v in query.items())
        return f"{self.base_url}/workspace" + (f"?{tail}" if tail else "")

    async def drop_connections(self) -> None:
        """Cut every open WebSocket, as a network failure would."""
        for socket in list(self.sockets):
            await socket.close()

    async def acp_socket(self, request: web.Request) -> web.WebSocketResponse:
        """ACP over a WebSocket (one JSON-RPC message per text frame) on an in-memory pipe to the Session Host."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.sockets.add(socket)
        server_end, client_end = memory_pair()
        server = AcpAgentServer(self.app.host)
        conn = Connection(server, server_end)
        server.attach(conn)

        async def outbound() -> None:
            while (message := await client_end.receive()) is not None:
                if self.strip_workspace and "result" in message and isinstance(message["result"], dict):
                    message["result"].get("_meta", {}).get("runwield", {}).pop("workspace", None)
                await socket.send_str(json.dumps(message))

        sending = asyncio.create_task(outbound())
        try:
            async for frame in socket:
                if frame.type == WSMsgType.TEXT:
                    await client_end.send(json.loads(frame.data))
        finally:
            self.sockets.discard(socket)
            await client_end.close()
            await conn.close()
            sending.cancel()
        return socket


@contextlib.asynccontextmanager
async def workspace(tmp_path: Path, config: str = "") -> AsyncIterator[Workspace]:
    """A Session Host (SQLite under ``$WLD_HOME``) serving the Workspace page, review pages and ``/acp``."""
    (tmp_path / "wld.toml").write_text('[web]\nlisten = "127.0.0.1:0"\n' + config)
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    server = app.review_pages.server
    add_workspace_routes(server)
    holder: dict[str, Workspace] = {}

    async def acp(request: web.Request) -> web.StreamResponse:
        return await holder["workspace"].acp_socket(request)

    server.add_route("GET", "/acp", acp)
    try:
        holder["workspace"] = Workspace(app, await app.review_pages.base_url())
        yield holder["workspace"]
    finally:
        if "workspace" in holder:
            await holder["workspace"].drop_connections()
        await app.close()


async def screenshot(page: Page, name: str) -> None:
    """Save docs/images/workspace-NAME.png for docs/workspace.md, only when WLD_SCREENSHOTS=1 (normal runs leave the tree alone)."""
    if os.environ.get("WLD_SCREENSHOTS") == "1":
        IMAGES.mkdir(exist_ok=True)
        await page.screenshot(path=str(IMAGES / f"workspace-{name}.png"))

