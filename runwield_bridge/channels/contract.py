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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .settings import ChannelSettings
from .types import Button, ButtonPress, Capabilities, Conversation, IncomingMessage, MenuCommand, MessageRef, ModelMenu, Sender

if TYPE_CHECKING:
    from aiohttp import web


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

    async def listen_alone(self, listen: Callable[[], Awaitable[None]]) -> None:
        """Run ``listen``, a listener the platform lets only one client run at a time (Telegram's long polling), while
        no other instance of the bridge on the same database runs it: at once where the bridge runs alone."""

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
        """Listen for updates until cancelled. Raise ``Unavailable`` (supervisor.py) for what may pass (network,
        timeouts, the platform's 5xx and rate limits): the supervisor restarts it with backoff. Raise
        ``CredentialsRejected`` or ``ChannelMisconfigured`` for the platform's final refusal: the channel stops.
        A channel with credentials may also offer ``async verify()``, the same check ``run`` starts with, which
        ``wld doctor`` calls. A channel that can delete a person's message offers ``async delete(message: MessageRef)``
        (raising ``CannotDelete`` where the platform refuses): the reply to a secret question is deleted with it. One whose
        platform does not let it delete a person's message (as configured) says why in ``keeps_replies`` instead, and
        nothing is tried."""

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


@runtime_checkable
class ThreadOpener(Protocol):
    """A channel that can open a thread (a Discord thread, a Slack thread, a Telegram forum topic) for ``/spawn --thread``."""

    async def open_thread(self, conversation: Conversation, title: str) -> Conversation:
        """Open a thread titled ``title`` where ``conversation`` is (beside it, if it is a thread itself) and return it as a
        conversation; raise BridgeError saying plainly why where the platform cannot (a private chat, a group without topics)."""


class WebRoutes(Protocol):
    """The process's one web server, as a channel that receives webhooks sees it."""

    @property
    def base_url(self) -> str:
        """Where the server is reached from outside (``[web] public_url``, else its listen address)."""

    def add_route(self, method: str, path: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> None:
        """Serve ``path`` with ``handler``."""


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a channel factory gets besides its config section: the shared web server for webhooks."""

    web: WebRoutes


ChannelFactory = Callable[[dict[str, Any], ChannelContext], Channel]
