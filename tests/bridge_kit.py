"""Running the real Bridge (real python-telegram-bot, real store) against the local Telegram fake."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from runwield_bridge.app import App, agent_endpoints
from runwield_bridge.channels.budget import ChatBudget
from runwield_bridge.channels.types import Button, Capabilities, Conversation, MessageRef, RateLimited
from runwield_bridge.bridge.runner import BridgeService
from runwield_bridge.channels.settings import ChannelSettings
from runwield_bridge.channels.streaming import StreamingReply
from runwield_bridge.supervision import Backoff
from runwield_bridge.config import Settings
from tests.fakes.base import HttpResult
from tests.fakes.telegram_api import TelegramFake
from waiting import PATIENCE

ASKING_AGENT = Path(__file__).parent / "agents" / "asking_agent.py"
OWNER = 4242
STRANGER = 666
SECRET = "s3cret-token"
FAST_BACKOFF = Backoff(initial=0.05, maximum=0.2, reset_after=5.0)


def asking_agent(tmp_path: Path) -> dict[str, Any]:
    """``[agents.asker]``: the SDK test agent, logging every call and keeping its sessions in files."""
    return {
        "command": [sys.executable, str(ASKING_AGENT)],
        "env": {"AGENT_LOG": str(tmp_path / "agent.log"), "AGENT_STATE": str(tmp_path / "agent-state.json")},
    }


NOT_OFFERED = (
    "client methods: terminal/create=-32601 terminal/output=-32601 terminal/wait_for_exit=-32601 terminal/kill=-32601 "
    "terminal/release=-32601 fs/read_text_file=-32601 fs/write_text_file=-32601"
)
"""What the SDK test agent says after calling each client method we do not advertise: method-not-found for each."""


def agent_calls(tmp_path: Path, method: str | None = None) -> list[dict[str, Any]]:
    """What the SDK test agent was asked, oldest first."""
    path = tmp_path / "agent.log"
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [c for c in calls if method is None or c["method"] == method]


class World:
    """A Telegram fake, and the Bridge with a Telegram channel pointed at it, in polling or webhook mode."""

    def __init__(self, fake: TelegramFake, service: BridgeService, app: App, mode: str) -> None:
        self.fake = fake
        self.service = service
        self.app = app
        self.mode = mode

    async def send(self, chat: int, user: int, text: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """A person's message, delivered the way the mode delivers it."""
        if self.mode == "polling":
            return self.fake.push_message(chat, user, text, **kwargs)
        message = self.fake.build_message(chat, user, text, **kwargs)
        result = await self.post({"message": message})
        assert result.status == 200, result.text
        return message

    async def exchange(self, chat: int, user: int, text: str, expect: str, timeout: float = PATIENCE) -> dict[str, Any]:
        """Send ``text`` and wait for the bot's finished message containing ``expect``."""
        await self.send(chat, user, text)
        return await self.reply_containing(chat, expect, timeout)

    async def post(self, update: dict[str, Any], secret: str | None = SECRET) -> HttpResult:
        return await self.fake.post_webhook_update(self.fake.webhook["url"], update, secret_token=secret)

    async def press(self, chat: int, user: int, data: str, message_id: int) -> None:
        if self.mode == "polling":
            self.fake.push_callback_query(chat, user, data, message_id=message_id)
            return
        message = self.fake.messages[(chat, message_id)]
        query = {"id": f"cb-{message_id}-{user}", "from": self.fake.user(user), "chat_instance": "1", "message": message, "data": data}
        assert (await self.post({"callback_query": query})).status == 200

    async def pressed(self, chat: int, user: int, data: str, message_id: int) -> str:
        """Press a button; returns what the bot told the presser (the ``answerCallbackQuery`` text)."""
        mark = self.fake.mark()
        await self.press(chat, user, data, message_id)
        return str((await self.fake.wait_for_call("answerCallbackQuery", since=mark)).get("text", ""))

    async def reply_containing(self, chat: int, text: str, timeout: float = PATIENCE) -> dict[str, Any]:
        """The bot's message in ``chat`` once it contains ``text`` and is no longer streaming."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [m for m in self.fake.bot_messages(chat) if text in (m.get("text") or "") and not m["text"].endswith(" …")]
            return bool(found)

        await self.fake.wait_until(seen, timeout=timeout)
        return found[-1]

    async def keyboard(self, chat: int, text: str, timeout: float = PATIENCE) -> tuple[int, list[dict[str, Any]]]:
        """The message id and buttons of the bot's message with ``text`` and an inline keyboard."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [m for m in self.fake.bot_messages(chat) if text in (m.get("text") or "") and m.get("reply_markup")]
            return bool(found)

        await self.fake.wait_until(seen, timeout=timeout)
        message = found[-1]
        return message["message_id"], [b for row in message["reply_markup"]["inline_keyboard"] for b in row]

    def texts(self, chat: int) -> list[str]:
        return [m.get("text") or "" for m in self.fake.bot_messages(chat)]


