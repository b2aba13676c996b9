"""The `user_interview` tool: the model asks the user one or more questions and gets ordered, typed answers."""

from __future__ import annotations

import json
from typing import Any

from .interactions import Choice, interview
from .models import ToolSpec
from .tools import Tool, ToolContext, ToolError

INTERVIEW_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "What to ask"},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Choices to offer (the user may also answer Other); omit for a free-text question",
                    },
                },
                "required": ["question"],
            },
        }
    },
    "required": ["questions"],
}


def _questions(arguments: dict[str, Any]) -> list[tuple[str, list[str]]]:
    raw = arguments.get("questions")
    if not isinstance(raw, list) or not raw:
        raise ToolError("user_interview needs a non-empty list of questions")
    found = []
    for item in raw:
        if not isinstance(item, dict) or not str(item.get("question", "")).strip():
            raise ToolError("every question needs a non-empty 'question'")
        options = [str(o) for o in item.get("options") or [] if str(o).strip().casefold() != "other"]  # Other is always offered
        if len(set(options)) != len(options):
            raise ToolError(f"duplicate options in {options}")
        found.append((str(item["question"]), options))
    return found


async def run_interview(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """Ask each question in turn; stop at the first that is not answered. Returns JSON for the model."""
    questions = _questions(arguments)
    if ctx.ask is None:
        raise ToolError("nobody can be asked in this turn")
    answers: list[dict[str, str]] = []
    for prompt, options in questions:
        outcome = await ctx.ask(interview(prompt, [Choice(o, o) for o in options]))
        if not outcome.answered or outcome.value is None:
            unanswered = [q for q, _ in questions[len(answers) :]]
            result = {"status": outcome.status, "answers": answers, "unanswered": unanswered}
            return json.dumps(result | ({"reason": outcome.reason} if outcome.reason else {}))
        kind = "other" if outcome.other else "choice" if options else "text"
        answers.append({"question": prompt, "type": kind, "answer": outcome.value})
    return json.dumps({"status": "answered", "answers": answers})


USER_INTERVIEW = Tool(
    ToolSpec(
        "user_interview",
        "Ask the user one or more questions, one at a time; each is a choice list (with an Other answer) or free text",
        INTERVIEW_PARAMETERS,
    ),
    "other",
    run_interview,
)
