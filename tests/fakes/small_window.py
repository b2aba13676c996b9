"""A fake OpenAI-compatible server whose model has a small context window, as a long Session meets it."""

from __future__ import annotations

import json
import math

from aiohttp import web

from .openai_api import OpenAIFake, Reply

SUMMARY_HEADINGS = "Goal, Progress, Decisions, Files"
"""What a request asking for a compaction's summary names (RunWield's summary instructions do)."""


class SmallWindowFake(OpenAIFake):
    """Its model takes ``window`` tokens (a token being four bytes of the request body) and refuses a longer request
    as OpenAI does; it writes a numbered summary when asked for one, else answers briefly. ``bodies`` are the requests
    it answered, as sent."""

    def __init__(self, window: int) -> None:
        super().__init__(model="small")
        self.window = window
        self.bodies: list[bytes] = []
        self.refused = 0

    async def answer(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        size = tokens(body)
        if size > self.window:
            self.refused += 1
            return self._error_response(400, f"This model's maximum context length is {self.window} tokens, your messages resulted in {size}")
        self.bodies.append(body)
        if is_summary_request(body):
            number = sum(map(is_summary_request, self.bodies))
            summary = f"Goal: keep notes. Progress: summary {number}. Decisions: none. Files: none. Next steps: more."
            self.queue(Reply(text=(summary,), usage=(size, 30)))
        else:
            self.queue(Reply(text=("noted",), usage=(size, 2)))
        return await super().answer(request)


def tokens(body: bytes) -> int:
    """A request's tokens as this fake's model counts them."""
    return math.ceil(len(body) / 4)


def is_summary_request(body: bytes) -> bool:
    first = json.loads(body)["messages"][0]
    return first["role"] == "system" and SUMMARY_HEADINGS in first["content"]
