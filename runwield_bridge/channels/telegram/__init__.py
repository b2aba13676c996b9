"""The Telegram channel plugin (python-telegram-bot, the ``telegram`` extra)."""

from __future__ import annotations

from typing import Any

from ...config import ConfigError
from ...hookspecs import hookimpl
from ..contract import Channel, ChannelContext
from ..settings import parse_section
from .settings import TelegramSettings


def build(section: dict[str, Any], context: ChannelContext) -> Channel:
    """A TelegramChannel for ``[channels.telegram]``; python-telegram-bot is imported only now."""
    settings = parse_section(TelegramSettings, section, "channels.telegram")
    try:
        from .channel import TelegramChannel
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != "telegram":
            raise
        raise ConfigError(f"channels.telegram: {exc.name} is not installed (pip install 'runwield-bridge[telegram]')") from None
    return TelegramChannel(settings, context)


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Telegram channel."""
    register("telegram", build)
