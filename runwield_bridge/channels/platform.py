"""Platform libraries are imported only when their channel is configured, so other commands never pay for them."""

from __future__ import annotations

import importlib
from typing import Any

from ..config import ConfigError


def import_platform(channel: str, module: str, attribute: str, libraries: tuple[str, ...]) -> Any:
    """``module.attribute``, imported now; a missing platform library is a config error naming the extra to install."""
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in libraries:
            raise
        raise ConfigError(f"channels.{channel}: {exc.name} is not installed (pip install 'runwield-bridge[{channel}]')") from None
