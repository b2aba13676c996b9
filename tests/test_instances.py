"""Two real `wld bridge` processes on one fresh PostgreSQL database, with the fake Telegram (long polling, and
webhooks) and the fake Slack (Events API): every message is answered exactly once whichever instance receives it, a
question asked through one instance is answered through the other, and when one instance is killed (SIGKILL)
mid-stream the other takes over its conversations and its long polling within 15 s: no settled turn is lost, and the
reply it was streaming says it was interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from waiting import PATIENCE, POLL

from tests.bridge_kit import SECRET, agent_calls, asking_agent
from tests.database_kit import conversation_owner, every_row_written, fetch, note_every_write, postgres_database
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.wld_process import free_port, start_bridge, stop_bridges, write_config

TAKEOVER = 15.0  # seconds: what the issue allows from a death to its conversations going on
TELEGRAM_CHATS = [5001 + i for i in range(25)]
SLACK_DMS = [f"D{i:04d}" for i in range(25)]
ROUNDS = 4


@dataclass
class Instance:
    """One `wld bridge` process; its log goes to a file (a pipe nobody reads could fill and stall it)."""

    proc: asyncio.subprocess.Process
    port: int
    log: Path

    @property
    def slack_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @property
    def telegram_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram/webhook"


class Cluster:
    """The fakes, the database, and the `wld bridge` processes started on them."""

    def __init__(self, tmp: Path, url: str, telegram: TelegramFake, slack: SlackFake, mode: str, agent: dict[str, Any] | None) -> None:
        self.tmp, self.url, self.telegram, self.slack, self.mode = tmp, url, telegram, slack, mode
        self.agent = agent
        """``[agents.asker]``, both channels' agent (the instances then log at DEBUG), if not the default one."""
        self.instances: list[Instance] = []

    async def start(self) -> Instance:
        """Start one more instance (a home of its own: all they share is the database) and wait until Slack reaches it."""
        n = len(self.instances)
        port = free_port()
        telegram = {
            "token": self.telegram.token, "api_base_url": self.telegram.base_url, "mode": self.mode, "webhook_secret": SECRET,
            "allowed_users": TELEGRAM_CHATS, "edit_interval": 0.05, "poll_timeout": 1, "sender_context": "never",
        }  # fmt: skip
        slack = {
            "bot_token": self.slack.token, "signing_secret": self.slack.signing_secret, "api_base_url": self.slack.api_url,
            "allowed_users": [self.slack.user_id], "edit_interval": 0.05, "sender_context": "never",
        }  # fmt: skip
        settings: dict[str, Any] = {"database_url": self.url, "web": {"listen": f"127.0.0.1:{port}"}, "channels": {"telegram": telegram, "slack": slack}}
        if self.agent is not None:
            settings |= {"log_level": "DEBUG", "agents": {"asker": self.agent}}
            telegram["agent"] = slack["agent"] = "asker"
        config = write_config(self.tmp / f"wld-{n}.toml", settings)
        log = self.tmp / f"wld-{n}.log"
        proc = await start_bridge(config, self.tmp / f"home-{n}", log)
        instance = Instance(proc, port, log)
        self.instances.append(instance)
        if self.mode == "webhook":  # its Telegram channel listens once it has registered the webhook
            await self.telegram.wait_until(lambda: len(self.telegram.calls_to("setWebhook")) > n, timeout=PATIENCE)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE
        while True:  # until its web server is up and its Slack channel answers there
            assert proc.returncode is None, f"wld bridge exited: {log.read_text(errors='replace')}"
            assert loop.time() < deadline, "the instance never started"
            with contextlib.suppress(aiohttp.ClientConnectionError):
                if (await self.slack.post_url_verification(instance.slack_url)).status == 200:
                    return instance
            await asyncio.sleep(POLL)

    async def stop(self) -> None:
        await stop_bridges([(instance.proc, instance.log) for instance in self.instances], PATIENCE)

    async def query(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await fetch(self.url, sql, *args)

    async def poller(self) -> str | None:
        """The instance holding Telegram's long-polling lease, if any."""
        found = await self.query("SELECT owner FROM leases WHERE name = 'listen:telegram' AND expires_at > 0")
        return str(found[0][0]) if found else None

    async def owner(self, conversation: str) -> str:
        return await conversation_owner(self.url, conversation)

    # -- saying things, and what the bot said --------------------------------------------------------------------

    async def tell_telegram(self, chat: int, text: str, via: Instance | None = None) -> None:
        """A message in a private chat: queued for long polling, or posted to ``via``'s webhook."""
        if via is None:
            self.telegram.push_message(chat, chat, text)
            return
        update = {"message": self.telegram.build_message(chat, chat, text)}
        result = await self.telegram.post_webhook_update(via.telegram_url, update, secret_token=SECRET)
        assert result.status == 200, result.text

    async def tell_slack(self, dm: str, text: str, via: Instance) -> None:
        result = await self.slack.post_message(via.slack_url, text, channel=dm, channel_type="im")
        assert result.status == 200, result.text

    def telegram_says(self, chat: int) -> list[str]:
        return [m.get("text") or "" for m in self.telegram.bot_messages(chat)]

    def slack_says(self, dm: str) -> list[str]:
        return [m.get("text") or "" for m in self.slack.bot_messages(dm)]

    async def until(self, condition: Callable[[], bool], what: str, timeout: float = PATIENCE) -> None:
        """Wait for ``condition``, checking whenever either fake records a call (and every POLL seconds)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            assert loop.time() < deadline, f"timed out after {timeout}s waiting for {what}"
            await asyncio.sleep(POLL)


def answered(said: list[str], text: str) -> int:
    """How many of the bot's messages answer ``text`` (finished: no streaming cursor)."""
    return sum(1 for s in said if f"You said: {text}" in s and not s.endswith("…"))


def slack_dm(fake: SlackFake, dm: str) -> None:
    fake.add_channel(dm, fake.user_id, is_im=True)


@contextlib.asynccontextmanager
async def cluster(tmp_path: Path, mode: str, agent: dict[str, Any] | None = None) -> AsyncIterator[Cluster]:
    async with postgres_database() as url, TelegramFake() as telegram, SlackFake() as slack:
        for chat in TELEGRAM_CHATS:
            telegram.add_user(chat, f"user{chat}")
            telegram.add_chat(chat)
        for dm in SLACK_DMS:
            slack_dm(slack, dm)
        world = Cluster(tmp_path, url, telegram, slack, mode, agent)
        try:
            yield world
        finally:
            await world.stop()


def text_of(platform: str, conversation: int | str, round_: int) -> str:
    return f"hello {platform} {conversation} round {round_} end"


async def a_round(world: Cluster, round_: int, slack_via: Callable[[int], Instance], telegram_via: Callable[[int], Instance | None]) -> None:
    """One message in each of the 50 conversations, then every one of them answered."""
    for i, chat in enumerate(TELEGRAM_CHATS):
        await world.tell_telegram(chat, text_of("tg", chat, round_), telegram_via(i))
    for i, dm in enumerate(SLACK_DMS):
        await world.tell_slack(dm, text_of("slack", dm, round_), slack_via(i))
    await world.until(
        lambda: all(answered(world.telegram_says(c), text_of("tg", c, round_)) for c in TELEGRAM_CHATS)
        and all(answered(world.slack_says(d), text_of("slack", d, round_)) for d in SLACK_DMS),
        f"every message of round {round_} answered",
    )


async def interview_across(world: Cluster, dm: str, asked: Instance, answered: Instance) -> None:
    """The scripted interview started through the instance that owns the conversation (``asked``, which asks its
    questions), its buttons pressed and its free-text question replied to through the other (``answered``)."""
    await world.tell_slack(dm, "interview me", asked)
    for prompt, label in (("Which language", "Rust"), ("Should it include tests?", "Yes")):
        found: list[dict[str, Any]] = []

        def asked(prompt: str = prompt) -> bool:
            found[:] = [m for m in world.slack.bot_messages(dm) if prompt in (m.get("text") or "") and m.get("blocks")]
            return bool(found) and any(b["type"] == "actions" for b in found[-1]["blocks"])

        await world.until(asked, f"the question {prompt!r}")
        message = found[-1]
        [button] = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"] if e["text"]["text"] == label]
        mark = world.slack.mark()
        result = await world.slack.post_block_action(
            answered.slack_url, button["action_id"], value=button.get("value"), channel=dm, message_ts=message["ts"]
        )
        assert result.status == 200, result.text
        notice = await world.slack.wait_for_call("chat.postEphemeral", since=mark)
        assert notice["text"] == "Answer recorded.", "the presser is told what the owner did with the press"
    await world.until(lambda: any("Anything else" in s for s in world.slack_says(dm)), "the free-text question")
    await world.tell_slack(dm, "only on CI", answered)
    await world.until(lambda: any("Your answers, in order: 1. Rust; 2. Yes; 3. only on CI." in s for s in world.slack_says(dm)), "the answers")


async def test_two_instances_answer_each_message_once_share_questions_and_survive_a_sigkill(tmp_path: Path) -> None:
    async with cluster(tmp_path, "polling") as world:
        first = await world.start()
        await world.telegram.wait_until(lambda: bool(world.telegram.calls_to("getUpdates")), timeout=PATIENCE)
        second = await world.start()  # its Telegram channel waits for the polling lease the first one holds
        both = [first, second]

        for round_ in range(1, ROUNDS):  # Slack events alternate between the instances
            await a_round(world, round_, lambda i, r=round_: both[(i + r) % 2], lambda i: None)
        first_id = await world.owner(f"telegram:{TELEGRAM_CHATS[0]}")
        assert {await world.owner(f"telegram:{c}") for c in TELEGRAM_CHATS} == {first_id}, "the one poller owns Telegram's chats"
        owners = {d: await world.owner(f"slack:{d}") for d in SLACK_DMS}
        assert len(set(owners.values())) == 2, "each instance owns some Slack conversations"
        firsts = [d for d in SLACK_DMS if owners[d] == first_id]
        seconds = [d for d in SLACK_DMS if owners[d] != first_id]

        # a question asked by the instance that owns the conversation, answered through the other
        await interview_across(world, seconds[0], asked=second, answered=first)
        await interview_across(world, firsts[1], asked=first, answered=second)

        # the first instance streams two slow replies (a Telegram chat, a Slack conversation) and is killed mid-stream
        slow_chat, slow_dm = TELEGRAM_CHATS[0], firsts[0]
        await world.tell_telegram(slow_chat, "slow one please")
        await world.tell_slack(slow_dm, "slow two please", second)  # handed to its owner, the first instance

        def streaming_in(said: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
            return [m for m in said if (m.get("text") or "").startswith(f"You said: {text}") and m["text"].endswith("…")]

        def streaming() -> bool:
            return bool(streaming_in(world.telegram.bot_messages(slow_chat), "slow one please")) and bool(
                streaming_in(world.slack.bot_messages(slow_dm), "slow two please")
            )

        await world.until(streaming, "both slow replies streaming")
        [cut_telegram] = streaming_in(world.telegram.bot_messages(slow_chat), "slow one please")
        [cut_slack] = streaming_in(world.slack.bot_messages(slow_dm), "slow two please")
        assert await world.poller() == first_id, "one instance polls Telegram: the one holding the lease"
        first.proc.send_signal(signal.SIGKILL)
        await first.proc.wait()
        killed_at = asyncio.get_running_loop().time()

        # the last round, everything through the survivor: Slack to its web server, Telegram by its long polling
        for chat in TELEGRAM_CHATS:
            await world.tell_telegram(chat, text_of("tg", chat, ROUNDS))
        for dm in SLACK_DMS:
            await world.tell_slack(dm, text_of("slack", dm, ROUNDS), second)
        await world.until(
            lambda: bool(answered(world.telegram_says(TELEGRAM_CHATS[1]), text_of("tg", TELEGRAM_CHATS[1], ROUNDS)))
            and bool(answered(world.slack_says(firsts[1]), text_of("slack", firsts[1], ROUNDS))),
            "the dead instance's conversations going on",
            timeout=TAKEOVER - (asyncio.get_running_loop().time() - killed_at),
        )
        await world.until(
            lambda: all(answered(world.telegram_says(c), text_of("tg", c, ROUNDS)) for c in TELEGRAM_CHATS)
            and all(answered(world.slack_says(d), text_of("slack", d, ROUNDS)) for d in SLACK_DMS),
            "every message of the last round answered",
        )
        assert await world.poller() not in (None, first_id), "the survivor took the polling lease over"
        await world.until(
            lambda: world.telegram.messages[(slow_chat, cut_telegram["message_id"])]["text"].endswith("(interrupted)")
            and world.slack.messages[(slow_dm, cut_slack["ts"])]["text"].endswith("(interrupted)"),
            "the replies cut off by the kill marked interrupted",
        )

        for chat in TELEGRAM_CHATS:
            for round_ in range(1, ROUNDS + 1):
                assert answered(world.telegram_says(chat), text_of("tg", chat, round_)) == 1, (chat, round_)
        for dm in SLACK_DMS:
            for round_ in range(1, ROUNDS + 1):
                assert answered(world.slack_says(dm), text_of("slack", dm, round_)) == 1, (dm, round_)

        # the transcripts in the database: every settled turn is there once; the cut-off ones are marked interrupted
        for key, platform, name in [*((f"telegram:{c}", "tg", c) for c in TELEGRAM_CHATS), *((f"slack:{d}", "slack", d) for d in SLACK_DMS)]:
            [(session_id,)] = await world.query("SELECT acp_session_id FROM bindings WHERE conversation = $1", key)
            entries = await world.query("SELECT kind, text, data FROM transcript WHERE session_id = $1 ORDER BY id", session_id)
            users = [e["text"] for e in entries if e["kind"] == "user"]
            replies = "".join(e["text"] for e in entries if e["kind"] == "agent")
            for round_ in range(1, ROUNDS + 1):
                assert users.count(text_of(platform, name, round_)) == 1, (key, round_, users)
                assert replies.count(f"You said: {text_of(platform, name, round_)}") == 1, (key, round_)
            running = await world.query("SELECT count(*) FROM turns WHERE session_id = $1 AND state = 'running'", session_id)
            assert running[0][0] == 0, f"{key}: no turn is left running"
            if name in (slow_chat, slow_dm):
                assert any(e["kind"] == "notice" and '"interrupted": true' in e["data"] for e in entries), f"{key}: the cut-off turn is interrupted"


async def test_telegram_webhooks_reaching_either_instance_are_answered_once_by_the_conversations_owner(tmp_path: Path) -> None:
    async with cluster(tmp_path, "webhook") as world:
        first, second = await world.start(), await world.start()
        both = [first, second]
        for round_ in (1, 2):
            for i, chat in enumerate(TELEGRAM_CHATS[:10]):
                await world.tell_telegram(chat, text_of("tg", chat, round_), both[(i + round_) % 2])
            await world.until(
                lambda r=round_: all(answered(world.telegram_says(c), text_of("tg", c, r)) for c in TELEGRAM_CHATS[:10]),
                f"round {round_} answered",
            )
        for chat in TELEGRAM_CHATS[:10]:
            for round_ in (1, 2):
                assert answered(world.telegram_says(chat), text_of("tg", chat, round_)) == 1, (chat, round_)
        owners = {await world.owner(f"telegram:{c}") for c in TELEGRAM_CHATS[:10]}
        assert len(owners) == 2, "webhooks reach both instances, and each owns the chats it heard first"


async def test_twenty_messages_from_four_people_at_once_to_two_instances_each_reach_the_agent_once_in_order(tmp_path: Path) -> None:
    """The issue's count: every message is steered into the running turn or queued by its conversation's owner,
    whichever instance received it; none dropped, none twice."""
    async with cluster(tmp_path, "polling") as world:
        both = [await world.start(), await world.start()]
        people = SLACK_DMS[:4]
        notes = {dm: [f"note {n} from {dm} end" for n in range(1, 6)] for dm in people}

        async def person(i: int, dm: str) -> None:
            for n, note in enumerate(notes[dm]):
                await world.tell_slack(dm, note, both[(i + n) % 2])

        await asyncio.gather(*(person(i, dm) for i, dm in enumerate(people)))

        async def reached(dm: str) -> list[str]:
            """The lines of what reached the agent in the conversation, once its turns have settled."""
            rows = await world.query("SELECT acp_session_id FROM bindings WHERE conversation = $1", f"slack:{dm}")
            if not rows or (await world.query("SELECT count(*) FROM turns WHERE session_id = $1 AND state = 'running'", rows[0][0]))[0][0]:
                return []
            entries = await world.query("SELECT text FROM transcript WHERE session_id = $1 AND kind = 'user' ORDER BY id", rows[0][0])
            return [line for e in entries for line in e["text"].splitlines()]

        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE
        # in any order: Slack is answered before an event is handled, so two sent one after the other to two instances
        # can reach the owner either way round
        while (found := {dm: sorted(await reached(dm)) for dm in people}) != notes:
            assert loop.time() < deadline, f"not every message reached the agent exactly once: {found}"
            await asyncio.sleep(POLL)


@pytest.mark.parametrize("platform", ["slack", "telegram"])
async def test_a_secret_answer_sent_to_the_instance_that_did_not_ask_reaches_the_agent_once_and_is_kept_nowhere(platform: str, tmp_path: Path) -> None:
    """The reply to a secret question (a Slack event, a Telegram webhook) reaches the instance that does not own the
    conversation: handed over through the database to the one that asked, it is never written there (every row any
    table was given is noted by a trigger), nor to either instance's state directory or log (at DEBUG)."""
    token = "sk-live-9Hd3wQ7pLx2Vn5Kc"
    async with cluster(tmp_path, "webhook", asking_agent(tmp_path)) as world:
        asker, other = await world.start(), await world.start()
        await note_every_write(world.url)
        chat, dm = TELEGRAM_CHATS[0], SLACK_DMS[0]

        async def tell(text: str, via: Instance) -> None:
            await (world.tell_slack(dm, text, via) if platform == "slack" else world.tell_telegram(chat, text, via))

        def said() -> list[str]:
            return world.slack_says(dm) if platform == "slack" else world.telegram_says(chat)

        await tell("token please", asker)
        await world.until(lambda: any("Your API token, please" in s for s in said()), "the secret question")
        await tell(token, other)
        await world.until(lambda: any(f"token: accept, {len(token)} characters" in s for s in said()), "the agent's answer")
        rows = await every_row_written(world.url)
    assert [c["value"] for c in agent_calls(tmp_path, "secret")] == [token], "the agent got the answer, once"
    assert any(row.startswith("handoffs ") and '"kind":"message"' in row for row in rows), "the reply was handed over"
    assert [row for row in rows if token in row] == [], "no row of the database held the answer"
    files = [path for n in (0, 1) for path in [*(tmp_path / f"home-{n}").rglob("*"), tmp_path / f"wld-{n}.log"] if path.is_file()]
    assert [str(path) for path in files if token.encode() in path.read_bytes()] == []
