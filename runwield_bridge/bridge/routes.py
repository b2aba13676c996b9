"""``[[bindings]]``: chats (or threads) routed to an agent and a working directory."""

from __future__ import annotations

from typing import Any

from ..channels.settings import Id, parse_section
from ..config import Strict


class BindingRoute(Strict):
    """A ``[[bindings]]`` entry: a chat (or one thread of it) routed to an agent and a working directory."""

    channel: str
    chat: Id
    thread: Id | None = None
    agent: str | None = None
    cwd: str | None = None

    def matches(self, channel: str, chat: str, thread: str | None) -> bool:
        if (self.channel, str(self.chat)) != (channel, chat):
            return False
        return self.thread is None or str(self.thread) == thread


def parse_routes(raw: list[dict[str, Any]]) -> list[BindingRoute]:
    return [parse_section(BindingRoute, entry, f"bindings[{i}]") for i, entry in enumerate(raw)]
