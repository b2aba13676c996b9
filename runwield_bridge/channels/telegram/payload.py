"""The parts of a webhook update the Telegram channel reads, with the types the Bot API gives them."""

from __future__ import annotations

from pydantic import Field

from ..webhooks import Payload


class User(Payload):
    id: int
    is_bot: bool
    first_name: str
    username: str | None = None


class Chat(Payload):
    id: int
    type: str


class Entity(Payload):
    type: str
    offset: int
    length: int


class Photo(Payload):
    file_id: str


class Message(Payload):
    message_id: int
    date: int
    chat: Chat
    sender: User | None = Field(None, alias="from")
    text: str | None = None
    caption: str | None = None
    entities: list[Entity] | None = None
    caption_entities: list[Entity] | None = None
    message_thread_id: int | None = None
    is_topic_message: bool | None = None
    photo: list[Photo] | None = None
    reply_to_message: Message | None = None


class CallbackQuery(Payload):
    id: str
    sender: User = Field(alias="from")
    data: str | None = None
    message: Message | None = None


class WebhookUpdate(Payload):
    """An update as ``setWebhook`` with ``allowed_updates=["message", "callback_query"]`` delivers it."""

    update_id: int
    message: Message | None = None
    callback_query: CallbackQuery | None = None
