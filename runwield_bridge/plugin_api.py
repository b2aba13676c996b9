"""Where the names of the public plugin API come from; ``runwield_bridge.__all__`` lists them, and a plugin imports
them from ``runwield_bridge`` (loaded from here on first use)."""

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
