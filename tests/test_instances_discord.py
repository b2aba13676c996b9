"""Two real `wld bridge` processes on one fresh PostgreSQL database, both connected to the fake Discord's gateway, as
two instances of one bot are: every message and interaction reaches both. Each message is answered exactly once, by
the instance owning its conversation; each interaction is acknowledged exactly once; a question asked through the
owner is answered by button presses that only the other instance receives (as when the owner's gateway connection
lags), and the model menu shown and used through the other instance changes the model of the owner's session, as its
/status, given through the other instance too, says; /new, /resume and /cancel given there act on the owner's
conversation. When the first instance is killed, its conversations go on
through the other within 15 s."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

from runwield_bridge.channels.discord.components import MODEL_SELECT
from runwield_bridge.plugins.scripted import SLOW_CHUNKS
from tests.database_kit import conversation_owner, fetch, postgres_database
from tests.fakes.discord_api import FLAG_EPHEMERAL, DiscordFake, GatewaySession
from tests.platform_kit import discord_section, shows, told
from tests.wld_process import start_bridge, stop_bridges, write_config
from waiting import PATIENCE

USERS = 3
"""People who talk to the bot in DMs."""
CHANNELS = 2
"""Guild channels where the bot is mentioned (each mention opens a thread: a conversation)."""
ROUNDS = 3
TAKEOVER = 15.0  # seconds: what the issue allows from a death to its conversations going on


class Cluster:
    """The fake Discord, the database, and the `wld bridge` processes started on them."""

    def __init__(self, tmp: Path, url: str, fake: DiscordFake, users: list[int]) -> None:
        self.tmp, self.url, self.fake, self.users = tmp, url, fake, users
        self.procs: list[tuple[asyncio.subprocess.Process, Path]] = []

    async def start(self) -> GatewaySession:
        """Start one more instance (a home of its own: all they share is the database); its gateway session, once ready."""
        n = len(self.procs)
        section = discord_section(self.fake, allowed_users=[self.fake.user_id, *self.users], allow_dms=True)
        config = write_config(self.tmp / f"wld-{n}.toml", {"database_url": self.url, "channels": {"discord": section}})
        log = self.tmp / f"wld-{n}.log"
        self.procs.append((await start_bridge(config, self.tmp / f"home-{n}", log), log))
        known = set(map(id, self.fake.sessions))

        def joined() -> list[GatewaySession]:
            assert self.procs[-1][0].returncode is None, f"wld bridge exited: {log.read_text(errors='replace')}"
            return [s for s in self.fake.sessions if s.ready and id(s) not in known]

        await self.fake.wait_until(lambda: bool(joined()), timeout=PATIENCE)
        return joined()[0]

    async def query(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await fetch(self.url, sql, *args)

    async def owner(self, conversation: str) -> str:
        return await conversation_owner(self.url, conversation)

    async def session_of(self, conversation: str) -> str:
        """The ACP session the conversation is bound to."""
        [(session_id,)] = await self.query("SELECT acp_session_id FROM bindings WHERE conversation = $1", conversation)
        return str(session_id)

    def says(self, channel: int) -> list[str]:
        """What the bot said in ``channel`` for everyone to see."""
        return [m["content"] for m in self.fake.bot_messages(channel) if not int(m.get("flags") or 0) & FLAG_EPHEMERAL]

    def answered(self, channel: int, text: str) -> int:
        """How many of the bot's finished messages in ``channel`` answer ``text``."""
        return sum(1 for said in self.says(channel) if shows(said, f"You said: {text}", final=True))

    async def until_said(self, channel: int, text: str) -> None:
        await self.fake.wait_until(lambda: any(text in said for said in self.says(channel)), timeout=PATIENCE)


