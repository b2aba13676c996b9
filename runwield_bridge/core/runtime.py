"""The runtime contract: what drives one turn of a Session. The native runtime (a model and our tools,
``runtimes/native.py``) implements it; an external ACP agent driving a Session's turns (``runtimes/acp.py``) too.

The Session Host owns everything around a turn (the writer lock, the transcript, questions, settling);
a runtime only turns a prompt into events. Cancellation is asyncio's: the task running ``run_turn`` is
cancelled, the runtime stops its work (closing its model stream, cancelling the external agent's turn)
and lets ``CancelledError`` propagate; what it produced so far stays in ``request.result``. A turn that
cannot be completed raises ``ModelError`` with words the user can read; the host settles it as an error.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from .background import StartBackground
from .catalog import UnknownChoice
from .events import AgentChoices, Event
from .interactions import Outcome, Question
from .models import ChatMessage, Image
from .records import SessionRecord
from .steering import SteeringInbox
from .tool_gate import Ask, TurnPermit
from .tools import COMMAND_TIMEOUT, Tool

Emit = Callable[[Event], Awaitable[None]]


def new_message_id() -> str:
    return uuid.uuid4().hex


@dataclass
class TurnResult:
    """What a turn has produced besides its events (which the transcript keeps as they happen): its cost, and
    the agent message now being written."""

    cost_usd: float = 0.0
    message_id: str = field(default_factory=new_message_id)
    replied: bool = False  # the agent has said something in this turn
    context_tokens: int | None = None  # the context its model last measured (exactly, as the provider reported it)

    def start_message(self) -> str:
        """Steered input arrived: the agent's next words start a new message. Returns the input's message id."""
        self.message_id = new_message_id()
        return new_message_id()


@dataclass(frozen=True)
class TurnRequest:
    """Everything a runtime gets for one turn.

    ``session`` names the selection (model, reasoning level, Agent) and the cost so far; ``history`` is the
    conversation before ``prompt`` (the whole of it: the runtime assembles its context, ``core/context.py``);
    ``compact`` asks for the context to be compacted now (``/compact``) instead of a turn on ``prompt``; ``tools`` work in ``cwd``; ``emit`` sends the core's typed events
    (message chunks, thoughts, tool progress, usage); ``ask`` puts a question to the user; ``steering``
    holds input the user adds while the turn runs, to be taken before the next model request. ``permit`` decides
    whether a tool may change a file or run a command (asking the user when no rule or grant allows it; None
    refuses every change); ``command_timeout`` bounds a command a tool runs. ``voice``, when set, is shown before each run of the model's words
    to mark them as its own (an execution's Agent, whose claims are not the outcome).
    ``background`` starts a tool's work that outlives the turn (``ToolContext.start_background``).
    """

    session: SessionRecord
    prompt: str
    history: Sequence[ChatMessage]
    tools: Sequence[Tool]
    cwd: Path
    emit: Emit
    ask: Ask
    steering: SteeringInbox
    result: TurnResult
    voice: str = ""
    permit: TurnPermit | None = None
    command_timeout: float = COMMAND_TIMEOUT
    background: StartBackground | None = None
    images: tuple[Image, ...] = ()  # the prompt's images, for a model that sees them
    compact: bool = False


class Runtime(Protocol):
    """Drives turns. Returns the request's ``result`` when the turn is done (the host emits TurnSettled)."""

    async def run_turn(self, request: TurnRequest) -> TurnResult: ...


NATIVE = "native"
EXTERNAL = "acp:"
"""A Session's runtime is ``native`` (its model and RunWield's tools) or ``acp:NAME`` (an ``[agents.NAME]``)."""


OwnChoice = Literal["mode", "model"]


class RuntimeAxis(Protocol):
    """Which runtime drives each Session's turns (kept outside the Session's record), and the own modes and models of
    the external agent that drives it."""

    async def of(self, session_id: str) -> str: ...

    async def choose(self, session_id: str, runtime: str) -> None: ...

    async def own_choices(self, session_id: str) -> AgentChoices | None:
        """The external agent's own modes and models for the Session; None before its session is open (or native)."""

    async def choose_own(self, session_id: str, kind: OwnChoice, value: str) -> list[str]:
        """Put the agent's session in its mode (or model) ``value``; what the person must be told (its self-approval
        warning). UnknownChoice, and nothing changed, for one it does not offer."""


class NativeOnly:
    """Every Session is native (no external agent is configured)."""

    async def of(self, session_id: str) -> str:
        return NATIVE

    async def choose(self, session_id: str, runtime: str) -> None:
        return None

    async def own_choices(self, session_id: str) -> AgentChoices | None:
        return None

    async def choose_own(self, session_id: str, kind: OwnChoice, value: str) -> list[str]:
        raise UnknownChoice(f"this Session's own model drives it: it has no external agent's {kind} {value!r}")
