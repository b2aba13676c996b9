"""The Telegram channel plugin (python-telegram-bot, the ``telegram`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..platform import platform_channel
from .settings import TelegramSettings

build = platform_channel("telegram", TelegramSettings, f"{__name__}.channel", "TelegramChannel", ("telegram",))


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Telegram channel."""
    register("telegram", build)
