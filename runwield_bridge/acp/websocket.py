"""ACP over a WebSocket: one text frame is one JSON-RPC message, checked exactly as a line on stdio is."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import WSMsgType, web

from .transport import STREAM_LIMIT, checked_message, parse_error

MAX_FRAME = STREAM_LIMIT
"""The largest frame accepted (the same bound as a line on stdio); a larger one closes the connection (1009)."""


class WebSocketTransport:
    """The ``acp.connection.Connection`` transport on an aiohttp WebSocket: bad frames are answered
    -32700 / -32600 and the connection keeps serving; a binary frame is a parse error."""

    def __init__(self, socket: web.WebSocketResponse) -> None:
        self.socket = socket

    async def send(self, message: dict[str, Any]) -> None:
        if self.socket.closed:
            raise ConnectionError("WebSocket closed")
        await self.socket.send_str(json.dumps(message, separators=(",", ":")))

    async def receive(self) -> dict[str, Any] | None:
        async for frame in self.socket:
            if frame.type is WSMsgType.TEXT:
                message, error = checked_message(frame.data)
            elif frame.type is WSMsgType.BINARY:
                message, error = None, parse_error("a message is one text frame of JSON, not a binary frame")
            else:
                break
            if error is not None:
                await self.send(error)
            elif message is not None:
                return message
        return None

    async def close(self) -> None:
        """Nothing to do: the web handler that opened the socket closes it."""
