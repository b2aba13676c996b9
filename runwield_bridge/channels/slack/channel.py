"""The Slack channel: slack-bolt receives (Events API on ``[web] listen``, or Socket Mode); slack-sdk sends.

A mention in a channel starts a thread and the thread is the conversation (messages in a thread
with a session need no mention); a direct message needs no mention at all. Bridge commands are
typed in the thread (``@bot /cancel``, since Slack's composer claims a leading slash).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Sequence
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from ..budget import Budgets
from ..contract import ChannelContext, Inbox
from ..types import BridgeError, Button, ButtonPress, CannotDelete, Capabilities, Conversation, IncomingMessage, MenuCommand, MessageRef, RateLimited, Sender
from ..streaming import StreamingReply
from ..webhooks import refuse
from .blocks import blocks
from .events import conversation_of, from_a_person, images, mentions, sent_at, without_mention
from .failures import refusals
from .mrkdwn import mrkdwn_weight, to_mrkdwn
from .payload import UserInfo, request_problem, signed
from .settings import SlackSettings

log = logging.getLogger(__name__)

CHANNEL_RATE = 1.0  # chat.postMessage allows about one message per second in a channel
CHANNEL_BURST = 3
KEEPS_REPLIES = "Slack lets a bot delete only its own messages: delete your reply yourself once it is sent."
FENCE_ROOM = len("\n```")  # a code fence still open mid-stream is closed after the text is measured


class SlackChannel:
    """Channels, threads and DMs; Block Kit buttons for questions and permissions; chat.update of at most 4,000 bytes."""

    name = "slack"
    capabilities = Capabilities(
        max_message_length=4000 - FENCE_ROOM, edits=True, buttons=True, url_buttons=True, threads=True, weight=mrkdwn_weight
    )

    def __init__(self, settings: SlackSettings, context: ChannelContext) -> None:
        self.settings = settings
        self.client = AsyncWebClient(token=settings.bot_token, base_url=settings.api_base_url)
        self.user_client = AsyncWebClient(token=settings.user_token, base_url=settings.api_base_url) if settings.user_token else None
        """Slack as the ``user_token``'s user, who may delete a person's message (the bot may delete only its own)."""
        self.app = AsyncApp(client=self.client, signing_secret=settings.signing_secret)
        self.app.event("message")(self._on_message)
        self.app.event("app_mention")(self._on_message)
        self.app.action(re.compile(r"^wld"))(self._on_action)
        self.budgets = Budgets(CHANNEL_RATE, CHANNEL_BURST, CHANNEL_RATE)
        self._names: dict[str, Sender] = {}
        self._inbox: Inbox | None = None
        self._me = ""
        if settings.signing_secret and not settings.socket_mode:  # the settings ask for a secret unless in Socket Mode
            self._verifier = SignatureVerifier(settings.signing_secret)
            context.web.add_route("POST", settings.events_path, self._events)

    # -- receiving -----------------------------------------------------------

    async def verify(self) -> None:
        """Check the bot token (auth.test, which also tells the bot's user id) and in Socket Mode the app token
        (apps.connections.open, since slack-sdk's socket client retries a refused one forever); CredentialsRejected
        or ChannelMisconfigured if Slack refuses either."""
        with refusals(f"channels.{self.name}.bot_token"):
            self._me = str((await self.client.auth_test())["user_id"])
        if self.user_client is not None:
            with refusals(f"channels.{self.name}.user_token"):
                await self.user_client.auth_test()
        if self.settings.socket_mode:
            with refusals(f"channels.{self.name}.app_token"):
                await self.client.apps_connections_open(app_token=self.settings.app_token or "")

    async def run(self, inbox: Inbox) -> None:
        await self.verify()
        self._inbox = inbox
        try:
            if self.settings.socket_mode:
                await self._socket_mode()
            else:
                await asyncio.Event().wait()  # events arrive at the web server's route
        finally:
            self._inbox = None

    async def _socket_mode(self) -> None:
        """Receive over Slack's WebSocket (``apps.connections.open`` with the app token) until cancelled."""
        handler = AsyncSocketModeHandler(self.app, self.settings.app_token)
        with refusals(f"channels.{self.name}.app_token"):
            await handler.connect_async()
        try:
            await asyncio.Event().wait()
        finally:
            await handler.close_async()

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Slack's POST (events and button clicks): 401 without a valid signature, 400 for a body the channel cannot read."""
        if self._inbox is None:
            return web.Response(status=503, text="not ready")
        try:
            body = (await request.read()).decode()
        except UnicodeDecodeError:
            return refuse(400, "not a Slack request: not UTF-8", "the Slack events route")
        if not signed(self._verifier, body, request.headers):
            return refuse(401, "invalid request", "the Slack events route")
        if problem := request_problem(body, request.content_type):
            return refuse(400, f"not a Slack request: {problem}", "the Slack events route")
        return await to_aiohttp_response(await self.app.async_dispatch(await to_bolt_request(request)))

    async def _on_message(self, event: dict[str, Any]) -> None:
        """A message or mention; each is handled once (Slack sends both for a mention, and retries unanswered events)."""
        inbox, me = self._inbox, self._me
        if inbox is None or not from_a_person(event, me):
            return
        text, thread = event.get("text") or "", event.get("thread_ts")
        conversation = conversation_of(event["channel"], thread)
        if conversation.group and thread is None:
            if not mentions(text, me):
                return
            conversation = conversation_of(event["channel"], event["ts"])  # the mention starts a thread
        elif conversation.group and not mentions(text, me) and not await inbox.is_bound(conversation):
            return
        sender = await self._sender(event["user"])
        message = IncomingMessage(conversation, sender, without_mention(text, me), images(event, self._download), event["ts"], sent_at(event["ts"]))
        async with inbox.first_delivery(f"{event['channel']}:{event['ts']}", conversation, sender) as first:
            if first:
                await inbox.receive_message(message)

    async def _on_action(self, ack: Any, body: dict[str, Any]) -> None:
        """A button click: an answer goes to the Bridge and the presser is told privately; a link is only acknowledged."""
        await ack()
        data, inbox = body["actions"][0].get("value"), self._inbox
        if not data or inbox is None:
            return
        container, user = body.get("container") or {}, body["user"]["id"]
        conversation = conversation_of(container.get("channel_id") or body["channel"]["id"], container.get("thread_ts"))
        message = body.get("message") or {}
        on_it = any(e.get("value") == data for block in message.get("blocks") or () for e in block.get("elements") or () if isinstance(e, dict))
        ref = MessageRef(conversation, str(message["ts"])) if on_it and message.get("ts") else None
        press = ButtonPress(conversation, await self._sender(user), data, ref, message.get("text") or "")
        async with inbox.first_delivery(f"action:{body['trigger_id']}", conversation, press.sender) as first:
            if first:
                notice = await inbox.receive_press(press)
                await self.client.chat_postEphemeral(channel=conversation.chat, user=user, text=notice, thread_ts=conversation.thread)

    async def _sender(self, user: str) -> Sender:
        """The person behind a user id, with their names (looked up once; just the id if ``users.info`` fails in any way)."""
        if user not in self._names:
            try:
                info = UserInfo.model_validate((await self.client.users_info(user=user)).get("user"))
            except Exception as exc:  # names are a nicety: the message goes on with the bare id, whatever went wrong
                log.warning("users.info %s failed (%s); using the bare id", user, _first_line(exc))
                info = UserInfo()
            self._names[user] = Sender(user, info.name or user, info.profile.display_name or info.real_name, info.is_bot)
        return self._names[user]

    async def _download(self, url: str) -> bytes:
        async with aiohttp.ClientSession() as session:
            async with session.get(url, headers={"Authorization": f"Bearer {self.settings.bot_token}"}) as response:
                response.raise_for_status()
                return await response.read()

    # -- sending -------------------------------------------------------------

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        mrkdwn = to_mrkdwn(text)
        sent = await _rate_limited(
            self.client.chat_postMessage(
                channel=conversation.chat,
                thread_ts=conversation.thread,
                text=mrkdwn,
                blocks=blocks(mrkdwn, buttons) or None,
                unfurl_links=False,
                unfurl_media=False,
            )
        )
        return MessageRef(conversation, str(sent["ts"]))

    async def edit(self, message: MessageRef, text: str, buttons: Sequence[Button] = ()) -> None:
        mrkdwn = to_mrkdwn(text)
        await _rate_limited(self.client.chat_update(channel=message.conversation.chat, ts=message.id, text=mrkdwn, blocks=blocks(mrkdwn, buttons)))

    @property
    def keeps_replies(self) -> str | None:
        """Why the reply to a secret question stays in the chat, said in the question's warning: without a
        ``user_token`` (Slack's ``chat.delete`` refuses a person's message to a bot token with ``cant_delete_message``)."""
        return None if self.user_client is not None else KEEPS_REPLIES

    async def delete(self, message: MessageRef) -> None:
        """Delete a person's message as the ``user_token``'s user; CannotDelete (with Slack's reason) where Slack refuses."""
        if self.user_client is None:
            raise CannotDelete(KEEPS_REPLIES)
        try:
            await _rate_limited(self.user_client.chat_delete(channel=message.conversation.chat, ts=message.id))
        except SlackApiError as exc:
            reason = exc.response.get("error") or exc.response.status_code
            raise CannotDelete(
                f"Slack did not let the bridge delete your message ({reason}): the user_token must be of someone allowed to "
                "delete others' messages (a workspace admin or owner), with the chat:write scope."
            ) from None

    async def typing(self, conversation: Conversation) -> None:
        """Slack has no typing indicator for bots."""

    async def set_commands(self, conversation: Conversation, commands: Sequence[MenuCommand]) -> None:
        """Slack has no per-conversation command menu; commands are typed in the thread."""

    async def open_thread(self, conversation: Conversation, title: str) -> Conversation:
        """A new thread in the conversation's channel: a root message titled ``title``, its replies the thread; none in a DM."""
        if not conversation.group:
            raise BridgeError("Slack threads are opened here only in channels, not in a direct message. Use /spawn AGENT --here TASK instead.")
        root = await self.send(conversation_of(conversation.chat, None), f"🧵 {title}")
        return conversation_of(conversation.chat, root.id)

    def open_reply(self, conversation: Conversation) -> StreamingReply:
        budget = self.budgets.for_chat(conversation.chat, conversation.group)
        return StreamingReply(self, conversation, budget, self.settings.edit_interval)

    async def close(self) -> None:
        """Nothing to release: the web client opens an HTTP session per request."""


def _first_line(exc: Exception) -> str:
    """An error in one short line (Slack's errors go on with the whole response body)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


async def _rate_limited(call: Awaitable[Any]) -> Any:
    """Slack's HTTP 429 (with ``Retry-After``) as the channel contract's RateLimited."""
    try:
        return await call
    except SlackApiError as exc:
        if exc.response.status_code != 429:
            raise
        raise RateLimited(float(exc.response.headers.get("Retry-After", 1))) from None
