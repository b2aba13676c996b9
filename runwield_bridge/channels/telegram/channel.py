"""The Telegram channel: python-telegram-bot's Bot for sending, long polling or a checked webhook for receiving."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from aiohttp import web
from telegram import (
    Bot,
    BotCommand,
    BotCommandScopeChat,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Update,
)
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError
from telegram.ext import Updater
from telegram.request import HTTPXRequest
from telegram.warnings import PTBDeprecationWarning

from ...redaction import keep_secret
from ..background import Background
from ..budget import Budgets
from ..bridge_commands import BRIDGE_COMMANDS
from ..chunking import utf16_weight
from ..contract import ChannelContext, Inbox
from ..types import BridgeError, Button, CannotDelete, Capabilities, Conversation, MenuCommand, MessageRef, RateLimited, Unavailable
from ..streaming import StreamingReply
from ..webhooks import misfit, refuse
from .failures import PollingRequest, refusals, sorted_out
from .html import to_html
from .payload import WebhookUpdate
from .settings import TelegramSettings
from .events import BotIdentity, message_event, press_event

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ["message", "callback_query"]
PRIVATE_CHAT_RATE = 1.0  # messages per second Telegram lets a bot send one chat
GROUP_CHAT_RATE = 20 / 60
CHAT_BURST = 3
TOPIC_NAME_LENGTH = 128
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")
_FALLBACK_TO_PLAIN = ("can't parse entities", "message is too long", "text is too long")


class TelegramChannel:
    """Private chats, groups and forum topics; inline keyboards for questions and permissions."""

    name = "telegram"
    capabilities = Capabilities(
        max_message_length=4096, edits=True, buttons=True, url_buttons=True, threads=True, command_menu=True, weight=utf16_weight
    )

    def __init__(self, settings: TelegramSettings, context: ChannelContext) -> None:
        self.settings = settings
        self.web = context.web
        self.bot = Bot(
            settings.token,
            base_url=settings.api_base_url,
            base_file_url=settings.files_url,
            request=HTTPXRequest(connection_pool_size=32),
            get_updates_request=PollingRequest(read_timeout=settings.poll_timeout + 10),
        )
        self.budgets = Budgets(PRIVATE_CHAT_RATE, CHAT_BURST, GROUP_CHAT_RATE)
        self.background = Background("telegram")
        self._inbox: Inbox | None = None
        self._me: BotIdentity | None = None
        self._secret = settings.webhook_secret or webhook_secret(settings.token)
        keep_secret(self._secret)  # PTB logs setWebhook's parameters at DEBUG
        if settings.mode == "webhook":
            self.web.add_route("POST", settings.webhook_path, self._webhook)

    # -- receiving -----------------------------------------------------------

    async def verify(self) -> None:
        """Check the token with Telegram (getMe); CredentialsRejected or ChannelMisconfigured if Telegram refuses it."""
        with refusals(self.name, f"channels.{self.name}.token"):
            await self.bot.initialize()

    async def run(self, inbox: Inbox) -> None:
        await self.verify()
        self._me = BotIdentity(self.bot.id, self.bot.username)
        await self._offer_commands()
        self._inbox = inbox
        try:
            if self.settings.mode == "polling":  # Telegram answers one poller per bot: one instance polls at a time
                await inbox.listen_alone(self._poll)
            else:
                with refusals(self.name, "web.public_url"):  # Telegram refuses a webhook URL it cannot use (not HTTPS, say)
                    await self.bot.set_webhook(
                        f"{self.web.base_url}{self.settings.webhook_path}", secret_token=self._secret, allowed_updates=ALLOWED_UPDATES
                    )
                await asyncio.Event().wait()
        finally:
            self._inbox = None

    async def _poll(self) -> None:
        """Long polling until cancelled; python-telegram-bot retries getUpdates itself, and a refusal for good ends it."""
        queue: asyncio.Queue[object] = asyncio.Queue()
        updater = Updater(self.bot, queue)

        def on_error(exc: TelegramError) -> None:  # called by the updater before it retries
            failure = sorted_out(exc, self.name, f"channels.{self.name}.token")
            if isinstance(failure, Unavailable):
                log.warning("channel %s: %s; polling again", self.name, failure)
            else:
                queue.put_nowait(failure)

        async with updater:
            with refusals(self.name, f"channels.{self.name}.token"):
                await updater.start_polling(timeout=self.settings.poll_timeout, allowed_updates=ALLOWED_UPDATES, error_callback=on_error)
            try:
                while True:
                    update = await queue.get()
                    if isinstance(update, Exception):
                        raise update
                    if isinstance(update, Update):
                        self._dispatch(update)
            finally:
                if updater.running:
                    await updater.stop()

    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        """Telegram's POST: the secret token must match (else 403, and nothing is read); a body that is not an update gets 400."""
        given = request.headers.get(SECRET_HEADER, "").encode("utf-8", "surrogateescape")  # the bytes as sent, UTF-8 or not
        if not hmac.compare_digest(given, self._secret.encode()):
            return web.Response(status=403, text="forbidden")
        if self._inbox is None:
            return web.Response(status=503, text="not ready")
        try:
            body = await request.json()
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the JSON parser goes
            return refuse(400, f"not JSON: {exc}", "the Telegram webhook")
        if problem := misfit(WebhookUpdate, body):
            return refuse(400, f"not an update: {problem}", "the Telegram webhook")
        try:
            update = Update.de_json(body, self.bot)
        except (ValueError, TypeError, KeyError) as exc:
            return refuse(400, f"not an update: {exc}", "the Telegram webhook")
        self._dispatch(update)
        return web.Response(text="ok")

    def _dispatch(self, update: Update) -> None:
        """Handle updates in the order they came; each once, even when redelivered after a restart."""
        self.background.spawn(self._handle(update), f"update:{update.update_id}")

    async def _handle(self, update: Update) -> None:
        inbox, me = self._inbox, self._me
        if inbox is None or me is None:
            return
        if message := message_event(update, self.bot, me, self.settings.require_mention):
            async with inbox.first_delivery(str(update.update_id), message.conversation, message.sender) as first:
                if first:
                    await inbox.receive_message(message)
        elif press := press_event(update):
            async with inbox.first_delivery(str(update.update_id), press.conversation, press.sender) as first:
                if first:
                    notice = await inbox.receive_press(press)
                    assert update.callback_query is not None
                    await self.bot.answer_callback_query(update.callback_query.id, text=notice)

    # -- sending -------------------------------------------------------------

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        thread = int(conversation.thread) if conversation.thread else None
        sent = await self._post(self.bot.send_message, text, buttons, chat_id=int(conversation.chat), message_thread_id=thread)
        return MessageRef(conversation, str(sent.message_id))

    async def edit(self, message: MessageRef, text: str, buttons: Sequence[Button] = ()) -> None:
        chat = int(message.conversation.chat)
        try:
            await self._post(self.bot.edit_message_text, text, buttons, chat_id=chat, message_id=int(message.id))
        except BadRequest as exc:
            if "not modified" not in exc.message.lower():
                raise

    async def delete(self, message: MessageRef) -> None:
        """Delete a message (a person's too: in a private chat always, in a group where the bot may delete messages)."""
        try:
            await _rate_limited(self.bot.delete_message(int(message.conversation.chat), int(message.id)))
        except BadRequest as exc:
            raise CannotDelete(f"Telegram did not let the bot delete your message ({exc.message}); in a group it needs the right to delete messages.") from None

    async def typing(self, conversation: Conversation) -> None:
        thread = int(conversation.thread) if conversation.thread else None
        await _rate_limited(self.bot.send_chat_action(int(conversation.chat), ChatAction.TYPING, message_thread_id=thread))

    async def set_commands(self, conversation: Conversation, commands: Sequence[MenuCommand]) -> None:
        """The chat's command menu; names Telegram cannot show (uppercase, dashes) are left out of it."""
        scope = BotCommandScopeChat(int(conversation.chat))
        await _rate_limited(self.bot.set_my_commands(_bot_commands(commands), scope=scope))

    async def open_thread(self, conversation: Conversation, title: str) -> Conversation:
        """A new forum topic in the group (``createForumTopic``); refused in a private chat and in a group without topics."""
        if not conversation.group:
            raise BridgeError("Telegram has topics only in groups, not in a private chat. Use /spawn AGENT --here TASK instead.")
        try:
            topic = await _rate_limited(self.bot.create_forum_topic(int(conversation.chat), title[:TOPIC_NAME_LENGTH]))
        except BadRequest as exc:
            raise BridgeError(
                f"Telegram did not open a topic here ({exc.message}): this group needs Topics turned on, and the bot the "
                "right to manage them. Use /spawn AGENT --here TASK instead."
            ) from None
        return replace(conversation, thread=str(topic.message_thread_id))

    def open_reply(self, conversation: Conversation) -> StreamingReply:
        budget = self.budgets.for_chat(conversation.chat, conversation.group)
        return StreamingReply(self, conversation, budget, self.settings.edit_interval)

    async def close(self) -> None:
        await self.background.close()
        await self.bot.shutdown()

    async def _offer_commands(self) -> None:
        try:
            await self.bot.set_my_commands(_bot_commands(BRIDGE_COMMANDS))
        except Exception as exc:  # a menu is a convenience; the listener runs without it
            log.warning("could not set the Telegram command menu: %s", exc)

    async def _post(self, method: Callable[..., Awaitable[Any]], text: str, buttons: Sequence[Button], **target: Any) -> Any:
        """Send as HTML; if Telegram rejects the markup, send the same text plain."""
        common = {"reply_markup": _keyboard(buttons), "link_preview_options": LinkPreviewOptions(is_disabled=True), **target}
        try:
            return await _rate_limited(method(text=to_html(text), parse_mode=ParseMode.HTML, **common))
        except BadRequest as exc:
            if not any(reason in exc.message.lower() for reason in _FALLBACK_TO_PLAIN):
                raise
            return await _rate_limited(method(text=text, **common))


