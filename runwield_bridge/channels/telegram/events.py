"""Telegram updates as Bridge events: private chats, groups (addressed messages only) and forum topics."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from telegram import Bot, Message, Update, User

from ..types import Attachment, ButtonPress, Conversation, IncomingMessage, MessageRef, Sender

CHANNEL = "telegram"
GROUP_TYPES = ("group", "supergroup")
_COMMAND = re.compile(r"^/(\w+)(@\w+)?")


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, to tell which group messages are addressed to it."""

    id: int
    username: str


def conversation_of(message: Message) -> Conversation:
    """A chat, or a forum topic of one (topics are threads)."""
    thread = str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else None
    return Conversation(CHANNEL, str(message.chat.id), thread, message.chat.type in GROUP_TYPES)


def sender_of(user: User) -> Sender:
    return Sender(str(user.id), user.username or user.first_name, user.full_name, user.is_bot)


def message_event(update: Update, bot: Bot, me: BotIdentity, require_mention: bool) -> IncomingMessage | None:
    """The message an update carries, if it is for the bot; commands to other bots and chatter in groups are not."""
    message = update.message
    if message is None or message.from_user is None:
        return None
    conversation = conversation_of(message)
    text = message.text or message.caption or ""
    if (command := _COMMAND.match(text)) and command.group(2):
        if command.group(2)[1:].casefold() != me.username.casefold():
            return None
        text = text.replace(command.group(2), "", 1)
    if conversation.group and require_mention and not _addressed(message, text, me):
        return None
    text = re.sub(rf"@{re.escape(me.username)}\b", "", text, flags=re.IGNORECASE).strip()
    images: tuple[Attachment, ...] = ()
    if message.photo:
        images = (Attachment("image/jpeg", _downloader(bot, message.photo[-1].file_id)),)
    return IncomingMessage(conversation, sender_of(message.from_user), text, images, str(message.message_id), message.date)


def press_event(update: Update) -> ButtonPress | None:
    query = update.callback_query
    if query is None or query.data is None or query.message is None:
        return None
    message = query.message
    thread = getattr(message, "message_thread_id", None) if getattr(message, "is_topic_message", False) else None
    chat = message.chat
    conversation = Conversation(CHANNEL, str(chat.id), str(thread) if thread else None, chat.type in GROUP_TYPES)
    markup = getattr(message, "reply_markup", None)
    on_it = any(b.callback_data == query.data for row in (markup.inline_keyboard if markup else ()) for b in row)
    ref = MessageRef(conversation, str(message.message_id)) if on_it else None
    return ButtonPress(conversation, sender_of(query.from_user), query.data, ref, getattr(message, "text", None) or "")


def _addressed(message: Message, text: str, me: BotIdentity) -> bool:
    """In a group: a command, a mention of the bot, or a reply to one of its messages."""
    replied = message.reply_to_message
    return (
        text.startswith("/")
        or f"@{me.username}".casefold() in text.casefold()
        or (replied is not None and replied.from_user is not None and replied.from_user.id == me.id)
    )


def _downloader(bot: Bot, file_id: str) -> Callable[[], Awaitable[bytes]]:
    async def fetch() -> bytes:
        file = await bot.get_file(file_id)
        return bytes(await file.download_as_bytearray())

    return fetch
