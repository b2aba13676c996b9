"""Core events and Session state as ACP ``session/update`` payloads and config options."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    Cost,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UnstructuredCommandInput,
    UsageUpdate,
    UserMessageChunk,
)
from pydantic import BaseModel

from ..core.catalog import BUILTIN_AGENTS, ModelCatalog
from ..core.commands import Command
from ..core.events import (
    AgentChoices,
    ArtifactLink,
    ChildProgress,
    Event,
    MessageChunk,
    Notice,
    PlanLink,
    PlanSaved,
    QuestionAsked,
    SelectionChanged,
    SessionSpawned,
    Thought,
    ToolProgress,
    TurnSettled,
    Usage,
    UserMessage,
)
from ..core.records import SessionRecord
from ..core.runtime import EXTERNAL, NATIVE, OwnChoice
from .extensions import (
    ALIASES,
    ARTIFACT_REVIEW,
    CHILD,
    NOTICE,
    PLAN_LINK,
    PLAN_SAVED,
    QUESTION,
    SPAWNED,
    TURN,
    ArtifactReviewMeta,
    ChildMeta,
    PlanActionMeta,
    PlanLinkMeta,
    PlanSavedMeta,
    QuestionMeta,
    SpawnedMeta,
    TurnMeta,
)
from .menus import render_menu

AGENT_MODE = "agent_mode"
"""The config option holding the external agent's own modes, in a Session it drives (``mode`` is RunWield's Agent)."""
NOTICE_PREFIX = {"info": "ℹ️ ", "success": "✅ ", "warning": "⚠️ ", "error": "❌ "}
Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AvailableCommandsUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def wire(message: BaseModel) -> dict[str, Any]:
    """An SDK model as it goes on the wire: exactly the fields that were set."""
    return message.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


def notification(session_id: str, update: Update) -> dict[str, Any]:
    """``session/update`` params."""
    return wire(SessionNotification(session_id=session_id, update=update))


def event_to_update(event: Event, catalog: ModelCatalog | None = None) -> Update | None:
    """The ``update`` for an event, or None for events that are not sent as updates."""
    if isinstance(event, UserMessage):
        return UserMessageChunk(session_update="user_message_chunk", content=_text(event.text), **_message_id(event.message_id))
    if isinstance(event, MessageChunk):
        return _agent_text(event.text, event.message_id)
    if isinstance(event, Thought):
        return AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(event.text))
    if isinstance(event, ToolProgress):
        return _tool_update(event)
    if isinstance(event, Usage):
        cost = {} if event.cost_usd is None else {"cost": Cost(amount=round(event.cost_usd, 10), currency="USD")}
        return UsageUpdate(session_update="usage_update", used=event.used, size=event.size, **cost)
    if isinstance(event, Notice):
        return _agent_text(f"\n{NOTICE_PREFIX[event.level]}{event.text}\n", None, NOTICE.meta(event.level))
    if isinstance(event, PlanLink):
        return _agent_text(event.text, event.message_id, PLAN_LINK.meta(plan_link_meta(event)))
    if isinstance(event, ArtifactLink):
        meta = ArtifactReviewMeta(url=event.url, path=event.path, expires_at=_iso(event.expires_at))
        return _agent_text(event.text, event.message_id, ARTIFACT_REVIEW.meta(meta))
    if isinstance(event, PlanSaved):
        return _agent_text(event.text, event.message_id, PLAN_SAVED.meta(plan_saved_meta(event)))
    if isinstance(event, SessionSpawned):
        meta = SpawnedMeta(session_id=event.session_id, agent=event.agent, task=event.task, place=event.place, cwd=event.cwd)
        return _agent_text(event.text, event.message_id, SPAWNED.meta(meta))
    if isinstance(event, SelectionChanged) and catalog is not None:
        options = config_options(catalog, event.agent, event.model, event.reasoning, event.runtime, event.own)
        return ConfigOptionUpdate(session_update="config_option_update", config_options=options)
    if isinstance(event, QuestionAsked):
        return question_update(render_menu(event.question), event.question_id, "asked")
    if isinstance(event, ChildProgress):
        return child_update(event)
    if isinstance(event, TurnSettled):
        meta = TURN.meta(TurnMeta(stop_reason=event.stop_reason))
        return SessionInfoUpdate(session_update="session_info_update", updated_at=_iso(time.time()), field_meta=meta)
    return None


def plan_link_meta(link: PlanLink) -> PlanLinkMeta:
    """Presentation hints for a review link (a button, say); the text already carries the URL for plain clients."""
    return PlanLinkMeta(url=link.url, plan_id=link.plan_id, revision=link.revision, expires_at=_iso(link.expires_at), label=link.label)


def plan_saved_meta(saved: PlanSaved) -> PlanSavedMeta:
    """A saved Plan's title, summary and next steps, for clients that show them as a message with buttons."""
    actions = [PlanActionMeta(label=a.label, command=a.command) for a in saved.actions]
    return PlanSavedMeta(plan_id=saved.plan_id, revision=saved.revision, title=saved.title, summary=saved.summary, actions=actions)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def question_update(text: str, question_id: str, state: Literal["asked", "unmatched", "other"]) -> AgentMessageChunk:
    """A chat-menu message: the question asked, repeated after a reply that did not match, or asking for Other's text."""
    return _agent_text(text, uuid.uuid4().hex, QUESTION.meta(QuestionMeta(id=question_id, state=state)))


