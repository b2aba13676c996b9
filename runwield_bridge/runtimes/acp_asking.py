"""An external agent's questions as the Session's questions: ``session/request_permission`` and ``elicitation/create``.

Nothing is answered on the user's behalf: a permission that is not answered with one of its options (declined,
expired, cancelled) is a rejection, and a form that is not answered is declined.
"""

from __future__ import annotations

from typing import Any

from acp.schema import PermissionOption, ToolCallUpdate

from ..core.interactions import Choice, Outcome, Question, approval, select, text
from ..core.runtime import Ask

REJECT_KINDS = ("reject_once", "reject_always")
NUMBER_TRIES = 3


async def ask_permission(ask: Ask, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
    """The option the user chose, the agent's reject option when they did not choose, or None when it has none."""
    title = tool_call.title or tool_call.tool_call_id
    question = approval(f"The agent asks to go ahead: {title}", [Choice(o.option_id, o.name) for o in options])
    outcome = await ask(question, tool_call.tool_call_id)
    if outcome.answered and outcome.value in {o.option_id for o in options}:
        return outcome.value
    rejects = sorted((o for o in options if o.kind in REJECT_KINDS), key=lambda o: REJECT_KINDS.index(o.kind))
    return rejects[0].option_id if rejects else None


async def ask_elicitation(ask: Ask, params: Any) -> dict[str, Any]:
    """The elicitation's response: each form field asked in turn (accept with content), or decline."""
    if not isinstance(params, dict):
        return {"action": "decline"}
    message = str(params.get("message") or "The agent asks:")
    if params.get("mode") == "url":
        question = approval(f"{message}\n\nOpen this address yourself, then answer Yes: {params.get('url')}")
        outcome = await ask(question, params.get("toolCallId"))
        return {"action": "accept"} if outcome.answered and outcome.value == "accept" else {"action": "decline"}
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return {"action": "decline"}
    content: dict[str, Any] = {}
    for name, field in properties.items():
        value = await _ask_field(ask, f"{message}\n\n{_title(name, field)}", field if isinstance(field, dict) else {}, params.get("toolCallId"))
        if value is None:
            return {"action": "decline"}
        content[name] = value
    return {"action": "accept", "content": content}


async def _ask_field(ask: Ask, prompt: str, field: dict[str, Any], tool_call_id: str | None) -> Any:
    """One field's answer in the field's type; None when it was not answered."""
    question, convert = _field_question(prompt, field)
    for _ in range(NUMBER_TRIES):
        outcome: Outcome = await ask(question, tool_call_id)
        if not outcome.answered or outcome.value is None:
            return None
        try:
            return convert(outcome.value)
        except ValueError:
            question = text(f"{prompt}\n\n{outcome.value!r} is not a {field.get('type')}; please answer again.")
    return None


def _field_question(prompt: str, field: dict[str, Any]) -> tuple[Question, Any]:
    if isinstance(field.get("enum"), list):
        return select(prompt, [Choice(str(v), str(v)) for v in field["enum"]]), str
    if isinstance(field.get("oneOf"), list):
        choices = [Choice(str(o.get("const")), str(o.get("title") or o.get("const"))) for o in field["oneOf"] if isinstance(o, dict)]
        return select(prompt, choices), str
    kind = field.get("type")
    if kind == "boolean":
        return approval(prompt), lambda value: value == "accept"
    if kind == "integer":
        return text(prompt), int
    if kind == "number":
        return text(prompt), float
    return text(prompt), str


def _title(name: str, field: Any) -> str:
    title = field.get("title") if isinstance(field, dict) else None
    return str(title or name)
