"""Typed events a Session emits; the ACP server maps them, nothing else invents them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Union

from .interactions import Question

StopReason = Literal["end_turn", "cancelled", "max_tokens", "refusal", "error"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user's prompt text, emitted when history is replayed."""

    text: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageChunk:
    """A piece of the agent's reply; ``aside`` for a command's output, which is shown and kept but is not part of
    the model's conversation."""

    text: str
    message_id: str | None = None
    aside: bool = False


@dataclass(frozen=True, slots=True)
class Thought:
    """A piece of the model's reasoning."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A tool call starting (first event for its id) or changing status."""

    call_id: str
    title: str
    kind: str = "other"
    status: ToolStatus = "pending"
    raw_input: dict[str, Any] | None = None
    output: str | None = None
    started: bool = False


ChildState = Literal["running", "done", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class ChildProgress:
    """A one-shot child Session this Session started: its agent, its task and how far it is (one line, edited)."""

    child_id: str
    agent: str
    task: str
    state: ChildState = "running"


SpawnPlace = Literal["here", "thread"]


@dataclass(frozen=True, slots=True)
class SessionSpawned:
    """A Session that this one's /spawn started (or continued) on an agent, a message of its own that names it:
    ``place`` says whether the client should open it (``here``) or list it beside this one (``thread``)."""

    text: str
    session_id: str
    agent: str
    task: str
    place: SpawnPlace
    cwd: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Context usage as measured by the runtime, and the Session's cumulative cost."""

    used: int
    size: int
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not part of the reply."""

    text: str
    level: Literal["info", "success", "warning", "error"] = "info"


@dataclass(frozen=True, slots=True)
class AgentChoices:
    """The external agent's own modes and models for a Session (``(id, name)`` each), once its session is open."""

    agent: str
    mode: str | None = None
    modes: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    models: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SelectionChanged:
    """The Session's Agent, model or reasoning level changed, or (``own``) its external agent's own choices."""

    agent: str
    model: str
    reasoning: str | None
    runtime: str = "native"
    own: AgentChoices | None = None


@dataclass(frozen=True, slots=True)
class QuestionAsked:
    """A question shown as a chat menu: the Session's next message answers it."""

    question_id: str
    question: Question
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class PlanLink:
    """A review link (of a Plan, or of an execution's code): ``text`` says it in plain words (with the URL), for the
    live client only; ``kept`` is what may be stored or logged instead (the same words, the link replaced by how to
    get a new one); the rest are hints (``label``: a button's)."""

    text: str
    kept: str
    url: str
    plan_id: str
    revision: int
    expires_at: float
    message_id: str | None = None
    label: str = "Review the Plan"


@dataclass(frozen=True, slots=True)
class ArtifactLink:
    """An Artifact Review's link, a message of its own: ``text`` says it with the URL, for the live client only;
    ``kept`` is what may be stored instead (the same words without the link); the rest are hints."""

    text: str
    kept: str
    url: str
    review_id: str
    path: str
    expires_at: float
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class PlanAction:
    """A next step offered for a Plan: how it is labelled, and the slash command that takes it."""

    label: str
    command: str


@dataclass(frozen=True, slots=True)
class PlanSaved:
    """A Plan revision was saved: a message of its own with the Plan's title and summary and its next steps;
    ``text`` says all of it in plain words (the commands included) for any client."""

    text: str
    plan_id: str
    revision: int
    title: str
    summary: str
    actions: tuple[PlanAction, ...]
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class TurnSettled:
    """The turn is over: nothing more will be emitted for it."""

    stop_reason: StopReason
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


Event = Union[
    UserMessage, MessageChunk, Thought, ToolProgress, Usage, Notice, SelectionChanged, QuestionAsked, PlanLink, ArtifactLink, PlanSaved,
    TurnSettled, ChildProgress, SessionSpawned,
]
