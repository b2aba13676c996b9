"""The OpenAB-compatible ``<sender_context>`` block that starts each prompt in group chats."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..channels.types import IncomingMessage

SCHEMA = "openab.sender.v1"


def sender_context(message: IncomingMessage) -> str:
    """``<sender_context>`` with ``openab.sender.v1`` JSON: who wrote, where, and when."""
    conversation, sender = message.conversation, message.sender
    context: dict[str, Any] = {
        "schema": SCHEMA,
        "sender_id": sender.id,
        "sender_name": sender.name,
        "display_name": sender.display_name or sender.name,
        "channel": conversation.channel,
        "channel_id": conversation.chat,
    }
    if conversation.thread is not None:
        context["thread_id"] = conversation.thread
    context["is_bot"] = sender.is_bot
    sent_at = message.sent_at or datetime.now(UTC)
    context["timestamp"] = sent_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if message.message_id is not None:
        context["message_id"] = message.message_id
    return f"<sender_context>\n{json.dumps(context, ensure_ascii=False, separators=(',', ':'))}\n</sender_context>"


def wants_sender_context(mode: str, message: IncomingMessage) -> bool:
    """``sender_context`` config: ``groups`` (default), ``always`` or ``never``."""
    return mode == "always" or (mode == "groups" and message.conversation.group)