@contextlib.asynccontextmanager
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with postgres_database() as url, DiscordFake(install=False) as fake:
        users = [int(fake.add_user(f"user{i}")["id"]) for i in range(USERS)]
        world = Cluster(tmp_path, url, fake, users)
        try:
            yield world
        finally:
            await stop_bridges(world.procs, PATIENCE)


def text_of(conversation: int, round_: int) -> str:
    return f"hello {conversation} round {round_} end"


async def test_two_instances_on_one_gateway_answer_once_share_questions_and_the_model_menu(tmp_path: Path) -> None:
    async with cluster(tmp_path) as world:
        fake = world.fake
        dms = [int(fake.dm_channel(user)["id"]) for user in world.users]
        channels = [int(fake.add_text_channel(fake.guild_id, f"room{i}")["id"]) for i in range(CHANNELS)]

        # the first instance alone: it owns the first DM
        await world.start()
        await fake.inject_message(text_of(dms[0], 0), channel_id=dms[0], author_id=world.users[0])
        await world.until_said(dms[0], f"You said: {text_of(dms[0], 0)}")
        first = await world.owner(f"discord:{dms[0]}")
        second = await world.start()

        # every message reaches both instances: each is answered once, in DMs and in the threads mentions open
        threads = [int((await fake.inject_message(f"<@{fake.bot_id}> {text_of(c, 1)}", channel_id=c))["id"]) for c in channels]
        for round_ in range(1, ROUNDS + 1):
            for dm, user in zip(dms, world.users):
                await fake.inject_message(text_of(dm, round_), channel_id=dm, author_id=user)
            if round_ > 1:
                for thread in threads:
                    await fake.inject_message(text_of(thread, round_), channel_id=thread)
            await fake.wait_until(
                lambda r=round_: all(world.answered(dm, text_of(dm, r)) for dm in dms)
                and all(world.answered(t, text_of(t, r) if r > 1 else text_of(c, 1)) for t, c in zip(threads, channels)),
                timeout=PATIENCE,
            )
        for dm in dms:
            assert all(world.answered(dm, text_of(dm, r)) == 1 for r in range(1, ROUNDS + 1)), dm
        for thread, channel in zip(threads, channels):
            assert world.answered(thread, text_of(channel, 1)) == 1 and all(world.answered(thread, text_of(thread, r)) == 1 for r in range(2, ROUNDS + 1))
            assert world.says(channel) == [], "nothing is said in the channel itself"
        assert len(fake.calls_to("start_thread_with_message")) == CHANNELS, "one thread per mention"

        # the first instance owns the first DM and asks its questions there; only the second receives the presses
        dm = dms[0]
        await fake.inject_message("interview me", channel_id=dm, author_id=world.users[0])
        for prompt, label in (("Which language", "Rust"), ("Should it include tests?", "Yes")):
            message: dict[str, Any] = {}

            def asked(prompt: str = prompt) -> bool:
                found = [m for m in fake.bot_messages(dm) if prompt in m["content"] and m.get("components")]
                message.update(found[-1] if found else {})
                return bool(found)

            await fake.wait_until(asked, timeout=PATIENCE)
            [button] = [c for row in message["components"] for c in row["components"] if c["label"] == label]
            press = await fake.inject_component_click(button["custom_id"], message_id=int(message["id"]), user_id=world.users[0], to=second)
            assert await told(fake, press) == "Answer recorded.", "the presser sees what the owner did with the press"
        await world.until_said(dm, "Anything else")
        await fake.inject_message("only on CI", channel_id=dm, author_id=world.users[0], to=second)
        await world.until_said(dm, "Your answers, in order: 1. Rust; 2. Yes; 3. only on CI.")

        # the model menu, asked for and used through the second instance, changes the first one's session
        shown = await fake.inject_slash_command("models", channel_id=dm, user_id=world.users[0], to=second)
        await fake.wait_until(lambda: any(c.path_params["token"] == shown.token for c in fake.calls_to("create_followup")), timeout=PATIENCE)
        [menu] = [m for m in fake.bot_messages(dm) if m.get("components") and m["components"][0]["components"][0]["custom_id"] == MODEL_SELECT]
        assert menu["content"] == "Current model: scripted"
        refused = await fake.inject_component_click(
            MODEL_SELECT, message_id=int(menu["id"]), user_id=world.users[0], component_type=3, values=["no-such-model"], to=second
        )
        await fake.wait_until(lambda: "The model was not changed" in fake.messages[int(menu["id"])]["content"], timeout=PATIENCE)
        choice = await fake.inject_component_click(
            MODEL_SELECT, message_id=int(menu["id"]), user_id=world.users[0], component_type=3, values=["scripted-fast"], to=second
        )
        await fake.wait_until(lambda: "Model: Scripted (fast)" in fake.messages[int(menu["id"])]["content"], timeout=PATIENCE)
        status = await fake.inject_slash_command("status", channel_id=dm, user_id=world.users[0], to=second)
        await world.until_said(dm, "State: idle")
        assert "Model: Scripted (fast)" in [s for s in world.says(dm) if "State: idle" in s][-1], "the owner's session has the model"
        await fake.inject_message(text_of(dm, ROUNDS + 1), channel_id=dm, author_id=world.users[0])
        await fake.wait_until(lambda: world.answered(dm, text_of(dm, ROUNDS + 1)) == 1, timeout=PATIENCE)
        session_id = await world.session_of(f"discord:{dm}")
        [(model,)] = await world.query("SELECT model FROM sessions WHERE id = $1", session_id)
        assert model == "scripted-fast"

        # /new, /resume and /cancel, given through the second instance, act on the owner's conversation
        fresh = await fake.inject_slash_command("new", channel_id=dm, user_id=world.users[0], to=second)
        await world.until_said(dm, "🆕 New session")
        assert await world.session_of(f"discord:{dm}") != session_id, "the conversation is on a new session"
        back = await fake.inject_slash_command("resume", {"session_id": session_id}, channel_id=dm, user_id=world.users[0], to=second)
        await world.until_said(dm, f"↩️ Resumed session {session_id}")
        assert await world.session_of(f"discord:{dm}") == session_id
        await fake.inject_message("something slow please", channel_id=dm, author_id=world.users[0])
        await world.until_said(dm, "You said: something slow please")
        stop = await fake.inject_slash_command("cancel", channel_id=dm, user_id=world.users[0], to=second)
        await world.until_said(dm, "⏹ Cancelled.")
        assert not any(f" {SLOW_CHUNKS}" in said for said in world.says(dm) if "something slow please" in said), "the turn stopped before its end"

        assert await world.owner(f"discord:{dm}") == first, "the conversation stayed with its owner"
        for interaction in (press, shown, refused, choice, status, fresh, back, stop):
            assert len(interaction.responses) == 1, "each interaction acknowledged once"
        assert not [c for c in fake.calls_to("create_interaction_response") if c.status != 204 and c.status != 200], "no second acknowledgement"

        # the first instance killed (SIGKILL): its conversations go on through the second within 15 s, each message once
        killed = world.procs[0][0]
        killed.send_signal(signal.SIGKILL)
        await killed.wait()
        loop = asyncio.get_running_loop()
        killed_at, last = loop.time(), ROUNDS + 2
        for dm, user in zip(dms, world.users):
            await fake.inject_message(text_of(dm, last), channel_id=dm, author_id=user)
        for thread in threads:
            await fake.inject_message(text_of(thread, last), channel_id=thread)
        await fake.wait_until(
            lambda: all(world.answered(c, text_of(c, last)) for c in [*dms, *threads]), timeout=TAKEOVER - (loop.time() - killed_at)
        )
        assert all(world.answered(c, text_of(c, last)) == 1 for c in [*dms, *threads])
        assert await world.owner(f"discord:{dms[0]}") != first, "the survivor took the dead instance's conversations"
