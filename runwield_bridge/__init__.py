"""RunWield Bridge's public plugin API: ``hookimpl`` and the types that the hooks' signatures use.

A plugin imports from here and nowhere else in ``runwield_bridge``; everything else is internal and may
change. See docs/plugins.md.
"""

from .channels.contract import Channel, ChannelContext, ChannelFactory, Inbox, ReplyView
from .channels.types import (
    Attachment,
    Button,
    ButtonPress,
    Capabilities,
    Conversation,
    ChannelMisconfigured,
    CredentialsRejected,
    IncomingMessage,
    MenuCommand,
    MessageRef,
    ModelChoice,
    ModelMenu,
    RateLimited,
    Sender,
    Unavailable,
)
from .channels.settings import ChannelSettings, parse_section
from .config import ConfigError, ModelConfig
from .core.commands import Command, CommandContext
from .core.interactions import Choice, Outcome, Question, approval, interview, select, text
from .core.models import (
    ChatMessage,
    Model,
    ModelError,
    ModelEvent,
    ModelInfo,
    ModelRequest,
    ModelUsage,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    ToolSpec,
)
from .core.tool_gate import Change
from .core.tools import Tool, ToolContext, ToolError
from .hookspecs import ModelFactory, ProviderFactory, hookimpl

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
