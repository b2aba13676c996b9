"""Running the real Bridge with real discord.py, slack-bolt and python-telegram-bot against the local fakes; each
platform's world answers the same calls (mention, buttons, click, reply_containing, ...), so one journey runs on all
three."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from discord.gateway import DiscordWebSocket
from discord.http import Route

from runwield_bridge.app import App, agent_endpoints
from runwield_bridge.bridge.runner import BridgeService
from runwield_bridge.supervision import Supervisor
from runwield_bridge.config import Settings
from tests.bridge_kit import FAST_BACKOFF, OWNER, bridge_world, telegram_section
from tests.fakes.base import FakeServer, HttpResult, RecordedCall
from tests.fakes.discord_api import FLAG_EPHEMERAL, DiscordFake, FakeInteraction
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.wld_process import WldProcess
from waiting import PATIENCE, POLL, until


@contextlib.asynccontextmanager
async def running_bridge(channels: dict[str, dict[str, Any]], **settings: Any) -> AsyncIterator[tuple[BridgeService, App]]:
    """``wld bridge`` in this process: the given channel sections, the store a real SQLite file under WLD_HOME."""
    config = Settings.model_validate({"web": {"listen": "127.0.0.1:0"}, "channels": channels, **settings})
    app = await App.start(config)
    try:
        async with BridgeService(config, app.plugins, app.store.bridge, agent_endpoints(config, app.session_host), start_timeout=PATIENCE, backoff=FAST_BACKOFF) as service:
            yield service, app
    finally:
        await app.close()


async def stopped(supervisor: Supervisor, timeout: float = PATIENCE) -> None:
    """Return once the supervised task has ended; AssertionError if it is still being retried after ``timeout``."""
    await until(lambda: not supervisor.running, f"{supervisor.name} to stop instead of retrying", timeout)


async def settled(fake: FakeServer, find: Callable[[], list[dict[str, Any]]], timeout: float) -> dict[str, Any]:
    """The last message ``find`` returns, once there is one."""
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = find()
        return bool(found)

    await fake.wait_until(seen, timeout=timeout)
    return found[-1]


DEFERRED = 5
"""An interaction response that acknowledges it now and answers later (``DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE``)."""
QUICK = {"edit_interval": 0.05, "sender_context": "never"}
"""Section keys for tests: fast edits, prompts without sender context (so replies echo the text alone)."""


def shows(said: str, text: str, final: bool) -> bool:
    """Whether a message says ``text``; ``final``: and is done streaming (no cursor at its end)."""
    return text in said and not (final and said.endswith("…"))


# -- Discord -------------------------------------------------------------------


def discord_section(fake: DiscordFake, **overrides: Any) -> dict[str, Any]:
    """``[channels.discord]`` pointed at the fake; alice (the fake's user) is allowed."""
    return {
        "token": fake.token,
        "api_base_url": fake.api_base,
        "gateway_url": fake.gateway_url,
        "allowed_users": [fake.user_id],
        **QUICK,
        **overrides,
    }


async def told(fake: DiscordFake, interaction: FakeInteraction) -> str:
    """What the bot told the person who made the interaction: its response, or the follow-up of a deferred one."""
    await fake.wait_until(lambda: bool(interaction.responses), timeout=PATIENCE)
    response = interaction.responses[0]
    if response["type"] != DEFERRED:
        return str(response["data"].get("content", ""))
    found: list[RecordedCall] = []

    def followed_up() -> bool:
        found[:] = [c for c in fake.calls_to("create_followup") if c.path_params["token"] == interaction.token]
        return bool(found)

    await fake.wait_until(followed_up, timeout=PATIENCE)
    return str(found[0]["content"])


class DiscordWorld:
    """The Discord fake and a Bridge whose Discord channel is connected to it."""

    def __init__(self, fake: DiscordFake, app: App) -> None:
        self.fake = fake
        self.app = app

    async def mention(self, text: str, *, user: int | None = None, channel: int | None = None, **kwargs: Any) -> int:
        """@bot in a channel; returns the message id, which is also the id of the thread opened on it."""
        message = await self.fake.inject_message(f"<@{self.fake.bot_id}> {text}", author_id=user, channel_id=channel, **kwargs)
        return int(message["id"])

    async def say(self, channel: int, text: str, *, user: int | None = None, **kwargs: Any) -> None:
        await self.fake.inject_message(text, channel_id=channel, author_id=user, **kwargs)

    async def reply_containing(self, channel: int, text: str, timeout: float = PATIENCE, final: bool = False) -> dict[str, Any]:
        """The bot's message in ``channel`` once it contains ``text`` (and, if ``final``, is no longer streaming)."""
        return await settled(self.fake, lambda: [m for m in self.fake.bot_messages(channel) if shows(m["content"], text, final)], timeout)

    async def buttons(self, channel: int, text: str, timeout: float = PATIENCE) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The bot's message with ``text`` and components, and its buttons."""
        message = await settled(
            self.fake, lambda: [m for m in self.fake.bot_messages(channel) if text in m["content"] and m.get("components")], timeout
        )
        return message, [c for row in message["components"] for c in row["components"]]

    async def click(self, message: dict[str, Any], button: dict[str, Any], *, user: int | None = None) -> str:
        """Press a button; returns what the bot told the presser (privately)."""
        interaction = await self.fake.inject_component_click(button["custom_id"], message_id=int(message["id"]), user_id=user)
        return (await self.answer(interaction))["data"].get("content", "")

    def label(self, button: dict[str, Any]) -> str:
        return str(button["label"])

    def current(self, message: dict[str, Any]) -> str:
        """What a message of the bot's says now."""
        return str(self.fake.messages[int(message["id"])]["content"])

    def key(self, thread: int) -> str:
        """The binding key of a thread in the fake's #general."""
        return f"discord:{self.fake.channel_id}:{thread}"

    async def slash(self, name: str, channel: int, *, user: int | None = None, **options: Any) -> dict[str, Any]:
        """Run a slash command in ``channel``; returns the bot's first response to it."""
        return await self.answer(await self.fake.inject_slash_command(name, options or None, channel_id=channel, user_id=user))

    async def answer(self, interaction: FakeInteraction) -> dict[str, Any]:
        await self.fake.wait_until(lambda: bool(interaction.responses))
        return interaction.responses[0]

    def texts(self, channel: int) -> list[str]:
        """What the bot said in ``channel`` for everyone to see (ephemeral answers left out)."""
        return [m["content"] for m in self.fake.bot_messages(channel) if not int(m.get("flags") or 0) & FLAG_EPHEMERAL]


@contextlib.contextmanager
def discord_urls_restored() -> Iterator[None]:
    """discord.py's REST base and gateway URL as they were before (the channel sets them from its config)."""
    saved = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved


@contextlib.asynccontextmanager
async def discord_world(*, fake: DiscordFake | None = None, section: dict[str, Any] | None = None, **settings: Any) -> AsyncIterator[DiscordWorld]:
    """The Bridge connected to a Discord fake (a given one, to keep it across a bridge restart).

    A fake made here does not patch discord.py itself: the channel's ``api_base_url`` and
    ``gateway_url`` keys point discord.py at it, and the URLs are put back afterwards.
    """
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(discord_urls_restored())
        if fake is None:
            fake = await stack.enter_async_context(DiscordFake(install=False))
        _, app = await stack.enter_async_context(running_bridge({"discord": discord_section(fake, **(section or {}))}, **settings))
        await fake.wait_for_session()
        yield DiscordWorld(fake, app)


# -- Slack ---------------------------------------------------------------------


def slack_section(fake: SlackFake, **overrides: Any) -> dict[str, Any]:
    """``[channels.slack]`` pointed at the fake (Events API on the bridge's web server); alice is allowed."""
    return {
        "bot_token": fake.token,
        "signing_secret": fake.signing_secret,
        "api_base_url": fake.api_url,
        "allowed_users": [fake.user_id],
        **QUICK,
        **overrides,
    }


class SlackWorld:
    """The Slack fake, and a Bridge whose Slack channel receives signed events from it."""

    def __init__(self, fake: SlackFake, app: App, events_url: str) -> None:
        self.fake = fake
        self.app = app
        self.events_url = events_url

    async def mention(self, text: str, *, user: str | None = None, channel: str | None = None, thread: str | None = None) -> str:
        """@bot (an ``app_mention`` event); returns the message's ts, which is the thread it starts."""
        event = self.fake.app_mention_event(text, user=user, channel=channel, thread_ts=thread)
        assert (await self.fake.post_event(self.events_url, event)).status == 200
        return str(event["ts"])

    async def say(self, thread: str | None, text: str, *, user: str | None = None, **kwargs: Any) -> HttpResult:
        """A message in ``thread`` (None: at the top of the channel, or of ``channel=``)."""
        result = await self.fake.post_message(self.events_url, text, thread_ts=thread, user=user, **kwargs)
        assert result.status == 200, result.text
        return result

    async def reply_containing(self, thread: str | None, text: str, timeout: float = PATIENCE, final: bool = False) -> dict[str, Any]:
        """The bot's message in ``thread`` once it contains ``text`` (and, if ``final``, is no longer streaming)."""
        return await settled(
            self.fake, lambda: [m for m in self.fake.bot_messages() if m.get("thread_ts") == thread and shows(m["text"], text, final)], timeout
        )

    async def buttons(self, thread: str, text: str, timeout: float = PATIENCE) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The bot's message in ``thread`` with ``text`` and an actions block, and its buttons."""
        message = await settled(
            self.fake,
            lambda: [m for m in self.fake.bot_messages() if m.get("thread_ts") == thread and text in m["text"] and m.get("blocks")],
            timeout,
        )
        return message, [e for block in message["blocks"] if block["type"] == "actions" for e in block["elements"]]

    async def click(self, message: dict[str, Any], button: dict[str, Any], *, user: str | None = None) -> HttpResult:
        result = await self.fake.post_block_action(
            self.events_url, button["action_id"], value=button.get("value"), user=user, channel=message["channel"], message_ts=message["ts"]
        )
        assert result.status == 200, result.text
        return result

    async def pressed(self, message: dict[str, Any], button: dict[str, Any], *, user: str | None = None) -> str:
        """Click a button; returns what the bot told the clicker (privately, ``chat.postEphemeral``)."""
        mark = self.fake.mark()
        await self.click(message, button, user=user)
        return str((await self.fake.wait_for_call("chat.postEphemeral", since=mark))["text"])

    def label(self, button: dict[str, Any]) -> str:
        return str(button["text"]["text"])

    def current(self, message: dict[str, Any]) -> str:
        """What a message of the bot's says now."""
        return str(self.fake.messages[(message["channel"], message["ts"])]["text"])

    def key(self, thread: str) -> str:
        """The binding key of a thread in the fake's #general."""
        return f"slack:{self.fake.channel_id}:{thread}"

    def texts(self, thread: str | None) -> list[str]:
        return [m["text"] for m in self.fake.bot_messages() if m.get("thread_ts") == thread]


async def events_url_ready(fake: SlackFake, service: BridgeService) -> str:
    """The bridge's Events API URL, once the Slack channel answers Slack's URL check."""
    await fake.wait_for_call("auth.test")
    return await answering_url_check(fake, f"{service.web.base_url}/slack/events")


async def answering_url_check(fake: SlackFake, url: str) -> str:
    """``url``, once a bridge answers Slack's URL check there."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while (await fake.post_url_verification(url)).status != 200:
        assert loop.time() < deadline, "the Slack events route never became ready"
        await asyncio.sleep(POLL)
    return url


@contextlib.asynccontextmanager
async def slack_world(*, fake: SlackFake | None = None, section: dict[str, Any] | None = None, **settings: Any) -> AsyncIterator[SlackWorld]:
    """The Bridge receiving a Slack fake's signed events (a given fake, to keep it across a bridge restart)."""
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(SlackFake())
        service, app = await stack.enter_async_context(running_bridge({"slack": slack_section(fake, **(section or {}))}, **settings))
        yield SlackWorld(fake, app, await events_url_ready(fake, service))


# -- Telegram ------------------------------------------------------------------


class TelegramWorld:
    """The Telegram fake and a Bridge polling it, seen as the Discord and Slack worlds are: the owner's private chat
    is the "thread" (Telegram has no threads there)."""

    def __init__(self, fake: TelegramFake, app: App) -> None:
        self.fake = fake
        self.app = app

    async def mention(self, text: str) -> int:
        """A message to the bot in the owner's chat; returns the chat, where the replies come."""
        self.fake.push_message(OWNER, OWNER, text)
        return OWNER

    async def say(self, thread: int, text: str) -> None:
        self.fake.push_message(thread, OWNER, text)

    async def reply_containing(self, thread: int, text: str, timeout: float = PATIENCE, final: bool = False) -> dict[str, Any]:
        """The bot's message in the chat once it contains ``text`` (and, if ``final``, is no longer streaming)."""
        return await settled(self.fake, lambda: [m for m in self.fake.bot_messages(thread) if shows(m.get("text") or "", text, final)], timeout)

    async def buttons(self, thread: int, text: str, timeout: float = PATIENCE) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The bot's message with ``text`` and an inline keyboard, and its buttons."""
        message = await settled(
            self.fake, lambda: [m for m in self.fake.bot_messages(thread) if text in (m.get("text") or "") and self._keys(m)], timeout
        )
        return message, self._keys(message)

    async def click(self, message: dict[str, Any], button: dict[str, Any]) -> None:
        self.fake.push_callback_query(OWNER, OWNER, button["callback_data"], message_id=message["message_id"])

    def label(self, button: dict[str, Any]) -> str:
        return str(button["text"])

    def current(self, message: dict[str, Any]) -> str:
        return str(self.fake.messages[(OWNER, message["message_id"])].get("text") or "")

    def texts(self, thread: int) -> list[str]:
        return [m.get("text") or "" for m in self.fake.bot_messages(thread)]

    def _keys(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        markup = self.fake.messages[(OWNER, message["message_id"])].get("reply_markup") or {}
        return [b for row in markup.get("inline_keyboard", []) for b in row]


@contextlib.asynccontextmanager
async def telegram_world(*, section: dict[str, Any] | None = None, **settings: Any) -> AsyncIterator[TelegramWorld]:
    """The Bridge polling a Telegram fake; ``section`` adds keys to ``[channels.telegram]``."""
    async with bridge_world(tmp_path=Path("."), telegram=section, **settings) as world:
        yield TelegramWorld(world.fake, world.app)


PLATFORM_WORLDS = {"telegram": telegram_world, "discord": discord_world, "slack": slack_world}
"""Each platform's world by name, for a test that runs the same steps on all three."""


# -- `wld bridge` as a process ---------------------------------------------------

SECTIONS = {"telegram": telegram_section, "discord": discord_section, "slack": slack_section}
"""Each platform's channel section pointed at its fake."""
FAKES = {"telegram": TelegramFake, "discord": lambda: DiscordFake(install=False), "slack": SlackFake}


@contextlib.asynccontextmanager
async def wld_bridge(config: Path, fake: Any, platform: str = "telegram", port: int = 0) -> AsyncIterator[tuple[WldProcess, Any]]:
    """`wld bridge` as a real process, once it listens to the platform's fake, and the platform's world on it; stopped
    (or already killed) on the way out."""
    sessions = len(fake.sessions) if platform == "discord" else 0
    started = len(fake.calls_to("deleteWebhook")) if platform == "telegram" else 0
    calls = fake.mark()
    process = await WldProcess.start("bridge", "--config", str(config))
    try:
        if platform == "telegram":
            await fake.wait_until(lambda: len(fake.calls_to("deleteWebhook")) > started, timeout=PATIENCE)
            yield process, TelegramWorld(fake, None)
        elif platform == "discord":
            await until(lambda: any(s.ready and not s.ws.closed for s in fake.sessions[sessions:]), "the bridge on the gateway")
            yield process, DiscordWorld(fake, None)
        else:
            await fake.wait_for_call("auth.test", since=calls)
            yield process, SlackWorld(fake, None, await answering_url_check(fake, f"http://127.0.0.1:{port}/slack/events"))
    finally:
        print((await process.stop()).stderr)  # shown when the test fails
