"""Who may reach an agent (deny by default), and at most one notice per hour to anyone else."""

from __future__ import annotations

import time
from collections.abc import Iterable

from .budget import Clock
from .types import Conversation, Sender


class Allowlist:
    """A person is allowed if their id is listed, or one of their roles is, or the chat they write in is; nobody else is."""

    def __init__(self, users: Iterable[str], chats: Iterable[str], roles: Iterable[str] = ()) -> None:
        self.users = frozenset(users)
        self.chats = frozenset(chats)
        self.roles = frozenset(roles)

    def allows(self, sender: Sender, conversation: Conversation) -> bool:
        return sender.id in self.users or conversation.chat in self.chats or not self.roles.isdisjoint(sender.roles)


class NoticeThrottle:
    """Remembers whom it told what, so a stranger hears at most one notice per ``interval``."""

    def __init__(self, interval: float, clock: Clock = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._last: dict[str, float] = {}

    def should_notify(self, who: str) -> bool:
        """True (and remembered) if ``who`` has not been notified within the interval."""
        now = self.clock()
        last = self._last.get(who)
        if last is not None and now - last < self.interval:
            return False
        self._forget_older_than(now - self.interval)
        self._last[who] = now
        return True

    def _forget_older_than(self, cutoff: float) -> None:
        if len(self._last) > 1024:
            self._last = {who: at for who, at in self._last.items() if at > cutoff}


def stranger_notice(channel: str, sender: Sender, conversation: Conversation) -> str:
    """What a person not on the allowlist is told, with the ids an operator would add."""
    where = f" (this chat's id is {conversation.chat})" if conversation.group else ""
    return (
        f"You are not on this bot's allowlist, so your message was not passed on. "
        f"Your {channel} user id is {sender.id}{where}. To be let in, ask the bot's operator to add it "
        f"to channels.{channel}.allowed_users."
    )
