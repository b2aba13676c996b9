"""A fake OpenAI Responses API (``POST /v1/responses``, stream=true) that streams scripted replies as SSE."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from .openai_api import OpenAIFake, Reply, SseEvent


class OpenAIResponsesFake(OpenAIFake):
    """Fake ``POST /v1/responses`` (what Codex calls); use ``base_url=fake.base_url``; requests are recorded."""

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/responses", self.answer, name="responses")

    def _events(self, reply: Reply) -> list[SseEvent]:
        response_id = f"resp_{len(self.calls)}"
        envelope = {"id": response_id, "object": "response", "created_at": 1, "model": self.model}
        events: list[SseEvent] = [_event("response.created", response={**envelope, "status": "in_progress", "output": []})]
        items = _items(reply, response_id)
        for index, (item, deltas) in enumerate(items):
            events.append(_event("response.output_item.added", output_index=index, item=_opened(item)))
            events += [_delta(index, item, piece) for piece in deltas]
            events.append(_event("response.output_item.done", output_index=index, item=item))
        done = {**envelope, "status": "completed", "output": [item for item, _ in items]}
        if reply.usage is not None:
            prompt, completion = reply.usage
            done["usage"] = {
                "input_tokens": prompt, "input_tokens_details": {"cached_tokens": reply.cache[0]},
                "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            }  # fmt: skip
        events.append(_event("response.completed", response=done))
        return events


def _event(kind: str, **fields: Any) -> SseEvent:
    return kind, {"type": kind, **fields}


def _items(reply: Reply, response_id: str) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """Output items (whole, as ``output_item.done`` carries them) and their streamed pieces: text, then tool calls."""
    items: list[tuple[dict[str, Any], tuple[str, ...]]] = []
    if reply.thinking:
        summary = [{"type": "summary_text", "text": "".join(reply.thinking)}]
        items.append(({"type": "reasoning", "id": f"rs_{response_id}", "summary": summary}, reply.thinking))
    if reply.text:
        content = [{"type": "output_text", "text": "".join(reply.text), "annotations": []}]
        message = {"type": "message", "id": f"msg_{response_id}", "role": "assistant", "status": "completed", "content": content}
        items.append((message, reply.text))
    for call in reply.tool_calls:
        arguments = json.dumps(call.arguments)
        item = {"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": call.name,
                "arguments": arguments, "status": "completed"}  # fmt: skip
        if call.namespace:
            item["namespace"] = call.namespace
        items.append((item, (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :])))
    return items


def _opened(item: dict[str, Any]) -> dict[str, Any]:
    """The item as ``output_item.added`` announces it: nothing streamed yet."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return {**item, "summary": []}


def _delta(index: int, item: dict[str, Any], piece: str) -> SseEvent:
    if item["type"] == "message":
        return _event("response.output_text.delta", output_index=index, item_id=item["id"], content_index=0, delta=piece)
    if item["type"] == "function_call":
        return _event("response.function_call_arguments.delta", output_index=index, item_id=item["id"], delta=piece)
    return _event("response.reasoning_summary_text.delta", output_index=index, item_id=item["id"], summary_index=0, delta=piece)
