"""Platform libraries are imported only when their channel is configured, so other commands never pay for them."""

from __future__ import annotations

import importlib
from typing import Any

from ..config import ConfigError
from .contract import Channel, ChannelContext, ChannelFactory
from .settings import ChannelSettings, parse_section


def import_platform(channel: str, module: str, attribute: str, libraries: tuple[str, ...]) -> Any:
    """``module.attribute``, imported now; a missing platform library is a config error naming the extra to install."""
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in libraries:
            raise
        raise ConfigError(f"channels.{channel}: {exc.name} is not installed (pip install 'runwield-bridge[{channel}]')") from None


def platform_channel(name: str, settings_model: type[ChannelSettings], module: str, attribute: str, libraries: tuple[str, ...]) -> ChannelFactory:
    """The factory for ``[channels.NAME]``: the section is checked first, the platform library imported only then."""

    def build(section: dict[str, Any], context: ChannelContext) -> Channel:
        settings = parse_section(settings_model, section, f"channels.{name}")
        channel_class = import_platform(name, module, attribute, libraries)
        return channel_class(settings, context)

    build.__doc__ = f"A {attribute} for ``[channels.{name}]``."
    return build
