"""What the Bridge knows about each conversation while it runs: its phase (one transition table), its follow-up queue,
and the history a resumed session replays."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..channels.contract import Channel, ReplyView
from ..channels.types import Conversation, MenuCommand
from .follow_ups import FollowUpQueue


class Phase(Enum):
    """Where a conversation's turns stand."""

    IDLE = "idle"
    """No turn of this bridge's runs: a message is prompted at once."""
    PROMPTING = "prompting"
    """A turn runs: a message is steered into it or queued (a question it asks still takes the next message)."""
    SETTLING = "settling"
    """The turn is over; its reply is finishing and what was queued meanwhile is about to go: a message joins the queue."""


TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.PROMPTING}),
    Phase.PROMPTING: frozenset({Phase.SETTLING}),
    Phase.SETTLING: frozenset({Phase.IDLE, Phase.PROMPTING}),
}
"""The only moves a conversation makes: a turn starts from idle, or from settling (the next queued batch)."""


class PhaseError(RuntimeError):
    """A move the transition table does not have: a bug, never a person's doing."""


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


@dataclass(eq=False)
class ConversationState:
    """What the Bridge knows about one conversation while it runs."""

    conversation: Conversation
    channel: Channel
    queue: FollowUpQueue
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    phase: Phase = Phase.IDLE
    restored: bool = False
    agent: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    model_option: Any = None
    """The session's model config option (a ``select``), as the agent last described it."""
    view: ReplyView | None = None
    """The reply to the turn this bridge started, while it runs."""
    errors_shown: list[str] = field(default_factory=list)
    """The error notices the agent sent during the running turn (so its failure is not said twice)."""
    aside: ReplyView | None = None
    """The reply to work the session does without a prompt from here (a review decided, recovery, another client)."""
    replay: Replay | None = None
    agent_commands: tuple[MenuCommand, ...] = ()
    commands_known: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the agent has said which commands the session offers."""
    menu: tuple[MenuCommand, ...] = ()
    offer: tuple[str, ...] = ()
    """The steps last offered as a numbered list (where there are no buttons): the next message may pick one by number."""
    held: list[Any] | None = None
    """Updates that came while a message of its own (a saved Plan) was being shown, to be shown after it."""
    showing: asyncio.Task[None] | None = None
    """The message of its own being shown, if any."""

    @property
    def running(self) -> bool:
        """Whether the agent is working on a prompt (the reply may still be rendering after it is done)."""
        return self.phase is Phase.PROMPTING

    @property
    def busy(self) -> bool:
        """Whether a message now would overtake a turn: one runs, or the last one is settling."""
        return self.phase is not Phase.IDLE

    def move(self, to: Phase) -> None:
        if to not in TRANSITIONS[self.phase]:
            raise PhaseError(f"{self.conversation.key}: no move from {self.phase.value} to {to.value}")
        self.phase = to


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
