"""Slack events as Bridge events: a thread (``thread_ts``) is a conversation; a DM without a thread is one too."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..types import Attachment, Conversation

CHANNEL = "slack"
CONVERSING = (None, "file_share", "thread_broadcast")
"""Message subtypes people write; edits, joins and the like are not prompts."""

Download = Callable[[str], Awaitable[bytes]]


def conversation_of(channel: str, thread: str | None) -> Conversation:
    """Direct messages (``D…`` ids) are private; every other conversation is a group."""
    return Conversation(CHANNEL, channel, thread, group=not channel.startswith("D"))


def from_a_person(event: dict[str, Any], bot_user: str) -> bool:
    """A message a person wrote (not an edit, not a bot, not this bot)."""
    return event.get("subtype") in CONVERSING and not event.get("bot_id") and event.get("user") not in (None, bot_user)


def mentions(text: str, bot_user: str) -> bool:
    return f"<@{bot_user}>" in text


def without_mention(text: str, bot_user: str) -> str:
    return re.sub(rf"<@{re.escape(bot_user)}>", "", text).strip()


def sent_at(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), UTC)


def images(event: dict[str, Any], download: Download) -> tuple[Attachment, ...]:
    """Image files shared with the message; fetched (with the bot token) only if the agent accepts images."""
    return tuple(
        Attachment(f["mimetype"], lambda url=f["url_private_download"]: download(url))
        for f in event.get("files") or ()
        if str(f.get("mimetype", "")).startswith("image/") and f.get("url_private_download")
    )