def commands_update(commands: Sequence[Command]) -> AvailableCommandsUpdate:
    """``available_commands_update`` for a Session's commands; aliases ride in ``_meta``."""
    available = [
        AvailableCommand(
            name=command.name,
            description=command.description,
            **({"input": UnstructuredCommandInput(hint=command.hint)} if command.hint else {}),
            **({"field_meta": ALIASES.meta(list(command.aliases))} if command.aliases else {}),
        )
        for command in commands
    ]
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=available)


def _agent_text(text: str, message_id: str | None, meta: dict[str, Any] | None = None) -> AgentMessageChunk:
    extra = _message_id(message_id) | ({"field_meta": meta} if meta else {})
    return AgentMessageChunk(session_update="agent_message_chunk", content=_text(text), **extra)


def _message_id(message_id: str | None) -> dict[str, str]:
    return {"message_id": message_id} if message_id else {}


def _tool_update(event: ToolProgress) -> ToolCallStart | ToolCallProgress:
    if event.started:
        raw_input = {} if event.raw_input is None else {"raw_input": event.raw_input}
        return ToolCallStart(
            session_update="tool_call", tool_call_id=event.call_id, title=event.title, kind=event.kind, status=event.status, **raw_input
        )
    content = {} if event.output is None else {"content": [ContentToolCallContent(type="content", content=_text(event.output))]}
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=event.call_id, status=event.status, **content)


def child_update(event: ChildProgress) -> ToolCallStart | ToolCallProgress:
    """A child Session's progress as a tool call of the parent (one line that clients update in place)."""
    meta = {"field_meta": CHILD.meta(ChildMeta(session_id=event.child_id, agent=event.agent, task=event.task, state=event.state))}
    call_id = f"child-{event.child_id}"
    if event.state == "running":
        title = f"🧵 {event.agent}: {event.task}"
        return ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=title, kind="other", status="in_progress", **meta)
    status: Literal["completed", "failed"] = "completed" if event.state == "done" else "failed"
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status=status, **meta)


def config_options(
    catalog: ModelCatalog, agent: str, model: str, reasoning: str | None, runtime: str = NATIVE, own: AgentChoices | None = None
) -> list[SessionConfigOptionSelect]:
    """The complete current selection: Agent (mode), what drives the turns (a model, or after the models an
    external agent as ``acp:NAME``), and reasoning level where the model reasons. In a Session an external agent
    drives, once its session is open (``own``): its own models first in the model select, as "NAME: model", and its
    own modes as one more select of category ``mode`` (``agent_mode``)."""
    models = [_option(m.id, m.name, m.description) for m in catalog.all()]
    agents = [_option(EXTERNAL + name, f"{name} (external agent)", f"[agents.{name}] drives the turns") for name in catalog.external]
    theirs = [_option(f"{own.agent}: {value}", f"{own.agent}: {name}", f"{own.agent}'s own model") for value, name in own.models] if own else []
    current = model if runtime == NATIVE else f"{own.agent}: {own.model}" if own and own.model else runtime
    options = [
        _select("mode", "Agent", agent, [_option(a.id, a.name, a.description) for a in BUILTIN_AGENTS]),
        _select("model", "Model", current, [*theirs, *models, *agents]),
    ]
    if own and own.mode is not None:
        modes = [SessionConfigSelectOption(value=value, name=name) for value, name in own.modes]
        options.append(SessionConfigOptionSelect(id=AGENT_MODE, name=f"{own.agent} mode", category="mode", type="select", current_value=own.mode, options=modes))
    info = catalog.info(model)
    if runtime == NATIVE and info.reasons and reasoning is not None:
        levels = [SessionConfigSelectOption(value=level, name=level.capitalize()) for level in info.reasoning_levels]
        options.append(_select("thought_level", "Reasoning", reasoning, levels))
    return options


def own_choice(own: AgentChoices | None, config_id: str, value: str) -> tuple[OwnChoice, str] | None:
    """The external agent's own choice a ``session/set_config_option`` makes (its mode, or a "NAME: model"), if any."""
    if config_id == AGENT_MODE:
        return "mode", value
    if config_id == "model" and own is not None and value.startswith(f"{own.agent}: "):
        return "model", value.removeprefix(f"{own.agent}: ")
    return None


def _select(option_id: str, name: str, current: str, options: list[SessionConfigSelectOption]) -> SessionConfigOptionSelect:
    """A select option whose category is its id (``mode``, ``model``, ``thought_level``)."""
    return SessionConfigOptionSelect(id=option_id, name=name, category=option_id, type="select", current_value=current, options=options)


def _option(value: str, name: str, description: str) -> SessionConfigSelectOption:
    return SessionConfigSelectOption(value=value, name=name, description=description)


def record_options(catalog: ModelCatalog, record: SessionRecord, runtime: str = NATIVE, own: AgentChoices | None = None) -> list[SessionConfigOptionSelect]:
    return config_options(catalog, record.agent, record.model, record.reasoning, runtime, own)
