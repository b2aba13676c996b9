"""A turn's reply in a chat: a placeholder edited as output arrives, split into more messages as it grows.

Edits go out at most once per ``edit_interval`` per message and within the chat's budget; when the
platform says 429 the chat pauses for ``retry_after`` and the next edit carries everything that
arrived meanwhile, so no text is lost. Tool calls are one compact line each; thinking is shown as
the platform's typing indicator, never as text.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..acp.extensions import ARTIFACT_REVIEW, PLAN_LINK
from .budget import ChatBudget, Clock
from .chunking import split_message
from .contract import Channel
from .types import Button, Conversation, MessageRef, RateLimited
from .unfinished import Keeper

log = logging.getLogger(__name__)

CURSOR = " …"
TYPING_EVERY = 4.0
MAX_FAILURES = 3
TOOL_MARK = {"completed": "✅", "failed": "❌"}
STOP_TEXT = {
    "cancelled": "⏹ Cancelled.",
    "max_tokens": "⚠️ Stopped: the agent reached its token limit.",
    "max_turn_requests": "⚠️ Stopped: the agent reached its limit of model requests for one turn.",
    "refusal": "⚠️ The agent refused to continue.",
}
SHOWN = ("agent_message_chunk", "tool_call", "tool_call_update")
"""The updates a reply shows as text (thoughts only show as typing)."""


def link_of(update: Any) -> tuple[str, str] | None:
    """A link the agent marked for a button (RunWield's Plan or Artifact Review link): its URL and label."""
    link = PLAN_LINK.read(update) or ARTIFACT_REVIEW.read(update)
    return (link.url, link.label) if link is not None else None


@dataclass
class _Tool:
    title: str
    status: str


@dataclass
class ReplyDocument:
    """What the reply says so far: text and tool lines in the order they came."""

    parts: list[str | _Tool] = field(default_factory=list)
    tools: dict[str, _Tool] = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)
    footer: str = ""

    def add_text(self, text: str) -> None:
        if self.parts and isinstance(self.parts[-1], str):
            self.parts[-1] += text
        else:
            self.parts.append(text)

    def tool(self, call_id: str, title: str | None, status: str | None) -> None:
        tool = self.tools.get(call_id)
        if tool is None:
            tool = self.tools[call_id] = _Tool(title or call_id, status or "pending")
            self.parts.append(tool)
            return
        tool.title = title or tool.title
        tool.status = status or tool.status

    def render(self) -> str:
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            if out and not out[-1].endswith("\n"):
                out.append("\n")
            mark = TOOL_MARK.get(part.status)
            out.append(f"{mark} {part.title}\n" if mark else f"⚙️ {part.title}{CURSOR}\n")
        body = "".join(out).strip()
        return f"{body}\n\n{self.footer}".strip() if self.footer else body