def webhook_secret(token: str) -> str:
    """The secret Telegram sends with each webhook update when none is configured: made from the bot's token, so
    every instance sharing the bot (and its webhook) expects the same one, and nobody without the token can guess it."""
    digest = hmac.new(token.encode(), b"wld telegram webhook secret", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


async def _rate_limited(call: Awaitable[Any]) -> Any:
    """Telegram's 429 as the channel contract's RateLimited."""
    try:
        return await call
    except RetryAfter as exc:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PTBDeprecationWarning)
            wait = exc.retry_after
        raise RateLimited(wait.total_seconds() if isinstance(wait, timedelta) else float(wait)) from None


def _keyboard(buttons: Sequence[Button]) -> InlineKeyboardMarkup | None:
    """One row for a few short buttons, else one button per row."""
    if not buttons:
        return None
    keys = [InlineKeyboardButton(b.label, url=b.url) if b.url else InlineKeyboardButton(b.label, callback_data=b.data) for b in buttons]
    if len(keys) <= 4 and all(len(b.label) <= 14 for b in buttons):
        return InlineKeyboardMarkup([keys])
    return InlineKeyboardMarkup([[key] for key in keys])


def _bot_commands(commands: Sequence[MenuCommand]) -> list[BotCommand]:
    """The menu entries: each command under the first of its names Telegram can show (``load_plan`` for ``load-plan``)."""
    entries: dict[str, BotCommand] = {}
    for command in commands:
        name = next((n for n in (command.name, *command.aliases) if _COMMAND_NAME.match(n)), None)
        if name is not None and name not in entries:
            entries[name] = BotCommand(name, (command.description or name)[:256])
    return list(entries.values())

