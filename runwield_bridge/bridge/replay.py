"""The history an agent replays on ``session/load``: shown in full where the channel keeps it, else counted for a summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..channels.contract import ReplyView


@dataclass
class Replay:
    """History an agent replays on ``session/load``: shown in full, or counted for a summary."""

    view: ReplyView | None = None
    user_messages: int = 0
    agent_messages: int = 0
    last_reply: str = ""
    _last_kind: str = ""

    def add(self, update: Any) -> None:
        if self.view is not None:
            self.view.update(update)
        kind = getattr(update, "session_update", "")
        text = getattr(getattr(update, "content", None), "text", "")
        if kind == "user_message_chunk" and self._last_kind != kind:
            self.user_messages += 1
        elif kind == "agent_message_chunk":
            if self._last_kind != kind:
                self.agent_messages += 1
                self.last_reply = ""
            self.last_reply += text
        self._last_kind = kind

    def summary(self, session_id: str, agent: str) -> str:
        count = self.user_messages + self.agent_messages
        text = f"↩️ Resumed session {session_id} on {agent} ({count} earlier message{'s' if count != 1 else ''})."
        if self.last_reply.strip():
            text += f"\nLast reply: {_excerpt(self.last_reply.strip(), 300)}"
        return text


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
