"""A fake Gemini API (``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse``) that streams scripted replies."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .base import json_response
from .openai_api import Reply, ScriptedLLMFake, SseEvent


class GeminiFake(ScriptedLLMFake):
    """Fake Gemini ``streamGenerateContent`` (the key in ``x-goog-api-key``); use ``base_url=fake.url``."""

    unauthorized = "API key not valid. Please pass a valid API key."
    default_model = "gemini-2.5-flash"

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1beta/models/{model}:streamGenerateContent", self.answer, name="streamGenerateContent")

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """Gemini streams by its path (``alt=sse``), not by a ``stream`` field."""
        if not self._authorized(request):
            return self._error_response(401, self.unauthorized)
        body = await request.json()
        reply = self.next_reply() if self.scripted is None or self.scripted(body) else Reply(text=("ok",))
        return await self.sse(request, self._events(reply), reply.pause)

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key in (request.headers.get("x-goog-api-key"), request.query.get("key"))

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        return json_response({"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}, status)

    def _events(self, reply: Reply) -> list[SseEvent]:
        parts: list[dict[str, Any]] = [{"text": piece, "thought": True} for piece in reply.thinking]
        parts += [{"text": piece} for piece in reply.text]
        parts += [{"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}} for call in reply.tool_calls]
        chunks = [self._chunk([part]) for part in parts] or [self._chunk([{"text": ""}])]
        prompt, completion = reply.usage or (0, 0)
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": prompt + completion}
        last = self._chunk([], "STOP")
        last[1]["usageMetadata"] = usage  # type: ignore[index]
        return [*chunks, last]

    def _chunk(self, parts: list[dict[str, Any]], finish: str | None = None) -> SseEvent:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return None, {"candidates": [candidate], "modelVersion": self.model}
