"""RunWield's tools as one MCP server for an external agent (ADR 0033 D3), built with the official ``mcp`` SDK.

Every ACP agent must support stdio MCP servers, so that is what the agent is given in ``session/new``'s
``mcpServers``: ``wld mcp-bus --socket PATH``, a relay from its stdin and stdout to a Unix socket on which this
process serves MCP. The tools therefore run here, in the live Session: ``user_interview`` asks the Session's user,
``write_plan`` writes the Session's Plan. Only the tools listed in ``[agents.NAME] tools`` are served; with none
listed, the agent is given no server at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import McpServerStdio

from ..core.runtime import TurnRequest
from ..core.tools import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    import mcp.types as mcp_types

BUS_NAME = "runwield"
NOT_IN_A_TURN = "RunWield's tools work only while RunWield has a turn running on this session"


class ToolBus:
    """One agent's MCP bus: a socket per agent session, serving the allowed tools of the turn running on it."""

    def __init__(self, allowed: Sequence[str]) -> None:
        self.allowed = tuple(allowed)
        self._dir: Path | None = None
        self._servers: list[asyncio.AbstractServer] = []

    async def offer(self, tools: Sequence[Tool], turn: Callable[[], TurnRequest | None]) -> list[McpServerStdio]:
        """``mcpServers`` for a new or reopened agent session: the bus with the allowed ``tools`` (none: no server).
        ``turn`` gives the turn running on that agent session, whose context the tools run in."""
        served = tuple(tool for tool in tools if tool.spec.name in self.allowed)
        if not served:
            return []
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="wld-mcp-"))  # short: a socket path has at most 107 bytes
        path = self._dir / f"{uuid.uuid4().hex[:12]}.sock"
        server = await asyncio.start_unix_server(lambda r, w: self._serve(r, w, served, turn), path=str(path))
        self._servers.append(server)
        argv = [sys.executable, "-m", "runwield_bridge.cli", "mcp-bus", "--socket", str(path)]
        return [McpServerStdio(name=BUS_NAME, command=argv[0], args=argv[1:], env=[])]

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        self._servers.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tools: tuple[Tool, ...], turn: Callable[[], TurnRequest | None]) -> None:
        """One MCP connection (one ``wld mcp-bus`` relay), until the agent closes it."""
        import mcp.types as mcp_types  # the mcp SDK, loaded only when an agent connects: `wld acp` starts without it
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server

        by_name = {tool.spec.name: tool for tool in tools}

        async def list_tools(_: Any, __: Any) -> mcp_types.ListToolsResult:
            listed = [mcp_types.Tool(name=t.spec.name, description=t.spec.description, input_schema=t.spec.parameters) for t in tools]
            return mcp_types.ListToolsResult(tools=listed)

        async def call_tool(_: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
            text, failed = await run_tool(by_name.get(params.name), params.name, params.arguments or {}, turn())
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=failed)

        server: Server[Any] = Server(BUS_NAME, on_list_tools=list_tools, on_call_tool=call_tool)
        with contextlib.suppress(Exception):
            async with stdio_server(LineReader(reader), LineWriter(writer)) as (read, write):  # type: ignore[arg-type]
                await server.run(read, write, server.create_initialization_options())
        writer.close()


async def run_tool(tool: Tool | None, name: str, arguments: dict[str, Any], request: TurnRequest | None) -> tuple[str, bool]:
    """Run a bus tool in the running turn's Session and directory; its output, and whether it failed."""
    if tool is None:
        return f"unknown tool {name!r}", True
    if request is None:
        return NOT_IN_A_TURN, True
    ask = request.ask
    context = ToolContext(request.session.id, request.cwd, lambda question: ask(question, None), show=request.emit)
    try:
        output = await tool.run(arguments, context)
    except ToolError as exc:
        return str(exc), True
    for event in context.shown:  # what the tool shows once it has ended: a saved Plan with its next steps, say
        await request.emit(event)
    return output, False


class LineReader:
    """An asyncio stream as the text lines ``mcp``'s stdio transport reads."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await self.reader.readline():
            yield line.decode("utf-8", errors="replace")


class LineWriter:
    """An asyncio stream as the text file ``mcp``'s stdio transport writes."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def relay(socket_path: str) -> int:
    """``wld mcp-bus``: copy stdin to the bus's socket and the socket to stdout, until either side ends."""
    loop = asyncio.get_running_loop()
    try:
        sock_reader, sock_writer = await asyncio.open_unix_connection(socket_path)
    except OSError as exc:
        print(f"wld mcp-bus: cannot reach RunWield's tool bus at {socket_path}: {exc}", file=sys.stderr)
        return 1
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)

    async def upstream() -> None:
        while data := await stdin.read(65536):
            sock_writer.write(data)
            await sock_writer.drain()

    async def downstream() -> None:
        while data := await sock_reader.read(65536):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()

    tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
    sock_writer.close()
    return 0
