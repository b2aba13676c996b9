"""A fake Anthropic Messages API that streams scripted replies as SSE."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from .base import json_response
from .openai_api import Reply, ScriptedLLMFake, SseEvent


class AnthropicFake(ScriptedLLMFake):
    """Fake ``POST /v1/messages`` (stream=true only); use ``base_url=fake.url``."""

    unauthorized = "invalid x-api-key"
    default_model = "claude-haiku-4-5"

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self.answer, name="messages")

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "invalid_request_error")
        return json_response({"type": "error", "error": {"type": kind, "message": message}}, status)

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key in (request.headers.get("x-api-key"), request.headers.get("Authorization", "")[7:])

    def _events(self, reply: Reply) -> list[SseEvent]:
        prompt, completion = reply.usage or (0, 0)
        message = {
            "id": f"msg_{len(self.calls)}", "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1, "cache_read_input_tokens": reply.cache[0],
                      "cache_creation_input_tokens": reply.cache[1]},
        }  # fmt: skip
        events = [_event("message_start", message=message)]
        for index, (block, deltas) in enumerate(_blocks(reply)):
            events.append(_event("content_block_start", index=index, content_block=block))
            events += [_event("content_block_delta", index=index, delta=delta) for delta in deltas]
            events.append(_event("content_block_stop", index=index))
        stop = "tool_use" if reply.tool_calls else "end_turn"
        events.append(_event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": completion}))
        return [*events, _event("message_stop")]


def _event(kind: str, **fields: Any) -> SseEvent:
    return kind, {"type": kind, **fields}


def _blocks(reply: Reply) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Content blocks (start, deltas): thinking, then text, then one per tool call."""
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.thinking:
        thinking = [{"type": "thinking_delta", "thinking": piece} for piece in reply.thinking]
        signed = [*thinking, {"type": "signature_delta", "signature": "sig"}]
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, signed))
    if reply.text:
        blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": piece} for piece in reply.text]))
    for call in reply.tool_calls:
        start = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        blocks.append((start, [{"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}]))
    return blocks
