"""`wld chat`: a terminal chat that is an ACP client of the in-process Session Host."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from typing import Any, TextIO

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)

from ..acp.serve import in_memory_agent
from ..core.sessions import SessionHost

EXIT_WORDS = {"/quit", "/exit"}


class ConsoleClient:
    """Renders session updates on a terminal and asks the person for permissions."""

    def __init__(self, lines: asyncio.Queue[str | None], out: TextIO = sys.stdout) -> None:
        self.lines = lines
        self.out = out
        self.replaying = False
        self._at_line_start = True

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        if text:
            self._at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self._at_line_start:
            self.write("\n")

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if isinstance(update, UserMessageChunk):
            self.newline()
            self.write(f"you> {getattr(update.content, 'text', '')}\n")
        elif isinstance(update, AgentMessageChunk):
            self.write(getattr(update.content, "text", ""))
        elif isinstance(update, AgentThoughtChunk):
            self.newline()
            self.write(f"  (thinking: {getattr(update.content, 'text', '')})\n")
        elif isinstance(update, ToolCallStart):
            self.newline()
            self.write(f"  ⚙ {update.title} …\n")
        elif isinstance(update, ToolCallProgress) and update.status in ("completed", "failed"):
            self.newline()
            self.write(f"  ⚙ {update.tool_call_id} {update.status}\n")
        elif isinstance(update, UsageUpdate):
            cost = f" · ${update.cost.amount:.6f}" if update.cost else ""
            self.newline()
            self.write(f"  [{update.used}/{update.size} tokens{cost}]\n")

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        self.newline()
        self.write(f"Permission requested: {tool_call.title or tool_call.tool_call_id}\n")
        for number, option in enumerate(options, 1):
            self.write(f"  {number}. {option.name}\n")
        self.write("Reply with a number (anything else declines): ")
        line = await self.lines.get()
        choice = line.strip() if line else ""
        if choice.isdigit() and 1 <= int(choice) <= len(options):
            return RequestPermissionResponse.model_validate(
                {"outcome": {"outcome": "selected", "optionId": options[int(choice) - 1].option_id}}
            )
        return RequestPermissionResponse.model_validate({"outcome": {"outcome": "cancelled"}})


def _start_line_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    """Read stdin lines on a daemon thread so Ctrl-C and streaming never wait on input()."""

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="wld-chat-stdin", daemon=True).start()


async def run_chat(host: SessionHost, session_id: str | None = None, cwd: str | None = None) -> int:
    """Chat until end of input or /quit; Ctrl-C cancels the running turn and the chat goes on."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    client = ConsoleClient(lines)
    async with in_memory_agent(host) as transport:
        conn = connect_to_agent(client, transport)
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="wld-chat", version="1"),
        )
        project = os.path.abspath(cwd or os.getcwd())
        try:
            if session_id:
                await conn.load_session(cwd=project, session_id=session_id, mcp_servers=[])
            else:
                session_id = (await conn.new_session(cwd=project, mcp_servers=[])).session_id
        except RequestError as exc:
            print(f"wld chat: {exc} ({(exc.data or {}).get('sessionId', '')})", file=sys.stderr)
            return 1
        client.newline()
        client.write(f"Session {session_id} · Ctrl-C cancels a turn · /quit or Ctrl-D leaves\n")
        _start_line_reader(loop, lines)
        while True:
            client.write("you> ")
            line = await lines.get()
            if line is None or line.strip() in EXIT_WORDS:
                client.newline()
                return 0
            if not line.strip():
                continue
            await _turn(conn, session_id, line.rstrip("\n"), client, loop)


async def _turn(conn: Any, session_id: str, text: str, client: ConsoleClient, loop: asyncio.AbstractEventLoop) -> None:
    cancel = lambda: asyncio.ensure_future(conn.cancel(session_id=session_id))  # noqa: E731
    loop.add_signal_handler(signal.SIGINT, cancel)
    try:
        response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
        client.newline()
        if response.stop_reason != "end_turn":
            client.write(f"  [{response.stop_reason}]\n")
    except RequestError as exc:
        client.newline()
        details = (exc.data or {}).get("details") if isinstance(exc.data, dict) else None
        client.write(f"  [error: {exc}{': ' + str(details) if details else ''}]\n")
    finally:
        loop.remove_signal_handler(signal.SIGINT)
