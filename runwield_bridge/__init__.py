"""RunWield Bridge's public plugin API: ``hookimpl`` and the types that the hooks' signatures use.

A plugin imports from here and nowhere else in ``runwield_bridge``; everything else is internal and may
change. See docs/plugins.md. The names live in ``plugin_api`` and are loaded on first use, so a command that
needs none of them does not pay for them (``wld acp`` answers ``initialize`` without the channel kit).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plugin_api import *  # noqa: F403


__all__ = [
    # hooks
    "hookimpl",
    # register_models and register_providers
    "ChatMessage",
    "Model",
    "ModelConfig",
    "ModelError",
    "ModelEvent",
    "ModelFactory",
    "ModelInfo",
    "ModelRequest",
    "ModelUsage",
    "ProviderFactory",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallRequest",
    # register_tools
    "Change",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    # register_commands, and the questions a tool or command asks
    "Choice",
    "Command",
    "CommandContext",
    "Outcome",
    "Question",
    "approval",
    "interview",
    "select",
    "text",
    # register_channels
    "Attachment",
    "Button",
    "ButtonPress",
    "Capabilities",
    "Channel",
    "ChannelContext",
    "ChannelFactory",
    "ChannelSettings",
    "ConfigError",
    "Conversation",
    "ChannelMisconfigured",
    "CredentialsRejected",
    "Inbox",
    "IncomingMessage",
    "MenuCommand",
    "MessageRef",
    "ModelChoice",
    "ModelMenu",
    "RateLimited",
    "ReplyView",
    "Sender",
    "Unavailable",
    "parse_section",
]


def __getattr__(name: str) -> Any:
    """A name of the plugin API, from ``plugin_api``; anything else (a submodule not yet imported) is not here."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(".plugin_api", __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
