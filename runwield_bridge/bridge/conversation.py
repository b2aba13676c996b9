"""One bound conversation as the Bridge runs it: a state machine with one transition table, owning its follow-up queue.

A conversation is in one ``State`` at a time and moves only by ``Conversation.fire(event)``, along ``TRANSITIONS``.
Three states interrupt another one and go back to it when they end (the table says ``RESUME``): replaying history,
waiting for an answer, holding updates behind a Plan being shown. What a message and what an agent's update do is
read from the state (``bridge.py`` routes messages, ``updates.py`` updates).
"""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from typing import Any, Final, Literal

from ..channels.contract import Channel, ReplyView
from ..channels.types import Conversation as Chat
from ..channels.types import MenuCommand
from .follow_ups import FollowUpQueue
from .replay import Replay

log = logging.getLogger(__name__)


class State(Enum):
    """Where a conversation stands."""

    IDLE = "idle"
    """No turn of this bridge's runs: a message is prompted at once; what the session does on its own is shown aside."""
    REPLAYING = "replaying"
    """``session/load`` replays the session's history: its updates go into the replay, not into a reply."""
    PROMPTING = "prompting"
    """A turn runs: a message is steered into it or queued; updates go into the turn's reply."""
    WAITING_FOR_ANSWER = "waiting_for_answer"
    """The agent asked a question (a permission, a form): the next message answers it."""
    HOLDING_FOR_PLAN = "holding_for_plan"
    """A message of its own (a saved Plan and its steps, a review link) is being shown: updates wait behind it."""
    SETTLING = "settling"
    """The turn is over, its reply finishing, what was queued about to go: a message joins the queue."""


class Event(Enum):
    """What moves a conversation."""

    LOAD = "load"
    """``session/load`` is sent."""
    LOADED = "loaded"
    """``session/load`` answered (or failed)."""
    PROMPT = "prompt"
    """``session/prompt`` is sent."""
    ASK = "ask"
    """The agent asks a question here."""
    ANSWERED = "answered"
    """The conversation's last open question ended."""
    HOLD = "hold"
    """A message of its own starts being shown."""
    RELEASE = "release"
    """It was shown: the updates held behind it follow."""
    TURN_ENDED = "turn_ended"
    """``session/prompt`` answered: the turn ended, was cancelled or failed (its questions end with it)."""
    SETTLED = "settled"
    """Nothing queued is left to send."""


RESUME: Final = "resume"
"""In the table: back to the state the interrupting one (replaying, waiting, holding) interrupted."""
INTERRUPTING = frozenset({State.REPLAYING, State.WAITING_FOR_ANSWER, State.HOLDING_FOR_PLAN})
"""The states that interrupt another and resume it."""
S, E = State, Event
TRANSITIONS: dict[tuple[State, Event], State | Literal["resume"]] = {
    (S.IDLE, E.PROMPT): S.PROMPTING,
    (S.IDLE, E.LOAD): S.REPLAYING,
    (S.IDLE, E.ASK): S.WAITING_FOR_ANSWER,
    (S.IDLE, E.HOLD): S.HOLDING_FOR_PLAN,
    (S.REPLAYING, E.LOADED): RESUME,
    (S.PROMPTING, E.ASK): S.WAITING_FOR_ANSWER,
    (S.PROMPTING, E.HOLD): S.HOLDING_FOR_PLAN,
    (S.PROMPTING, E.TURN_ENDED): S.SETTLING,
    (S.WAITING_FOR_ANSWER, E.ASK): S.WAITING_FOR_ANSWER,
    (S.WAITING_FOR_ANSWER, E.ANSWERED): RESUME,
    (S.WAITING_FOR_ANSWER, E.TURN_ENDED): S.SETTLING,
    (S.HOLDING_FOR_PLAN, E.RELEASE): RESUME,
    (S.SETTLING, E.PROMPT): S.PROMPTING,
    (S.SETTLING, E.LOAD): S.REPLAYING,
    (S.SETTLING, E.ASK): S.WAITING_FOR_ANSWER,
    (S.SETTLING, E.HOLD): S.HOLDING_FOR_PLAN,
    (S.SETTLING, E.SETTLED): S.IDLE,
}
"""Every move a conversation makes; any other (state, event) is refused. A turn starts from idle or settling (the next
queued batch); a question, a Plan shown or a replay interrupts a state and resumes it. Nothing interrupts a replay or a
Plan being shown: a message waits for them, a question is asked after the Plan."""
del S, E


