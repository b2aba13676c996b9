"""What an agent asks the people in a conversation: permission for a tool call, or a form or URL question."""

from __future__ import annotations

from typing import Any

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from ...channels.contract import Channel
from ...channels.types import Conversation
from .pending import Answer, ChatOutcome, ChatQuestion, ChatQuestions
from .forms import parse_request, run_form, run_url, secret_names

CANCELLED = RequestPermissionResponse.model_validate({"outcome": {"outcome": "cancelled"}})


async def ask_permission(
    interactions: ChatQuestions, channel: Channel, conversation: Conversation, tool_call: ToolCallUpdate, options: list[PermissionOption]
) -> RequestPermissionResponse:
    """The agent's options as buttons; only an allowed person's choice selects one. Silence, /cancel or the turn's end: ``cancelled``."""
    if not options:
        return CANCELLED
    question = ChatQuestion(
        f"🔐 Permission needed: {tool_call.title or tool_call.tool_call_id}\nKind: {tool_call.kind or 'other'}",
        options=[option.name for option in options],
        typed_with_buttons=False,
        expired_text="⌛ No answer in time; not approved.",
        cancelled_text="⏹ Cancelled; not approved.",
    )
    answer = await interactions.ask(channel, conversation, question, channel.settings.permission_timeout)
    if answer.outcome is not ChatOutcome.ANSWERED:
        return CANCELLED
    return RequestPermissionResponse.model_validate({"outcome": {"outcome": "selected", "optionId": options[answer.value].option_id}})


async def ask_question(interactions: ChatQuestions, channel: Channel, conversation: Conversation, params: Any) -> dict[str, Any]:
    """An ``elicitation/create`` request asked in the chat; raises Unsupported for what cannot be asked."""
    request = parse_request(params)

    async def ask(question: ChatQuestion, seconds: float) -> Answer:
        return await interactions.ask(channel, conversation, question, seconds)

    timeout = channel.settings.question_timeout
    if request.mode == "url":
        return await run_url(request.message, str(params["url"]), ask, timeout)
    return await run_form(request.message, request.requested_schema, ask, timeout, secret_names(params))
