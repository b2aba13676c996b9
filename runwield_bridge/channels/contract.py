"""The channel plugin contract: what a channel hands the Bridge, and what the Bridge asks of a channel.

A channel turns platform updates into ``IncomingMessage`` and ``ButtonPress`` events for its
``Inbox``, and renders the Bridge's output within its ``Capabilities``. It speaks ACP only through
the Bridge; it never touches an agent or the Session Host itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..config import ConfigError
from .chunker import Weight, char_weight

if TYPE_CHECKING:
    from ..web.server import WebServer
    from .settings import ChannelSettings


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


class CredentialsRejected(ConfigError):
    """The platform refused a configured credential: a configuration error, so the channel stops rather than retrying."""

    def __init__(self, key: str, platform: str) -> None:
        super().__init__(f"{key}: {platform} rejected this credential; put the right value there (it is not shown here)")
        self.key = key


class ReplyView(Protocol):
    """How one turn's ``session/update`` stream is shown in a conversation."""

    def update(self, update: Any) -> None:
        """Take one ACP session update; must not block (rendering happens in the background)."""

    async def pause(self) -> None:
        """A question is about to be shown: deliver what arrived as final; later updates go into new messages below it."""

    async def finish(self, stop_reason: str | None = None, error: str | None = None) -> None:
        """Show the end of the turn (stop reason or error) and return once everything is delivered."""


class Inbox(Protocol):
    """The Bridge as one channel sees it."""

    def first_delivery(self, update_id: str, conversation: Conversation, sender: Sender) -> AbstractAsyncContextManager[bool]:
        """Claim a platform update before handling it: True the first time, False for a redelivery (retry, resume, restart)."""

    async def receive_message(self, message: IncomingMessage) -> asyncio.Task[None] | None:
        """Handle a message; returns the turn it started, if any, without waiting for it."""

    async def receive_press(self, press: ButtonPress) -> str:
        """Handle a button press; returns a short notice for the person who pressed."""

    async def new_session(self, conversation: Conversation, agent: str | None = None, cwd: str | None = None) -> str:
        """Bind the conversation to a new session; returns its id (raises BridgeError)."""

    async def resume(self, conversation: Conversation, session_id: str) -> str:
        """Bind the conversation to an existing session through ``session/load`` (raises BridgeError)."""

    async def cancel(self, conversation: Conversation) -> bool:
        """Cancel the running turn, if any; True if there was one."""

    def awaiting_answer(self, conversation: Conversation) -> bool:
        """Whether a question or permission request waits for a typed answer here."""

    def allows(self, sender: Sender, conversation: Conversation) -> bool:
        """Whether the allowlist lets this person in here (e.g. before opening a thread for them)."""

    async def is_bound(self, conversation: Conversation) -> bool:
        """Whether the conversation has a session, so its messages need not mention the bot."""

    async def models(self, conversation: Conversation) -> ModelMenu | None:
        """The session's model choices (opening the session if needed); None if the agent offers none (raises BridgeError)."""

    async def choose_model(self, conversation: Conversation, value: str) -> str:
        """Switch the session's model; returns what to tell the person (raises BridgeError)."""


class Channel(Protocol):
    """A chat platform. Holds its platform client; is not one."""

    name: str
    capabilities: Capabilities
    settings: ChannelSettings

    async def run(self, inbox: Inbox) -> None:
        """Listen for updates until cancelled (raise to be restarted by the supervisor; raise CredentialsRejected,
        a configuration error, to stop for good). A channel with credentials may also offer ``async verify()``,
        the same check ``run`` starts with, which ``wld doctor`` calls."""

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        """Send a message (raises RateLimited)."""

    async def edit(self, message: MessageRef, text: str, buttons: Sequence[Button] = ()) -> None:
        """Replace a sent message's text and buttons (raises RateLimited)."""

    async def typing(self, conversation: Conversation) -> None:
        """Show that the agent is working (thinking) for a few seconds."""

    async def set_commands(self, conversation: Conversation, commands: Sequence[MenuCommand]) -> None:
        """Offer these commands in the platform's command menu for this conversation."""

    def open_reply(self, conversation: Conversation) -> ReplyView:
        """A view for one turn's streamed reply."""

    async def close(self) -> None:
        """Release the platform client."""


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a channel factory gets besides its config section: the shared web server for webhooks."""

    web: WebServer


ChannelFactory = Callable[[dict[str, Any], ChannelContext], Channel]
