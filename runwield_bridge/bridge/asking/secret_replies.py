"""Secret answers (a token, a password): asked with a warning, the reply deleted from the chat where the platform
allows it (said plainly where it does not), shown as 🔒, and redacted from every log line from the moment it is read."""

from __future__ import annotations

import logging
from typing import Any

from ...channels.types import CannotDelete, MessageRef
from ...redaction import keep_secret
from ..delivery import deliver

log = logging.getLogger(__name__)

SENT = "🔒 sent"
"""What the question shows once answered, in place of the answer."""
SHORTEST = 4
"""Answers shorter than this are not redacted from log lines (they would blank out ordinary words); none is logged anyway."""
DELETES = "🔒 This answer is sent to the agent and not kept; your message is deleted from this chat."
KEEPS = "🔒 This answer is sent to the agent and not kept. This chat cannot delete messages: clear your reply yourself."


def warning(channel: Any) -> str:
    """The warning a secret question carries: whether this channel deletes the reply, and if not, why (where it says)."""
    if keeps := getattr(channel, "keeps_replies", None):
        return f"🔒 This answer is sent to the agent and not kept. {keeps}"
    return DELETES if callable(getattr(channel, "delete", None)) else KEEPS


def hide(text: str) -> None:
    """A reply to a secret question has arrived: redact it from every log line from now on (held ones included)."""
    for value in {text, text.strip()}:
        keep_secret(value, SHORTEST)


async def delete_reply(channel: Any, reply: MessageRef) -> None:
    """Delete the person's reply; where the platform refuses, say so in the chat, plainly (where the question's warning
    already said the reply stays, nothing is tried)."""
    delete = getattr(channel, "delete", None)
    if not callable(delete) or getattr(channel, "keeps_replies", None):
        return
    try:
        await delete(reply)
    except CannotDelete as exc:
        await deliver(channel, reply.conversation, f"⚠️ {exc} Delete your message yourself: it holds the answer.")
    except Exception as exc:  # the answer stands; the person is told to delete it
        log.warning("could not delete a secret reply in %s: %s", reply.conversation.key, type(exc).__name__)
        await deliver(channel, reply.conversation, "⚠️ Your message could not be deleted from this chat. Delete it yourself: it holds the answer.")
