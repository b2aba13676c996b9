"""The Telegram channel plugin (python-telegram-bot, the ``telegram`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..contract import Channel, ChannelContext
from ..platform import import_platform
from ..settings import parse_section
from .settings import TelegramSettings


def build(section: dict[str, Any], context: ChannelContext) -> Channel:
    """A TelegramChannel for ``[channels.telegram]``; python-telegram-bot is imported only now."""
    settings = parse_section(TelegramSettings, section, "channels.telegram")
    channel_class = import_platform("telegram", f"{__name__}.channel", "TelegramChannel", ("telegram",))
    return channel_class(settings, context)


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Telegram channel."""
    register("telegram", build)
