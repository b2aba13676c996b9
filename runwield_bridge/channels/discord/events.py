"""Discord messages and interactions as Bridge events: a thread is a conversation, a DM is one too."""

from __future__ import annotations

import re
from typing import Any

import discord

from ..types import Attachment, Conversation, IncomingMessage, Sender

CHANNEL = "discord"
THREAD_NAME_LENGTH = 80


def conversation_of(channel: Any) -> Conversation:
    """A thread (under its parent channel), a DM, or a guild channel itself."""
    if isinstance(channel, discord.Thread):
        return Conversation(CHANNEL, str(channel.parent_id), str(channel.id), group=True)
    if isinstance(channel, discord.abc.PrivateChannel):
        return Conversation(CHANNEL, str(channel.id))
    return Conversation(CHANNEL, str(channel.id), group=True)


def sender_of(user: discord.User | discord.Member) -> Sender:
    roles = tuple(str(role.id) for role in getattr(user, "roles", ()))
    return Sender(str(user.id), user.name, user.display_name, user.bot, roles)


def without_mention(text: str, bot_id: int) -> str:
    return re.sub(rf"<@!?{bot_id}>", "", text).strip()


def thread_name(text: str, author: str) -> str:
    """A thread's title: the first line of the message that opened it."""
    first = text.strip().split("\n", 1)[0] or f"Session with {author}"
    return first if len(first) <= THREAD_NAME_LENGTH else first[: THREAD_NAME_LENGTH - 1].rstrip() + "…"


def incoming(message: discord.Message, conversation: Conversation, text: str) -> IncomingMessage:
    """The message as the Bridge takes it; image attachments are fetched only if the agent accepts images."""
    images = tuple(
        Attachment(a.content_type or "image/png", a.read) for a in message.attachments if (a.content_type or "").startswith("image/")
    )
    return IncomingMessage(conversation, sender_of(message.author), text, images, str(message.id), message.created_at)
