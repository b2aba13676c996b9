"""Client-supplied stdio MCP servers, run with the official ``mcp`` SDK's client: each server is held open by
its own task (the SDK's contexts live in one task), its tools become our Tools, and closing stops them all."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ..core.models import ToolSpec
from ..core.tool_servers import StdioServerSpec
from ..core.tools import Tool, ToolContext, ToolError

START_TIMEOUT = 30.0  # seconds for a server to start and list its tools
CALL_TIMEOUT = 600.0  # seconds for one tool call


class McpServer:
    """One running stdio MCP server."""

    def __init__(self, spec: StdioServerSpec, cwd: Path) -> None:
        self.spec = spec
        self.cwd = cwd
        self.client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> list[Tool]:
        """Start the server and list its tools; raises with the reason when it cannot be used."""
        ready: asyncio.Future[list[Tool]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp:{self.spec.name}")
        try:
            async with asyncio.timeout(START_TIMEOUT):
                return await asyncio.shield(ready)
        except TimeoutError:
            await self.stop()
            raise RuntimeError(f"it did not start within {START_TIMEOUT:g}s") from None

    async def _hold(self, ready: asyncio.Future[list[Tool]]) -> None:
        params = StdioServerParameters(
            command=self.spec.command, args=list(self.spec.args), env=dict(self.spec.env) or None, cwd=self.cwd
        )
        try:
            async with Client(params, read_timeout_seconds=CALL_TIMEOUT) as client:
                listing = await client.list_tools()
                self.client = client
                ready.set_result([self._tool(t.name, t.description or "", t.input_schema) for t in listing.tools])
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the SDK raises exception groups; the reason goes to the user
            if not ready.done():
                ready.set_exception(RuntimeError(_reason(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None

    def _tool(self, name: str, description: str, schema: dict[str, Any]) -> Tool:
        async def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
            return await self.call(name, arguments)

        spec = ToolSpec(tool_name(self.spec.name, name), f"{description} (MCP server {self.spec.name})".strip(), schema)
        return Tool(spec, "other", run)

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Call one of the server's tools; its text content is the output, an error result a ToolError."""
        if self.client is None:
            raise ToolError(f"MCP server {self.spec.name!r} is not running")
        try:
            result = await self.client.call_tool(name, arguments)
        except Exception as exc:  # noqa: BLE001 - a dead server or a protocol error: said to the model
            raise ToolError(f"MCP server {self.spec.name!r} failed: {_reason(exc)}") from None
        text = "\n".join(getattr(part, "text", f"[{part.type} content]") for part in result.content)
        if result.is_error:
            raise ToolError(text or f"{name} failed")
        return text

    async def stop(self) -> None:
        """Stop the server process (the SDK closes its stdin, then terminates it)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task


class McpServers:
    """The MCP servers one Session's client brought."""

    def __init__(self) -> None:
        self.servers: list[McpServer] = []
        self.tools: tuple[Tool, ...] = ()
        self.problems: tuple[str, ...] = ()

    async def aclose(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers))
        self.servers.clear()


async def start_mcp_servers(specs: Sequence[StdioServerSpec], cwd: Path) -> McpServers:
    """Start every server at once; each one that cannot be used becomes a problem, in words."""
    group = McpServers()
    servers = [McpServer(spec, cwd) for spec in specs]
    results = await asyncio.gather(*(server.start() for server in servers), return_exceptions=True)
    tools: list[Tool] = []
    problems: list[str] = []
    for server, result in zip(servers, results, strict=True):
        if isinstance(result, BaseException):
            problems.append(f"MCP server {server.spec.name!r} could not be started ({result}); its tools are not available.")
            await server.stop()
        else:
            group.servers.append(server)
            tools += result
    group.tools, group.problems = tuple(tools), tuple(problems)
    return group


def tool_name(server: str, tool: str) -> str:
    """The name a model sees: ``mcp__SERVER__TOOL``, in the characters model APIs accept."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp__{server}__{tool}")[:64]


def _reason(exc: BaseException) -> str:
    """The first real error inside (possibly nested) exception groups, in words."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
