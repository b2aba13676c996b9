"""The Discord channel plugin (discord.py, the ``discord`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..contract import Channel, ChannelContext
from ..platform import import_platform
from ..settings import parse_section
from .settings import DiscordSettings


def build(section: dict[str, Any], context: ChannelContext) -> Channel:
    """A DiscordChannel for ``[channels.discord]``; discord.py is imported only now."""
    settings = parse_section(DiscordSettings, section, "channels.discord")
    channel_class = import_platform("discord", f"{__name__}.channel", "DiscordChannel", ("discord",))
    return channel_class(settings, context)


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Discord channel."""
    register("discord", build)
