"""Who may talk to the Bridge where: each channel's allowlist, and the throttled notice a stranger gets."""

from __future__ import annotations

from ..channels.allowlist import Allowlist, NoticeThrottle, stranger_notice
from ..channels.contract import Channel
from ..channels.types import Conversation as Chat
from ..channels.types import Sender
from .delivery import say


class Gate:
    """The allowlists of the channels added, and their stranger notices."""

    def __init__(self) -> None:
        self._allowlists: dict[str, Allowlist] = {}
        self._notices: dict[str, NoticeThrottle] = {}

    def add(self, channel: Channel) -> None:
        self._allowlists[channel.name] = channel.settings.allowlist()
        self._notices[channel.name] = NoticeThrottle(channel.settings.stranger_notice_interval)

    def allows(self, channel: Channel, sender: Sender, chat: Chat) -> bool:
        return self._allowlists[channel.name].allows(sender, chat)

    async def lets_in(self, channel: Channel, sender: Sender, chat: Chat) -> bool:
        """Whether the person is allowed here; a stranger is told so (at most once per interval)."""
        if self.allows(channel, sender, chat):
            return True
        if self._notices[channel.name].should_notify(sender.id):
            await say(channel, chat, stranger_notice(channel.name, sender, chat))
        return False
