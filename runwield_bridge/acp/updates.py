"""Core events and Session state as ACP ``session/update`` payloads and config options."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from ..core.catalog import BUILTIN_AGENTS, ModelCatalog
from ..core.commands import Command
from ..core.events import (
    Event,
    MessageChunk,
    Notice,
    PlanLink,
    PlanSaved,
    QuestionAsked,
    SelectionChanged,
    Thought,
    ToolProgress,
    TurnSettled,
    Usage,
    UserMessage,
)
from ..core.store import SessionRecord
from .extensions import ALIASES, NOTICE, PLAN_LINK, PLAN_SAVED, PlanActionMeta, PlanLinkMeta, PlanSavedMeta, meta, turn_settled_update
from .menus import render_menu

NOTICE_PREFIX = {"info": "ℹ️ ", "success": "✅ ", "warning": "⚠️ ", "error": "❌ "}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def event_to_update(event: Event, catalog: ModelCatalog | None = None) -> dict[str, Any] | None:
    """The ``update`` object for an event, or None for events that are not sent as updates."""
    if isinstance(event, UserMessage):
        update = {"sessionUpdate": "user_message_chunk", "content": _text(event.text)}
        return _with_message_id(update, event.message_id)
    if isinstance(event, MessageChunk):
        return _with_message_id({"sessionUpdate": "agent_message_chunk", "content": _text(event.text)}, event.message_id)
    if isinstance(event, Thought):
        return {"sessionUpdate": "agent_thought_chunk", "content": _text(event.text)}
    if isinstance(event, ToolProgress):
        return _tool_update(event)
    if isinstance(event, Usage):
        update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": event.used, "size": event.size}
        if event.cost_usd is not None:
            update["cost"] = {"amount": round(event.cost_usd, 10), "currency": "USD"}
        return update
    if isinstance(event, Notice):
        prefix = NOTICE_PREFIX[event.level]
        return {
            "sessionUpdate": "agent_message_chunk",
            "content": _text(f"\n{prefix}{event.text}\n"),
            "_meta": meta(NOTICE, event.level),
        }
    if isinstance(event, PlanLink):
        return _with_message_id(
            {"sessionUpdate": "agent_message_chunk", "content": _text(event.text), "_meta": meta(PLAN_LINK, plan_link_meta(event))},
            event.message_id,
        )
    if isinstance(event, PlanSaved):
        return _with_message_id(
            {"sessionUpdate": "agent_message_chunk", "content": _text(event.text), "_meta": meta(PLAN_SAVED, plan_saved_meta(event))},
            event.message_id,
        )
    if isinstance(event, SelectionChanged) and catalog is not None:
        options = config_options(catalog, event.agent, event.model, event.reasoning)
        return {"sessionUpdate": "config_option_update", "configOptions": options}
    if isinstance(event, QuestionAsked):
        return question_update(render_menu(event.question), event.question_id, "asked")
    if isinstance(event, TurnSettled):
        return turn_settled_update(event.stop_reason, _iso(time.time()))
    return None


def plan_link_meta(link: PlanLink) -> PlanLinkMeta:
    """Presentation hints for a review link (a button, say); the text already carries the URL for plain clients."""
    return PlanLinkMeta(url=link.url, plan_id=link.plan_id, revision=link.revision, expires_at=_iso(link.expires_at))


def plan_saved_meta(saved: PlanSaved) -> PlanSavedMeta:
    """A saved Plan's title, summary and next steps, for clients that show them as a message with buttons."""
    actions = [PlanActionMeta(label=a.label, command=a.command) for a in saved.actions]
    return PlanSavedMeta(plan_id=saved.plan_id, revision=saved.revision, title=saved.title, summary=saved.summary, actions=actions)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def question_update(text: str, question_id: str, state: Literal["asked", "unmatched", "other"]) -> dict[str, Any]:
    """A chat-menu message: the question asked, repeated after a reply that did not match, or asking for Other's text."""
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": _text(text),
        "messageId": uuid.uuid4().hex,
        "_meta": {"runwield": {"question": {"id": question_id, "state": state}}},
    }


def commands_update(commands: Sequence[Command]) -> dict[str, Any]:
    """``available_commands_update`` for a Session's commands; aliases ride in ``_meta``."""
    available = []
    for command in commands:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        if command.aliases:
            entry["_meta"] = meta(ALIASES, list(command.aliases))
        available.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": available}


def _with_message_id(update: dict[str, Any], message_id: str | None) -> dict[str, Any]:
    if message_id:
        update["messageId"] = message_id
    return update


def _tool_update(event: ToolProgress) -> dict[str, Any]:
    if event.started:
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": event.call_id,
            "title": event.title,
            "kind": event.kind,
            "status": event.status,
        }
        if event.raw_input is not None:
            update["rawInput"] = event.raw_input
        return update
    update = {"sessionUpdate": "tool_call_update", "toolCallId": event.call_id, "status": event.status}
    if event.output is not None:
        update["content"] = [{"type": "content", "content": _text(event.output)}]
    return update


def config_options(catalog: ModelCatalog, agent: str, model: str, reasoning: str | None) -> list[dict[str, Any]]:
    """The complete current selection: Agent (mode), model, and reasoning level where the model reasons."""
    options: list[dict[str, Any]] = [
        {
            "id": "mode",
            "name": "Agent",
            "category": "mode",
            "type": "select",
            "currentValue": agent,
            "options": [{"value": a.id, "name": a.name, "description": a.description} for a in BUILTIN_AGENTS],
        },
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": model,
            "options": [{"value": m.id, "name": m.name, "description": m.description} for m in catalog.all()],
        },
    ]
    info = catalog.info(model)
    if info.reasons and reasoning is not None:
        options.append(
            {
                "id": "thought_level",
                "name": "Reasoning",
                "category": "thought_level",
                "type": "select",
                "currentValue": reasoning,
                "options": [{"value": level, "name": level.capitalize()} for level in info.reasoning_levels],
            }
        )
    return options


def record_options(catalog: ModelCatalog, record: SessionRecord) -> list[dict[str, Any]]:
    return config_options(catalog, record.agent, record.model, record.reasoning)
