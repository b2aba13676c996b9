"""JSON-RPC framing that answers malformed input instead of dropping it, and stdio that keeps stdout clean."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

from .sdk_gaps import LineTransport, output_sink, stdin_reader

STREAM_LIMIT = 50 * 1024 * 1024
MAX_DEPTH = 64  # arrays and objects nested deeper than this are refused: no ACP message needs more
INT64 = range(-(2**63), 2**63)


class ParseError(ValueError):
    """A line that is not JSON we accept."""


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def parse_json(text: str | bytes) -> Any:
    """A JSON value from a client: UTF-8, finite numbers only, nested at most MAX_DEPTH deep (ParseError otherwise)."""
    try:
        text = text.decode("utf-8") if isinstance(text, bytes) else text  # strictly: json.loads would let surrogates pass
    except UnicodeDecodeError as exc:
        raise ParseError(f"the line is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ParseError(f"the JSON is nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise ParseError(str(exc) if isinstance(exc, ParseError) else "the line is not valid JSON") from None
    if _depth_exceeds(value, MAX_DEPTH):
        raise ParseError(f"the JSON is nested more than {MAX_DEPTH} levels deep")
    return value


def _no_constant(name: str) -> Any:
    raise ParseError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ParseError(f"{text} is too large for a number")
    return number


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` (without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def has_invalid_text(value: Any) -> bool:
    """Whether any string or key in ``value`` is not valid Unicode (a lone surrogate such as ``"\\ud800"``)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not _is_text(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _is_text(string: str) -> bool:
    try:
        string.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_request_id(value: Any) -> bool:
    """A JSON-RPC id as ACP types it: a string, a 64-bit integer (no bool, no fraction) or null."""
    if isinstance(value, str):
        return _is_text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value in INT64
    return value is None


def invalid_request_reason(message: Any) -> str | None:
    """Why a parsed JSON value is not a JSON-RPC 2.0 message, or None if it is one."""
    if not isinstance(message, dict):
        return "a message must be a JSON object (batches are not supported)"
    if message.get("jsonrpc") != "2.0":
        return 'a message must have "jsonrpc": "2.0"'
    if "id" in message and not is_request_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str) or not _is_text(message["method"]):
            return '"method" must be a string of valid Unicode'
        if "result" in message or "error" in message:
            return 'a request or notification (it has "method") must not carry "result" or "error"'
        if "params" in message and not isinstance(message["params"], (dict, list, type(None))):
            return '"params" must be an object'
        return None
    if "result" not in message and "error" not in message:
        return 'a message must have "method" (a request or notification) or "result" or "error" (a response)'
    if "result" in message and "error" in message:
        return 'a response carries "result" or "error", not both'
    if "id" not in message:
        return 'a response must have the "id" of the request it answers'
    if "error" in message and not _is_error(message["error"]):
        return '"error" must be an object with an integer "code" and a string "message"'
    return None


def _is_error(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error["code"], bool)
        and isinstance(error.get("message"), str)
    )


def _answerable_id(message: Any) -> Any:
    """The id to answer an invalid message with: a request's own id when it is valid, else null."""
    if isinstance(message, dict) and "method" in message and is_request_id(message.get("id")):
        return message.get("id")
    return None


def checked_message(raw: str | bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A client's raw message (a line, a WebSocket frame): ``(message, None)`` when it is a JSON-RPC message we
    accept, else ``(None, the -32700 / -32600 error to answer with)``."""
    try:
        message = parse_json(raw)
    except ParseError as exc:
        return None, parse_error(str(exc))
    if reason := invalid_request_reason(message):
        return None, _error(_answerable_id(message), -32600, f"Invalid request: {reason}")
    return message, None


def parse_error(detail: str) -> dict[str, Any]:
    """The -32700 answer to input that holds no message."""
    return _error(None, -32700, f"Parse error: {detail}")


class CheckedNdjsonTransport(LineTransport):
    """Newline-delimited JSON-RPC that replies -32700 / -32600 to bad lines and keeps serving."""

    async def parse(self, line: bytes) -> dict[str, Any] | None:
        message, error = checked_message(line)
        if error is not None:
            await self.send(error)
        return message


async def protocol_stdio() -> CheckedNdjsonTransport:
    """Bind the protocol to stdin/stdout and point fd 1 at stderr, so stray prints never corrupt the stream."""
    reader = await stdin_reader(STREAM_LIMIT)
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return CheckedNdjsonTransport(reader, await output_sink(protocol_out))