def telegram_section(fake: TelegramFake, mode: str = "polling", **overrides: Any) -> dict[str, Any]:
    """``[channels.telegram]`` pointed at the fake; OWNER is allowed."""
    return {
        "token": fake.token,
        "api_base_url": fake.base_url,
        "mode": mode,
        "webhook_secret": SECRET,
        "allowed_users": [OWNER],
        "edit_interval": 0.05,
        "poll_timeout": 1,
        **overrides,
    }


@contextlib.asynccontextmanager
async def bridge_world(
    mode: str = "polling", *, tmp_path: Path, telegram: dict[str, Any] | None = None, fake: TelegramFake | None = None, **settings: Any
) -> AsyncIterator[World]:
    """The Bridge running against a Telegram fake (a given one, to keep it across a bridge restart)."""
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(TelegramFake())
        section = telegram_section(fake, mode, **(telegram or {}))
        config = Settings.model_validate({"web": {"listen": "127.0.0.1:0"}, "channels": {"telegram": section}, **settings})
        app = await App.start(config)
        stack.push_async_callback(app.close)
        service = BridgeService(config, app.plugins, app.store.bridge, agent_endpoints(config, app.session_host), start_timeout=PATIENCE, backoff=FAST_BACKOFF)
        await stack.enter_async_context(service)
        ready: Callable[[], bool] = (lambda: bool(fake.webhook["url"])) if mode == "webhook" else (lambda: bool(fake.calls_to("deleteWebhook")))
        await fake.wait_until(ready)
        yield World(fake, service, app, mode)


class RecordingChannel:
    """A channel that keeps what it was asked to show, for driving the Bridge without a platform."""

    name = "memory"

    def __init__(self, capabilities: Capabilities | None = None, **settings: Any) -> None:
        self.capabilities = capabilities or Capabilities(max_message_length=100)
        self.settings = ChannelSettings(allowed_users=["me"], edit_interval=0.0, **settings)
        self.messages: dict[str, tuple[str, tuple[Button, ...]]] = {}
        self.log: list[tuple[str, str]] = []
        self.refuse: list[float] = []
        """retry_after values: the next sends/edits answer RateLimited with them, in turn."""
        self.changed = asyncio.Event()
        self.inbox: Any = None

    async def run(self, inbox: Any) -> None:
        self.inbox = inbox
        self.changed.set()
        await asyncio.Event().wait()

    async def send(self, conversation: Conversation, text: str, buttons: Any = ()) -> MessageRef:
        self._maybe_refuse()
        ref = MessageRef(conversation, str(len(self.messages) + 1))
        self.messages[ref.id] = (text, tuple(buttons))
        self._record("send", text)
        return ref

    async def edit(self, message: MessageRef, text: str, buttons: Any = ()) -> None:
        self._maybe_refuse()
        self.messages[message.id] = (text, tuple(buttons))
        self._record("edit", text)

    async def typing(self, conversation: Conversation) -> None:
        self._record("typing", "")

    async def set_commands(self, conversation: Conversation, commands: Any) -> None:
        self._record("commands", " ".join(c.name for c in commands))

    def open_reply(self, conversation: Conversation) -> StreamingReply:
        return StreamingReply(self, conversation, ChatBudget(rate=1000, burst=1000), self.settings.edit_interval)

    async def close(self) -> None:
        pass

    def texts(self) -> list[str]:
        return [text for text, _ in self.messages.values()]

    async def wait_for(self, text: str, timeout: float = PATIENCE) -> str:
        async def seen() -> str:
            while True:
                for message in self.texts():
                    if text in message and not message.endswith(" …"):
                        return message
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(seen(), timeout)

    def _maybe_refuse(self) -> None:
        if self.refuse:
            raise RateLimited(self.refuse.pop(0))

    def _record(self, kind: str, text: str) -> None:
        self.log.append((kind, text))
        self.changed.set()
