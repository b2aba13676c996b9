"""The Discord channel plugin (discord.py, the ``discord`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..platform import platform_channel
from .settings import DiscordSettings

build = platform_channel("discord", DiscordSettings, f"{__name__}.channel", "DiscordChannel", ("discord",))


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Discord channel."""
    register("discord", build)
