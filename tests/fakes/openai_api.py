"""A fake OpenAI-compatible chat-completions server that streams scripted replies as SSE."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .base import FakeServer, json_response

SseEvent = tuple[str | None, dict[str, Any] | str]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the fake model makes."""

    id: str
    name: str
    arguments: dict[str, Any]
    namespace: str | None = None
    """The tool's namespace, for a Responses API tool offered in one (Codex offers an MCP server's tools so)."""


@dataclass(frozen=True)
class Reply:
    """One scripted model response: thinking, text pieces, tool calls, and the usage it reports."""

    text: tuple[str, ...] = ()
    thinking: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: tuple[int, int] | None = (10, 5)
    """(input tokens, output tokens); None sends no usage at all."""
    cache: tuple[int, int] = (0, 0)
    """(tokens read from the prompt cache, tokens written to it), besides the input tokens (Anthropic's way)."""
    pause: float = 0.0
    """Seconds to wait before each event, for tests that act mid-stream."""


class ScriptedLLMFake(FakeServer):
    """Base for model API fakes: each request gets the next queued Reply; the key is checked."""

    unauthorized = "invalid API key"
    default_model = "fake-model"

    def __init__(self, api_key: str = "x", model: str | None = None, scripted: Callable[[dict[str, Any]], bool] | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.model = model or self.default_model
        self.replies: deque[Reply] = deque()
        self.scripted = scripted
        """Which requests (by their body) take the queued replies; others (an agent's side requests) get the default."""

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order."""
        self.replies.extend(replies)

    def turn_models(self) -> list[str]:
        """The model each request that takes the queued replies named (an agent's own turns, not its side requests)."""
        return [call["model"] for call in self.calls if self.scripted is None or self.scripted(call.params)]

    def next_reply(self) -> Reply:
        """The next queued reply; an unscripted request gets a short default answer."""
        return self.replies.popleft() if self.replies else Reply(text=("ok",))

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """Check the key, insist on streaming, and stream the next reply."""
        if not self._authorized(request):
            return self._error_response(401, self.unauthorized)
        body = await request.json()
        if not body.get("stream"):
            return self._error_response(400, "this fake only answers stream=true")
        reply = self.next_reply() if self.scripted is None or self.scripted(body) else Reply(text=("ok",))
        return await self.sse(request, self._events(reply), reply.pause)

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.api_key}"

    def _events(self, reply: Reply) -> list[SseEvent]:
        """The SSE events that stream ``reply`` in the platform's format."""
        raise NotImplementedError

    async def sse(self, request: web.Request, events: Iterable[SseEvent], pause: float = 0.0) -> web.StreamResponse:
        """Stream ``events`` as server-sent events, one write per event, ``pause`` seconds apart."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for name, data in events:
            await asyncio.sleep(pause)
            payload = data if isinstance(data, str) else json.dumps(data)
            prefix = f"event: {name}\n" if name else ""
            await response.write(f"{prefix}data: {payload}\n\n".encode())
        await response.write_eof()
        return response

    def _rate_limit_response(self, retry_after: float) -> web.StreamResponse:
        return self._error_response(429, "Rate limit reached")


class OpenAIFake(ScriptedLLMFake):
    """Fake ``POST /v1/chat/completions`` (stream=true only); use ``base_url=fake.base_url``."""

    unauthorized = "Incorrect API key provided"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.answer, name="chat.completions")

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        return json_response({"error": {"message": message, "type": "invalid_request_error", "code": None}}, status)

    def _events(self, reply: Reply) -> list[SseEvent]:
        chunks = [self._chunk({"role": "assistant", "content": ""})]
        chunks += [self._chunk({"reasoning_content": piece}) for piece in reply.thinking]
        chunks += [self._chunk({"content": piece}) for piece in reply.text]
        for index, call in enumerate(reply.tool_calls):
            head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            chunks.append(self._chunk({"tool_calls": [head]}))
            arguments = json.dumps(call.arguments)
            for half in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                chunks.append(self._chunk({"tool_calls": [{"index": index, "function": {"arguments": half}}]}))
        chunks.append(self._chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if reply.usage is not None:
            prompt, completion = reply.usage
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            chunks.append((None, {**self._envelope(), "choices": [], "usage": usage}))
        chunks.append((None, "[DONE]"))
        return chunks

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> SseEvent:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return None, {**self._envelope(), "choices": [choice]}

    def _envelope(self) -> dict[str, Any]:
        chunk_id = f"chatcmpl-{len(self.calls)}"
        return {"id": chunk_id, "object": "chat.completion.chunk", "created": 1, "model": self.model}
