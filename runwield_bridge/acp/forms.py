"""Native forms: questions as ``elicitation/create`` requests, and their responses as outcomes.

Every form has a required ``answer`` field: a titled single-select (labels kept) for select, approval
and choice-interview questions, a non-empty string for text. A choice interview is the form of
``other_choice``: its options, ``Other`` last, and an optional ``other`` text field used only when
Other is chosen. No field has a default.
"""

from __future__ import annotations

from typing import Any

from acp.schema import CreateFormSessionElicitationRequest

from ..core.interactions import Outcome, PendingQuestion, Question
from .other_choice import ANSWER, OTHER_TEXT, OTHER_VALUE, Option, choice_with_other_schema, option_schema


def requested_schema(question: Question) -> dict[str, Any]:
    if question.free_text:
        return {
            "type": "object",
            "properties": {ANSWER: {"type": "string", "title": "Answer", "minLength": 1}},
            "required": [ANSWER],
        }
    options = [Option(c.value, c.label, c.description) for c in question.options]
    if question.kind == "interview":
        return choice_with_other_schema(options)
    choice = {"type": "string", "title": "Choice", "oneOf": [option_schema(o) for o in options]}
    return {"type": "object", "properties": {ANSWER: choice}, "required": [ANSWER]}


def form_request(session_id: str, pending: PendingQuestion, problem: str = "") -> CreateFormSessionElicitationRequest:
    """``elicitation/create`` params for a question; ``problem`` explains why an earlier answer was not taken."""
    question = pending.question
    return CreateFormSessionElicitationRequest(
        session_id=session_id,
        mode="form",
        message=f"{problem}\n\n{question.prompt}" if problem else question.prompt,
        requested_schema=requested_schema(question),
        **({"tool_call_id": pending.tool_call_id} if pending.tool_call_id else {}),
    )


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
