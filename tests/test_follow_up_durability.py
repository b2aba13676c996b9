"""Queued messages survive a SIGKILL of the real `wld bridge`: those still waiting are delivered once after the
restart; one a turn had already taken is not sent again, and the chat is told which it was."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

from runwield_bridge.core.store import Store
from tests.bridge_kit import OWNER
from tests.fakes.telegram_api import TelegramFake
from tests.wld_process import free_port, start_bridge, stop_bridges, write_config
from waiting import PATIENCE

CHAT = OWNER


class Bot:
    """`wld bridge` processes, one at a time, on one home (SQLite) and one Telegram fake."""

    def __init__(self, tmp: Path, fake: TelegramFake) -> None:
        self.tmp, self.fake = tmp, fake
        self.config = write_config(
            tmp / "wld.toml",
            {
                "web": {"listen": f"127.0.0.1:{free_port()}"},
                "channels": {
                    "telegram": {
                        "token": fake.token, "api_base_url": fake.base_url, "mode": "polling", "allowed_users": [OWNER],
                        "edit_interval": 0.05, "poll_timeout": 1, "queue": "collect",
                    }  # fmt: skip
                },
            },
        )
        self.runs: list[tuple[object, Path]] = []

    async def start(self) -> None:
        log = self.tmp / f"wld-{len(self.runs)}.log"
        self.proc = await start_bridge(self.config, self.tmp / "home", log)
        self.runs.append((self.proc, log))

    async def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    def said(self) -> list[str]:
        return [m.get("text") or "" for m in self.fake.bot_messages(CHAT)]

    async def shows(self, text: str, final: bool = True) -> None:
        """Wait until a message of the bot's shows ``text`` (``final``: and is done streaming)."""
        await self.fake.wait_until(lambda: any(text in s and not (final and s.endswith("…")) for s in self.said()), timeout=PATIENCE)

    def count(self, text: str) -> int:
        return sum(text in s and not s.endswith("…") for s in self.said())

    async def prompts(self) -> list[str]:
        """What reached the agent, in order (read from the database once the bridge is stopped)."""
        store = await Store.open(f"sqlite+aiosqlite:///{self.tmp / 'home' / 'wld.db'}")
        try:
            [session] = await store.sessions.list_sessions()
            return [e.text for e in await store.sessions.transcript(session.id) if e.kind == "user"]
        finally:
            await store.close()


@contextlib.asynccontextmanager
async def bot(tmp_path: Path) -> AsyncIterator[Bot]:
    async with TelegramFake() as fake:
        world = Bot(tmp_path, fake)
        try:
            yield world
        finally:
            await stop_bridges(world.runs, PATIENCE)  # type: ignore[arg-type]


async def test_messages_queued_before_a_sigkill_are_delivered_once_after_the_restart(tmp_path: Path) -> None:
    async with bot(tmp_path) as world:
        await world.start()
        world.fake.push_message(CHAT, OWNER, "slow before the kill")
        await world.shows("You said: slow before the kill", final=False)
        world.fake.push_message(CHAT, OWNER, "and do not touch the API")
        world.fake.push_message(CHAT, OWNER, "also run the linter")
        await world.shows("📥 Queued (2 messages waiting)")
        await world.kill()
        world.fake.redeliver()  # the killed bridge may not have confirmed them: Telegram sends them again

        await world.start()
        await world.shows("📨 Sending the 2 messages queued meanwhile to the agent, as one prompt.")
        await world.shows("You said: and do not touch the API\nalso run the linter")

        # a queued message a turn had taken when the bridge was killed is not sent again; the chat is told
        world.fake.push_message(CHAT, OWNER, "slow second turn")
        await world.shows("You said: slow second turn", final=False)
        world.fake.push_message(CHAT, OWNER, "slow taken when killed")
        await world.shows("📥 Queued (1 message waiting)")
        world.fake.push_message(CHAT, OWNER, "/cancel")
        await world.shows("You said: slow taken when killed", final=False)
        await world.kill()
        world.fake.redeliver()

        await world.start()
        await world.shows("not sent again (nothing is answered twice):\n• slow taken when killed")
        world.fake.push_message(CHAT, OWNER, "after both restarts")
        await world.shows("You said: after both restarts")
        assert world.count("You said: and do not touch the API") == 1, "answered once"
        assert world.count("not sent again") == 1, "told once"
        await stop_bridges(world.runs, PATIENCE)  # type: ignore[arg-type]
        assert await world.prompts() == [
            "slow before the kill",
            "and do not touch the API\nalso run the linter",
            "slow second turn",
            "slow taken when killed",
            "after both restarts",
        ], "each message reached the agent once, in order"
