"""The words of the channel contract: conversations, senders, messages, buttons, menus, and the errors both sides raise.

A leaf module: everything a channel and the Bridge hand each other, importing nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from ..config import ConfigError
from .chunking import Weight, char_weight


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a platform can render; the Bridge shapes its output to fit."""

    max_message_length: int
    edits: bool = True
    buttons: bool = True
    url_buttons: bool = False
    threads: bool = False
    command_menu: bool = False
    full_history: bool = False
    local: bool = False
    """People read it on this machine (a terminal), where loopback links open."""
    """Show a resumed session's history in full (a terminal) rather than as a one-message summary."""
    weight: Weight = char_weight
    """What one character costs against ``max_message_length`` (Telegram: UTF-16 units; Slack: bytes)."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """A place people talk to an agent: a chat, or a thread (topic) inside one."""

    channel: str
    chat: str
    thread: str | None = None
    group: bool = False

    @property
    def key(self) -> str:
        """The stable id a binding is stored under, e.g. ``telegram:-1001:42``."""
        return ":".join(part for part in (self.channel, self.chat, self.thread) if part is not None)

    @classmethod
    def from_key(cls, key: str) -> Conversation:
        """The conversation a key names (``channel:chat`` or ``channel:chat:thread``)."""
        channel, chat, *thread = key.split(":", 2)
        return cls(channel, chat, thread[0] if thread else None)


@dataclass(frozen=True, slots=True)
class Sender:
    """Who sent an update, in the platform's own ids."""

    id: str
    name: str
    display_name: str = ""
    is_bot: bool = False
    roles: tuple[str, ...] = ()
    """The sender's roles where the platform has them (Discord), for role allowlists."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """An image sent with a message; fetched only if the agent accepts images."""

    mime_type: str
    fetch: Callable[[], Awaitable[bytes]]


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """A person's message (commands included) in a conversation."""

    conversation: Conversation
    sender: Sender
    text: str
    images: tuple[Attachment, ...] = ()
    message_id: str | None = None
    sent_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A press on a button the Bridge sent; ``data`` is the button's ``data``, ``conversation`` where it was pressed.

    The Bridge lets a press answer only a question asked in ``conversation``, so a channel takes it
    from the platform (the chat and thread of the pressed message), never from ``data``.
    """

    conversation: Conversation
    sender: Sender
    data: str
    message: MessageRef | None = None
    """The pressed message, where the platform shows the pressed button on it (so a stale one can be marked expired)."""
    text: str = ""
    """That message's text."""


@dataclass(frozen=True, slots=True)
class Button:
    """A button under a message: an answer (``data``) or a link (``url``)."""

    label: str
    data: str | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class MessageRef:
    """A message the channel sent, so it can be edited."""

    conversation: Conversation
    id: str


@dataclass(frozen=True, slots=True)
class MenuCommand:
    """An entry of a platform's command menu."""

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    """Other names the command answers to, for menus that cannot show its name (Telegram: no dashes)."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """One model a session can switch to (a value of the agent's model config option)."""

    value: str
    name: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class ModelMenu:
    """The models a session offers, and which one it uses now."""

    current: str | None
    choices: tuple[ModelChoice, ...]


class RateLimited(Exception):
    """The platform refused a send or edit for now; try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited; retry after {retry_after:g}s")
        self.retry_after = retry_after


class CannotDelete(Exception):
    """The platform does not let the bot delete that message; the message says so in words for the chat."""


class Unavailable(Exception):
    """The far side could not be reached or failed on its side (network, timeout, server error, rate limit): worth retrying."""


class ChannelMisconfigured(ConfigError):
    """The platform refused for good what the configuration asks of it (a 4xx other than 429: a missing scope, intent or
    permission, an unknown endpoint): a configuration error, so the channel stops rather than retrying."""

    def __init__(self, key: str, platform: str, refusal: str) -> None:
        super().__init__(f"{key}: {platform} refused it ({refusal}); fix this setting and start again")
        self.key = key


class CredentialsRejected(ChannelMisconfigured):
    """The platform refused a configured credential (401, an invalid or revoked token)."""

    def __init__(self, key: str, platform: str) -> None:
        ConfigError.__init__(self, f"{key}: {platform} rejected this credential; put the right value there (it is not shown here)")
        self.key = key


class BridgeError(Exception):
    """What a person asked for cannot be done; the message says why, in words for the chat."""


@dataclass(frozen=True, slots=True)
class BridgeCommand:
    """A bridge command and its argument (empty when none was given)."""

    name: str
    argument: str = ""
