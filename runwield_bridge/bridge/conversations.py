"""Every conversation the Bridge has open, by key: made on first use, with its queue in its stored mode."""

from __future__ import annotations

from collections.abc import Iterator

from ..channels.contract import Channel
from ..channels.types import Conversation as Chat
from .conversation import Conversation
from .follow_ups import FollowUpLog, FollowUpQueue, StoredQueues


class Conversations:
    """The open conversations, and which have a stored queue or mode (``StoredQueues``)."""

    def __init__(self, follow_ups: FollowUpLog) -> None:
        self.follow_ups = follow_ups
        self.stored = StoredQueues(follow_ups)
        self._by_key: dict[str, Conversation] = {}

    def open(self, channel: Channel, chat: Chat) -> Conversation:
        """The conversation, made (unrestored) if it is new here."""
        conversation = self._by_key.get(chat.key)
        if conversation is None:
            queue = FollowUpQueue(self.follow_ups, chat.key, self.stored.mode(chat.key) or channel.settings.queue)
            conversation = self._by_key[chat.key] = Conversation(chat, channel, queue)
        return conversation

    def get(self, key: str) -> Conversation | None:
        return self._by_key.get(key)

    def __iter__(self) -> Iterator[Conversation]:
        return iter(list(self._by_key.values()))