class StreamingReply:
    """The ReplyView for chat platforms that can edit messages (and, degraded, for those that cannot)."""

    def __init__(self, channel: Channel, conversation: Conversation, budget: ChatBudget, edit_interval: float, clock: Clock = time.monotonic) -> None:
        self.channel = channel
        self.conversation = conversation
        self.budget = budget
        self.edit_interval = edit_interval
        self.clock = clock
        self.document = ReplyDocument()
        self.sent: list[tuple[MessageRef, str, tuple[Button, ...]]] = []
        self._edited_at: list[float] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._final = False
        self._typing_due = 0.0
        self._want_typing = False
        self._failures = 0
        self._titles: dict[str, str] = {}
        self._held: list[Any] | None = None  # updates that arrive while pausing, for the next message
        self._paused = False
        self.keeper: Keeper | None = None
        """Notes the message still streaming, so a bridge starting after a crash can end it (set by the Bridge)."""

    def update(self, update: Any) -> None:
        if self._held is not None:
            self._held.append(update)
            return
        kind = getattr(update, "session_update", None)
        if kind == "agent_message_chunk":
            self.document.add_text(getattr(update.content, "text", ""))
        elif kind in ("tool_call", "tool_call_update"):
            title = self._titles[update.tool_call_id] = update.title or self._titles.get(update.tool_call_id) or update.tool_call_id
            self.document.tool(update.tool_call_id, title, update.status)
        elif kind == "agent_thought_chunk":
            self._want_typing = True
        else:
            return
        if (link := link_of(update)) and link not in self.document.links:
            self.document.links.append(link)
        self._poke()

    async def pause(self) -> None:
        """Deliver what arrived so far as final; what comes next starts a new message below (a question was asked)."""
        if self._task is None:
            return
        self._held, self._final = [], True
        self._poke()
        try:
            await self._task
        finally:
            held, self._held = self._held, None
            self._paused, self._final, self._task = self._paused or bool(self.sent), False, None
            self.document, self.sent, self._edited_at = ReplyDocument(), [], []
            for update in held:
                self.update(update)

    async def finish(self, stop_reason: str | None = None, error: str | None = None) -> None:
        footer = f"❌ {error}" if error else STOP_TEXT.get(stop_reason or "end_turn", "")
        if not footer and not self.document.render() and not self._paused:
            footer = "(The agent ended its turn without a reply.)"
        self.document.footer = footer
        self._final = True
        self._poke()
        assert self._task is not None
        await self._task

    def _poke(self) -> None:
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"reply:{self.conversation.key}")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._typing()
            try:
                settled = await self._sync()
            except Exception as exc:
                settled = self._failed(exc)
            if self._final and settled:
                if self.keeper is not None:
                    for ref, _, _ in self.sent:
                        await self.keeper.done(ref)
                return

    async def _typing(self) -> None:
        if self._want_typing and not self._final and self.clock() >= self._typing_due:
            self._want_typing = False
            self._typing_due = self.clock() + TYPING_EVERY
            try:
                await self.channel.typing(self.conversation)
            except Exception as exc:
                log.debug("typing indicator failed in %s: %s", self.conversation.key, exc)

    def _pieces(self) -> list[tuple[str, tuple[Button, ...]]]:
        text = self.document.render()
        if not text:
            return []
        capabilities = self.channel.capabilities
        streaming = not self._final and not text.endswith(CURSOR)  # a running tool's line already ends in the cursor
        pieces = split_message(text + CURSOR if streaming else text, capabilities.max_message_length, capabilities.weight)
        buttons: tuple[Button, ...] = ()
        if self._final and capabilities.url_buttons:
            buttons = tuple(Button(title, url=url) for url, title in self.document.links)
        return [(piece, buttons if i == len(pieces) - 1 else ()) for i, piece in enumerate(pieces)]

    async def _sync(self) -> bool:
        """Bring the sent messages up to date, one send or edit at a time; True once nothing is left."""
        while True:
            work = self._next_change()
            if work is None:
                return True
            index, text, buttons = work
            wait = max(self.budget.delay(), self._interval_left(index))
            if wait > 0:
                if not self._final:
                    self._wake.set()  # try again later; newer text may arrive meanwhile
                    await asyncio.sleep(wait)
                    return False
                await asyncio.sleep(wait)
                continue
            self.budget.take()
            try:
                await self._apply(index, text, buttons)
            except RateLimited as exc:
                self.budget.pause(exc.retry_after)
                continue
            self._failures = 0

    def _next_change(self) -> tuple[int, str, tuple[Button, ...]] | None:
        """The first message that differs from what it should say; without edits, only final text is sent."""
        edits = self.channel.capabilities.edits
        if not edits and not self._final:
            return None
        for index, (text, buttons) in enumerate(self._pieces()):
            if index >= len(self.sent) or (edits and self.sent[index][1:] != (text, buttons)):
                return index, text, buttons
        return None

    def _interval_left(self, index: int) -> float:
        if index >= len(self._edited_at):
            return 0.0
        return self._edited_at[index] + self.edit_interval - self.clock()

    async def _apply(self, index: int, text: str, buttons: tuple[Button, ...]) -> None:
        if index < len(self.sent):
            ref = self.sent[index][0]
            await self.channel.edit(ref, text, buttons)
            self.sent[index] = (ref, text, buttons)
            self._edited_at[index] = self.clock()
        else:
            ref = await self.channel.send(self.conversation, text, buttons)
            self.sent.append((ref, text, buttons))
            self._edited_at.append(self.clock())
        if self.keeper is not None and not self._final:  # only the piece still streaming ends in the cursor
            await (self.keeper.kept(ref, text.removesuffix(CURSOR)) if text.endswith(CURSOR) else self.keeper.done(ref))

    def _failed(self, exc: Exception) -> bool:
        """Count a failed send or edit; after a few in a row the reply stops trying (True: give up)."""
        self._failures += 1
        log.warning("reply in %s: %s: %s (failure %d)", self.conversation.key, type(exc).__name__, exc, self._failures)
        if self._failures >= MAX_FAILURES:
            return True
        self._wake.set()
        return False
