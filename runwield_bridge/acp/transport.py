"""JSON-RPC framing that answers malformed input instead of dropping it, and stdio that keeps stdout clean."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from typing import Any

from acp._transport import NdjsonTransport
from acp.stdio import _start_stdin_feeder, _StdoutTransport, _WritePipeProtocol
from acp.task import MessageSender, TaskSupervisor

STREAM_LIMIT = 50 * 1024 * 1024


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def invalid_request_reason(message: Any) -> str | None:
    """Why a parsed JSON value is not a JSON-RPC 2.0 message, or None if it is one."""
    if not isinstance(message, dict):
        return "a message must be a JSON object (batches are not supported)"
    if message.get("jsonrpc") != "2.0":
        return 'a message must have "jsonrpc": "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "params" in message and not isinstance(message["params"], (dict, list, type(None))):
            return '"params" must be an object'
    elif "id" not in message or not ("result" in message or "error" in message):
        return "a message must be a request, a notification or a response"
    if "id" in message and not isinstance(message["id"], (str, int, type(None))):
        return '"id" must be a string, a number or null'
    return None


class CheckedNdjsonTransport(NdjsonTransport):
    """Newline-delimited JSON-RPC that replies -32700 / -32600 to bad lines and keeps serving."""

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                await self.send(_error(None, -32700, "Parse error: the line is not valid JSON"))
                continue
            if reason := invalid_request_reason(message):
                request_id = message.get("id") if isinstance(message, dict) else None
                await self.send(_error(request_id if isinstance(request_id, (str, int)) else None, -32600, f"Invalid request: {reason}"))
                continue
            return message


async def protocol_stdio(supervisor: TaskSupervisor) -> CheckedNdjsonTransport:
    """Bind the protocol to stdin/stdout and point fd 1 at stderr, so stray prints never corrupt the stream."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    if _pollable(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        _start_stdin_feeder(loop, reader)
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    write_protocol = _WritePipeProtocol()
    if _pollable(protocol_out.fileno()):
        transport, _ = await loop.connect_write_pipe(lambda: write_protocol, protocol_out)
    else:
        transport = _FileTransport(protocol_out)
    writer = asyncio.StreamWriter(transport, write_protocol, None, loop)
    return CheckedNdjsonTransport(reader, MessageSender(writer, supervisor))


def _pollable(fd: int) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; files and /dev/null cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _FileTransport(_StdoutTransport):
    """Writes protocol bytes to a file object that is not a pipe."""

    def __init__(self, file: Any) -> None:
        super().__init__()
        self._file = file

    def write(self, data: bytes) -> None:  # type: ignore[override]
        if not self._is_closing:
            self._file.write(data)
