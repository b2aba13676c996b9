"""Native forms: questions as ``elicitation/create`` requests, and their responses as outcomes.

Every form has a required ``answer`` field: a titled single-select (labels kept) for select, approval
and choice-interview questions, a non-empty string for text. A choice interview adds an optional
``other`` text field used only when ``Other`` is chosen. No field has a default.
"""

from __future__ import annotations

from typing import Any

from ..core.interactions import Outcome, PendingQuestion, Question

ANSWER, OTHER_TEXT = "answer", "other"
OTHER_VALUE = "_other"


def requested_schema(question: Question) -> dict[str, Any]:
    if question.free_text:
        return {
            "type": "object",
            "properties": {ANSWER: {"type": "string", "title": "Answer", "minLength": 1}},
            "required": [ANSWER],
        }
    options = [_option(c.value, c.label, c.description) for c in question.options]
    properties: dict[str, Any] = {ANSWER: {"type": "string", "title": "Choice", "oneOf": options}}
    if question.kind == "interview":
        options.append(_option(OTHER_VALUE, "Other", "Your own answer, typed below"))
        properties[OTHER_TEXT] = {"type": "string", "title": "Other answer", "description": "Used only when you choose Other"}
    return {"type": "object", "properties": properties, "required": [ANSWER]}


def _option(value: str, title: str, description: str) -> dict[str, Any]:
    return {"const": value, "title": title, **({"description": description} if description else {})}


def form_request(session_id: str, pending: PendingQuestion, problem: str = "") -> dict[str, Any]:
    """``elicitation/create`` params for a question; ``problem`` explains why an earlier answer was not taken."""
    question = pending.question
    params: dict[str, Any] = {
        "sessionId": session_id,
        "mode": "form",
        "message": f"{problem}\n\n{question.prompt}" if problem else question.prompt,
        "requestedSchema": requested_schema(question),
    }
    if pending.tool_call_id:
        params["toolCallId"] = pending.tool_call_id
    return params


def form_outcome(question: Question, response: Any) -> Outcome | str:
    """The outcome of an ``elicitation/create`` response, or (a string) why its content does not answer."""
    action = response.get("action") if isinstance(response, dict) else None
    if action == "decline":
        return Outcome.declined()
    if action == "cancel":
        return Outcome.cancelled("the form was cancelled")
    if action != "accept":
        return Outcome.failed(f"the client answered the form with action {action!r}")
    content = response.get("content") or {}
    answer = content.get(ANSWER)
    if not isinstance(answer, str) or not answer.strip():
        return "An answer is required."
    if question.free_text:
        return Outcome.answer(answer.strip())
    if question.kind == "interview" and answer == OTHER_VALUE:
        other = content.get(OTHER_TEXT)
        if isinstance(other, str) and other.strip():
            return Outcome.answer(other.strip(), other=True)
        return "Choosing Other needs your answer in the Other answer field."
    if answer in {c.value for c in question.options}:
        return Outcome.answer(answer)
    return "Choose one of the listed options."
