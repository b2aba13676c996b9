"""Child Sessions in a chat: each one-shot child the conversation's session started is one line, sent when it starts
and edited as it ends (``🧵 codex: fixing tests … done``), and listed by ``/status``."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from ..acp.extensions import ChildMeta
from ..channels.background import Background
from ..channels.contract import Channel
from ..channels.types import Conversation, MessageRef
from .delivery import deliver

log = logging.getLogger(__name__)
ENDING = {"running": "…", "done": "… done", "failed": "… failed", "cancelled": "… cancelled"}


def child_line(child: ChildMeta) -> str:
    return f"🧵 {child.agent}: {child.task} {ENDING[child.state]}"


@dataclass
class ChildLine:
    """One child's line in one conversation: what it says now and the message showing it (once sent)."""

    child: ChildMeta
    message: MessageRef | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ChildLines:
    """The children each conversation's sessions started, as lines that are edited in place."""

    def __init__(self, background: Background) -> None:
        self.background = background
        self._lines: dict[tuple[str, str], dict[str, ChildLine]] = {}  # by conversation and parent session

    def show(self, channel: Channel, conversation: Conversation, parent: str, child: ChildMeta) -> None:
        """A child's progress update: send its line (the first time) or edit it, in the order the updates came."""
        lines = self._lines.setdefault((conversation.key, parent), {})
        line = lines.get(child.session_id)
        if line is None:
            line = lines[child.session_id] = ChildLine(child)
        line.child = child
        self.background.spawn(self._render(channel, conversation, line, child_line(child)), f"child:{child.session_id}")

    async def _render(self, channel: Channel, conversation: Conversation, line: ChildLine, text: str) -> None:
        async with line.lock:
            try:
                if line.message is None:
                    line.message = await deliver(channel, conversation, text)
                else:
                    await channel.edit(line.message, text)
            except Exception as exc:
                log.warning("could not show a child session's line in %s: %s", conversation.key, exc)

    def running(self, conversation: Conversation, parent: str | None) -> bool:
        """Whether a child of the conversation's session is still running (``/cancel`` then has something to stop)."""
        lines = self._lines.get((conversation.key, parent or ""), {})
        return any(line.child.state == "running" for line in lines.values())

    def status(self, conversation: Conversation, parent: str | None) -> str | None:
        """The ``/status`` line naming the children of the conversation's session (id, agent, state), if it has any."""
        lines = self._lines.get((conversation.key, parent or ""))
        if not lines:
            return None
        return "Children: " + ", ".join(f"{line.child.session_id} ({line.child.agent}, {line.child.state})" for line in lines.values())
