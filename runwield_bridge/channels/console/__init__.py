"""The ``console`` channel plugin: a terminal chat, built in (no extra library)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..contract import ChannelContext
from ..settings import parse_section
from .channel import ConsoleChannel, ConsoleSettings


@hookimpl
def register_channels(register: Any) -> None:
    """Register the terminal channel."""

    def build(section: dict[str, Any], context: ChannelContext) -> ConsoleChannel:
        return ConsoleChannel(parse_section(ConsoleSettings, section, "channels.console"))

    register("console", build)
