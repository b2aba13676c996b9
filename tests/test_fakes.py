"""Proof that the local platform fakes work with the real PTB, discord.py and slack-bolt code."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest
import pytest_asyncio
from aiohttp import web
from discord import app_commands
from fakes.base import serve_app
from fakes.discord_api import DiscordFake
from fakes.slack_api import SlackFake
from fakes.telegram_api import TelegramFake
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, RetryAfter
from telegram.ext import Application, ApplicationBuilder, CallbackQueryHandler, ContextTypes, MessageHandler, filters
from waiting import PATIENCE

pytestmark = pytest.mark.asyncio


# -- Telegram ---------------------------------------------------------------


@pytest_asyncio.fixture
async def telegram() -> AsyncIterator[TelegramFake]:
    async with TelegramFake() as fake:
        yield fake


def ptb_app(fake: TelegramFake) -> Application:
    return ApplicationBuilder().token(fake.token).base_url(fake.base_url).base_file_url(fake.base_file_url).build()


@contextlib.asynccontextmanager
async def polling(app: Application) -> AsyncIterator[Application]:
    async with app:
        await app.start()
        await app.updater.start_polling(poll_interval=0.0, timeout=1)
        try:
            yield app
        finally:
            await app.updater.stop()
            await app.stop()


async def test_telegram_polling_text_message_gets_reply(telegram: TelegramFake) -> None:
    app = ptb_app(telegram)

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("OK", callback_data="ok")]])
        await update.effective_message.reply_text(f"echo: {update.effective_message.text}", reply_markup=keyboard)

    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    async with polling(app):
        pushed = telegram.push_message(42, 42, "hello")
        call = await telegram.wait_for_call("sendMessage")

    assert call["chat_id"] == 42
    assert call["text"] == "echo: hello"
    assert call["reply_markup"] == {"inline_keyboard": [[{"text": "OK", "callback_data": "ok"}]]}
    assert telegram.calls_to("getMe") and telegram.calls_to("deleteWebhook")
    [sent] = telegram.bot_messages(42)
    assert sent["message_id"] == pushed["message_id"] + 1
    assert sent["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "ok"


async def test_telegram_callback_query_reaches_handler(telegram: TelegramFake) -> None:
    app = ptb_app(telegram)
    seen: list[str] = []

    async def on_click(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        seen.append(update.callback_query.data)
        await update.callback_query.answer("done")
        await update.callback_query.edit_message_text("clicked")

    app.add_handler(CallbackQueryHandler(on_click, pattern="^approve:"))
    async with polling(app):
        keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Approve", callback_data="approve:1")]])
        sent = await app.bot.send_message(-100123, "Approve?", reply_markup=keyboard)
        telegram.push_callback_query(-100123, 7, "approve:1", message_id=sent.message_id)
        answer = await telegram.wait_for_call("answerCallbackQuery")
        edit = await telegram.wait_for_call("editMessageText")
        with pytest.raises(BadRequest, match="not modified"):
            await app.bot.edit_message_text("clicked", chat_id=-100123, message_id=sent.message_id)

    assert seen == ["approve:1"]
    assert answer["text"] == "done"
    assert (edit["chat_id"], edit["message_id"], edit["text"]) == (-100123, sent.message_id, "clicked")
    assert "reply_markup" not in telegram.messages[(-100123, sent.message_id)]


async def test_telegram_forum_photo_download_and_threaded_reply(telegram: TelegramFake) -> None:
    telegram.add_chat(-100777, "supergroup", title="Forum", is_forum=True)
    app = ptb_app(telegram)
    downloaded: list[bytes] = []

    async def on_photo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        file = await message.photo[-1].get_file()
        downloaded.append(bytes(await file.download_as_bytearray()))
        await context.bot.send_chat_action(message.chat_id, "typing", message_thread_id=message.message_thread_id)
        await message.reply_text(f"got {message.caption}")

    app.add_handler(MessageHandler(filters.PHOTO, on_photo))
    async with polling(app):
        telegram.push_photo(-100777, 5, b"\x89PNG fake bytes", caption="look", message_thread_id=99)
        reply = await telegram.wait_for_call("sendMessage")

    assert downloaded == [b"\x89PNG fake bytes"]
    assert telegram.last_call("sendChatAction")["message_thread_id"] == 99
    assert reply["message_thread_id"] == 99 and reply["text"] == "got look"
    assert telegram.bot_messages(-100777)[-1]["is_topic_message"] is True


async def test_telegram_429_surfaces_as_retry_after(telegram: TelegramFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # RetryAfter.retry_after as timedelta, no deprecation warning
    telegram.inject_rate_limit("sendMessage", retry_after=7)
    app = ptb_app(telegram)
    async with app:
        with pytest.raises(RetryAfter) as excinfo:
            await app.bot.send_message(1, "too fast")
        await app.bot.send_message(1, "later")

    assert excinfo.value.retry_after == dt.timedelta(seconds=7)
    assert [c.status for c in telegram.calls_to("sendMessage")] == [429, 200]


async def test_telegram_webhook_post_helper(telegram: TelegramFake) -> None:
    app = ptb_app(telegram)
    replies: list[str] = []

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        replies.append(update.effective_message.text)

    app.add_handler(MessageHandler(filters.TEXT, echo))

    async def webhook(request: web.Request) -> web.Response:
        if request.headers.get("X-Telegram-Bot-Api-Secret-Token") != "s3cret":
            return web.Response(status=403)
        await app.process_update(Update.de_json(await request.json(), app.bot))
        return web.Response()

    web_app = web.Application()
    web_app.router.add_post("/telegram", webhook)
    async with app, serve_app(web_app) as base:
        message = telegram.build_message(3, 3, "via webhook")
        ok = await telegram.post_webhook_update(f"{base}/telegram", {"message": message}, secret_token="s3cret")
        denied = await telegram.post_webhook_update(f"{base}/telegram", {"message": message}, secret_token="nope")

    assert (ok.status, denied.status) == (200, 403)
    assert replies == ["via webhook"]


# -- Discord ----------------------------------------------------------------


@pytest_asyncio.fixture
async def discord_fake() -> AsyncIterator[DiscordFake]:
    async with DiscordFake() as fake:
        yield fake


def discord_client(**options: Any) -> discord.Client:
    intents = discord.Intents.default()
    intents.message_content = True
    return discord.Client(intents=intents, guild_ready_timeout=0.05, **options)


@contextlib.asynccontextmanager
async def connected(client: discord.Client, fake: DiscordFake) -> AsyncIterator[discord.Client]:
    ready = asyncio.Event()
    client.event(_on_ready_setter(ready))
    task = asyncio.create_task(client.start(fake.token))
    try:
        await asyncio.wait_for(ready.wait(), PATIENCE)
        yield client
    finally:
        await client.close()
        await asyncio.wait_for(task, PATIENCE)


def _on_ready_setter(ready: asyncio.Event) -> Any:
    async def on_ready() -> None:
        ready.set()

    return on_ready


async def test_discord_client_connects_and_replies(discord_fake: DiscordFake) -> None:
    thread = discord_fake.add_thread(discord_fake.channel_id, "work")
    client = discord_client()
    received: list[discord.Message] = []

    @client.event
    async def on_message(message: discord.Message) -> None:
        if message.author.bot:
            return
        received.append(message)
        data = await message.attachments[0].read() if message.attachments else b""
        await message.channel.send(f"echo: {message.content} ({len(data)} bytes)")

    async with connected(client, discord_fake):
        assert client.user.id == discord_fake.bot_id
        assert client.get_channel(discord_fake.channel_id).name == "general"
        attachment = discord_fake.add_attachment("note.txt", b"12345", content_type="text/plain")
        await discord_fake.inject_message(f"<@{discord_fake.bot_id}> hi", attachments=[attachment])
        first = await discord_fake.wait_for_call("send_message")
        mark = discord_fake.mark()
        await discord_fake.inject_message("in thread", channel_id=int(thread["id"]))
        second = await discord_fake.wait_for_call("send_message", since=mark)

    assert discord_fake.calls_to("gateway.IDENTIFY")[0]["d"]["token"] == discord_fake.token
    assert received[0].mentions[0].id == discord_fake.bot_id
    assert first.path_params["channel_id"] == str(discord_fake.channel_id)
    assert first["content"] == f"echo: <@{discord_fake.bot_id}> hi (5 bytes)"
    assert isinstance(received[1].channel, discord.Thread)
    assert second.path_params["channel_id"] == thread["id"]
    assert discord_fake.bot_messages(int(thread["id"]))[0]["content"] == "echo: in thread (0 bytes)"


async def test_discord_button_interaction_and_slash_command(discord_fake: DiscordFake) -> None:
    client = discord_client()
    tree = app_commands.CommandTree(client)
    clicks: list[str] = []

    @tree.command(name="ping", description="Ping the bot")
    async def ping(interaction: discord.Interaction, text: str) -> None:
        await interaction.response.send_message(f"pong {text}")

    class Approve(discord.ui.View):
        @discord.ui.button(label="Approve", custom_id="approve")
        async def approve(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
            clicks.append(interaction.user.name)
            await interaction.response.send_message("approved", ephemeral=True)

    async with connected(client, discord_fake):
        synced = await tree.sync()
        sent = await client.get_channel(discord_fake.channel_id).send("Approve?", view=Approve(timeout=None))
        click = await discord_fake.inject_component_click("approve", message_id=sent.id)
        callback = await discord_fake.wait_for_call("create_interaction_response")
        command = await discord_fake.inject_slash_command("ping", {"text": "hi"})
        ping_reply = await discord_fake.wait_for_call(
            "create_interaction_response", lambda c: c.path_params["interaction_id"] == str(command.id)
        )

    assert [c.name for c in synced] == ["ping"] and discord_fake.global_commands[0]["name"] == "ping"
    assert clicks == ["alice"]
    assert sent.components[0].children[0].custom_id == "approve"
    assert callback.path_params["interaction_id"] == str(click.id)
    assert callback["type"] == 4 and callback["data"]["content"] == "approved"
    assert callback["data"]["flags"] == 64
    assert ping_reply["data"]["content"] == "pong hi"


async def test_discord_rate_limit_is_retried_or_raised(discord_fake: DiscordFake) -> None:
    client = discord_client(max_ratelimit_timeout=30)
    async with connected(client, discord_fake):
        channel = client.get_channel(discord_fake.channel_id)
        discord_fake.inject_rate_limit("send_message", retry_after=0.05)
        await channel.send("eventually")
        discord_fake.inject_rate_limit("send_message", retry_after=60)
        with pytest.raises(discord.RateLimited) as excinfo:
            await channel.send("never")

    assert [c.status for c in discord_fake.calls_to("send_message")] == [429, 200, 429]
    assert excinfo.value.retry_after == 60


# -- Slack ------------------------------------------------------------------


@pytest_asyncio.fixture
async def slack() -> AsyncIterator[SlackFake]:
    async with SlackFake() as fake:
        yield fake


@contextlib.asynccontextmanager
async def serve_bolt(app: AsyncApp) -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    web_app = web.Application()
    web_app.router.add_post("/slack/events", handle)
    async with serve_app(web_app) as base:
        yield f"{base}/slack/events"


def bolt_app(fake: SlackFake) -> AsyncApp:
    # With client=..., bolt takes the token from the client and ignores token=.
    return AsyncApp(signing_secret=fake.signing_secret, client=fake.client())


async def test_slack_signed_message_event_gets_threaded_reply(slack: SlackFake) -> None:
    app = bolt_app(slack)
    seen: list[dict[str, Any]] = []

    @app.event("message")
    async def on_message(event: dict[str, Any], say: Any) -> None:
        seen.append(event)
        await say(text=f"echo: {event['text']}", thread_ts=event.get("thread_ts") or event["ts"])

    async with serve_bolt(app) as url:
        result = await slack.post_message(url, "hello", thread_ts="1700000000.000100")
        call = await slack.wait_for_call("chat.postMessage")

    assert result.status == 200
    assert seen[0]["user"] == slack.user_id
    assert (call["channel"], call["text"], call["thread_ts"]) == (slack.channel_id, "echo: hello", "1700000000.000100")
    assert call.headers["Authorization"] == f"Bearer {slack.token}"
    assert slack.method_names()[0] == "auth.test"
    assert slack.bot_messages()[0]["thread_ts"] == "1700000000.000100"


async def test_slack_bad_signature_is_rejected(slack: SlackFake) -> None:
    app = bolt_app(slack)
    seen: list[Any] = []

    @app.event("message")
    async def on_message(event: dict[str, Any]) -> None:
        seen.append(event)

    async with serve_bolt(app) as url:
        result = await slack.post_message(url, "forged", bad_signature=True)
        await asyncio.sleep(0.05)

    assert result.status == 401
    assert seen == [] and slack.calls == []


async def test_slack_block_action_and_app_mention(slack: SlackFake) -> None:
    app = bolt_app(slack)
    mentions: list[str] = []

    @app.action("approve")
    async def on_approve(ack: Any, body: dict[str, Any], client: Any, respond: Any) -> None:
        await ack()
        value = body["actions"][0]["value"]
        await client.chat_update(channel=body["channel"]["id"], ts=body["message"]["ts"], text=value)
        await respond(text="thanks", replace_original=False)

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        mentions.append(event["text"])

    async with serve_bolt(app) as url:
        posted = await slack.client().chat_postMessage(channel=slack.channel_id, text="Approve?", blocks=[
            {"type": "actions", "elements": [{"type": "button", "action_id": "approve", "value": "approved!",
                                              "text": {"type": "plain_text", "text": "OK"}}]}])  # fmt: skip
        result = await slack.post_block_action(url, "approve", value="approved!")
        update = await slack.wait_for_call("chat.update")
        respond = await slack.wait_for_call("response_url")
        mention = await slack.post_app_mention(url, "help")
        await slack.wait_until(lambda: bool(mentions))

    assert result.status == 200 and mention.status == 200
    assert (update["ts"], update["text"]) == (posted["ts"], "approved!")
    assert respond["text"] == "thanks"
    assert mentions == [f"<@{slack.bot_user_id}> help"]


async def test_slack_rate_limit_and_file_download(slack: SlackFake) -> None:
    slack.inject_rate_limit("chat.postMessage", retry_after=3)
    with pytest.raises(SlackApiError) as excinfo:
        await slack.client().chat_postMessage(channel=slack.channel_id, text="x")
    assert excinfo.value.response.status_code == 429
    assert excinfo.value.response.headers["Retry-After"] == "3"
    assert excinfo.value.response["error"] == "ratelimited"

    file = slack.add_file("pic.png", b"png-bytes")
    async with aiohttp.ClientSession() as session:
        async with session.get(file["url_private"], headers={"Authorization": f"Bearer {slack.token}"}) as resp:
            assert await resp.read() == b"png-bytes"
        async with session.get(file["url_private"]) as resp:
            assert resp.content_type == "text/html"
    assert (await slack.client().users_info(user=slack.user_id))["user"]["name"] == "alice"
