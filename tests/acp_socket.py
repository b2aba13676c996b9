"""The Workspace for tests: `wld workspace` as a real subprocess, logging in with its link, and a schema-checking
ACP client on its WebSocket (`acp_wire.WireClient`, reading frames instead of stdout lines)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
from acp_wire import WireClient, load_schema
from waiting import PATIENCE
from wld_process import WldProcess, write_config

from runwield_bridge.web.workspace import ACP_PATH, COOKIE


@dataclass
class Workspace:
    """A running `wld workspace`: its process and the login link it printed."""

    process: WldProcess
    login_url: str

    @property
    def origin(self) -> str:
        parts = urlsplit(self.login_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def socket_url(self) -> str:
        return self.origin.replace("http", "ws", 1) + ACP_PATH


def workspace_config(tmp_path: Path) -> Path:
    """A wld.toml whose web server listens on a free loopback port."""
    return write_config(tmp_path / "wld.toml", {"web": {"listen": "127.0.0.1:0"}})


@contextlib.asynccontextmanager
async def running_workspace(
    config: Path, *args: str, env: dict[str, str] | None = None, command: str = "workspace"
) -> AsyncIterator[Workspace]:
    """`wld COMMAND --config CONFIG ARGS` (stdin a pipe kept open), once it has printed its Workspace login link;
    stopped with Ctrl-C after."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runwield_bridge.cli", command, "--config", str(config), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    process = WldProcess(proc)
    try:
        assert process.proc.stdout is not None
        line = b""
        while not line.startswith(b"http"):
            line = await asyncio.wait_for(process.proc.stdout.readline(), PATIENCE)
            assert line, f"wld workspace ended without a login link: {(await process.finish()).stderr}"
        yield Workspace(process, line.decode().strip())
    finally:
        await process.stop()


def browser() -> aiohttp.ClientSession:
    """An HTTP client that keeps no cookies of its own: each test says which cookie it sends."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def log_in(http: aiohttp.ClientSession, login_url: str) -> str:
    """Follow a login link; the login session's cookie value."""
    async with http.get(login_url, allow_redirects=False) as response:
        assert response.status == 303, await response.text()
        return response.cookies[COOKIE].value


class SocketWireClient(WireClient):
    """`WireClient` on the Workspace's WebSocket: every frame both ways checked against the official schema."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        super().__init__(None, load_schema())  # type: ignore[arg-type]  # no process: frames instead of stdio

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, http: aiohttp.ClientSession, workspace: Workspace, cookie: str) -> AsyncIterator[SocketWireClient]:
        headers = {"Origin": workspace.origin, "Cookie": f"{COOKIE}={cookie}"}
        socket = await http.ws_connect(workspace.socket_url, headers=headers, max_msg_size=0)
        client = cls(socket)
        try:
            yield client
        finally:
            await client.close()
        client.raise_violations()

    async def send_raw(self, data: bytes) -> None:
        """One frame: the text of ``data`` without its line end."""
        await self.socket.send_str(data.decode("utf-8", errors="surrogatepass").removesuffix("\n"))

    async def _incoming(self) -> AsyncIterator[bytes]:
        async for frame in self.socket:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                self.violations.append(f"the agent sent a {frame.type.name} frame; ACP frames are text")
                continue
            yield frame.data.encode("utf-8") + b"\n"

    async def _read_stderr(self) -> None:
        return None

    async def close(self, grace: float = 5.0) -> None:
        await self.socket.close()
        await asyncio.wait(self._readers, timeout=grace)
        for task in self._answering:
            task.cancel()