class Conversation:
    """What the Bridge knows about one conversation while it runs: its state, its queue, its session and replies."""

    __slots__ = (  # one per conversation: no __dict__ each, and nothing made before it is needed
        "chat", "channel", "queue", "lock", "state", "base", "restored", "agent", "session_id", "cwd", "model_option",
        "view", "errors_shown", "aside", "replay", "agent_commands", "commands_known", "menu", "offer", "held", "showing",
    )  # fmt: skip

    def __init__(self, chat: Chat, channel: Channel, queue: FollowUpQueue) -> None:
        self.chat = chat
        """The conversation as its channel names it."""
        self.channel = channel
        self.queue = queue
        self.lock = asyncio.Lock()
        """Held while a message (or a channel's request) is handled, so they are handled one at a time, in order."""
        self.state = State.IDLE
        self.base = State.IDLE
        """The state an interrupting one interrupted (else the state itself): idle, prompting or settling."""
        self.restored = False
        self.agent: str | None = None
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.model_option: Any = None
        """The session's model config option (a ``select``), as the agent last described it."""
        self.view: ReplyView | None = None
        """The reply to the turn this bridge started, while it runs."""
        self.errors_shown: tuple[str, ...] = ()
        """The error notices the agent sent during the running turn (so its failure is not said twice)."""
        self.aside: ReplyView | None = None
        """The reply to work the session does without a prompt from here (a review decided, recovery, another client)."""
        self.replay: Replay | None = None
        self.agent_commands: tuple[MenuCommand, ...] = ()
        self.commands_known: asyncio.Event | bool = False
        """True once the agent has said which commands the session offers; an Event while someone waits for that."""
        self.menu: tuple[MenuCommand, ...] = ()
        self.offer: tuple[str, ...] = ()
        """The steps last offered as a numbered list (where there are no buttons): the next message may pick one by number."""
        self.held: list[Any] | None = None
        """Updates that came while holding for a Plan, to be handled after it."""
        self.showing: asyncio.Task[None] | None = None
        """The message of its own being shown while holding."""

    @property
    def running(self) -> bool:
        """Whether the agent is working on a prompt of this bridge's (a question or a Plan shown may interrupt it)."""
        return self.base is State.PROMPTING

    @property
    def busy(self) -> bool:
        """Whether a message now would overtake a turn: one runs, or the last one is settling."""
        return self.base is not State.IDLE

    def fire(self, event: Event) -> bool:
        """Move along the table; False (and an error logged, nothing changed) for a move it does not have."""
        to = TRANSITIONS.get((self.state, event))
        if to is None:
            log.error("conversation %s: %s refused in state %s (no such transition)", self.chat.key, event.value, self.state.value)
            return False
        if to == RESUME:
            to = self.base
        if to not in INTERRUPTING:
            self.base = to
        elif self.state not in INTERRUPTING:
            self.base = self.state
        self.state = to
        return True

    def commands_listed(self) -> None:
        """The agent has said which commands the session offers."""
        if isinstance(self.commands_known, asyncio.Event):
            self.commands_known.set()
        self.commands_known = True

    async def await_commands(self, timeout: float) -> None:
        """Wait until the agent has said which commands the session offers, at most ``timeout`` seconds (TimeoutError)."""
        if self.commands_known is True:
            return
        if self.commands_known is False:
            self.commands_known = asyncio.Event()
        assert isinstance(self.commands_known, asyncio.Event)
        await asyncio.wait_for(self.commands_known.wait(), timeout)
