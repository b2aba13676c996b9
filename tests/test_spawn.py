"""/spawn and /sessions through `wld bridge` (a real process) and the platform fakes: a session on an agent bound to a
new thread (Discord thread, Slack thread, Telegram forum topic) or here, its task's reply streamed there; earlier
sessions resumed (or refused, never replaced); the agent's sessions offered as buttons that rebind the chat."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from runwield_bridge.acp.client import CommandAgent
from runwield_bridge.bridge.bindings import MemoryBindings
from runwield_bridge.bridge.bridge import Bridge
from runwield_bridge.bridge.inbox import ChannelInbox
from runwield_bridge.bridge.spawn import parse_spawn
from runwield_bridge.channels.types import BridgeError, Capabilities, Conversation, IncomingMessage, Sender
from runwield_bridge.config import AgentConfig
from tests.bridge_kit import FAST_BACKOFF, OWNER, STRANGER, RecordingChannel, agent_calls, asking_agent, bridge_world
from tests.platform_kit import FAKES, SECTIONS, shows, wld_bridge
from tests.wld_process import free_port, write_config
from waiting import PATIENCE, until

FORUM = -1001234
"""A Telegram supergroup with topics turned on."""
PLAIN_GROUP = -1005678
"""A Telegram supergroup without topics."""


@contextlib.asynccontextmanager
async def spawning(platform: str, tmp_path: Path, **section: Any) -> AsyncIterator[tuple[Any, Any]]:
    """`wld bridge` on the platform's fake, with the SDK test agent configured as ``codex`` (standing in for Codex) and,
    as ``lenient``, the same agent answering session/load of any id, as some agents do."""
    lenient = asking_agent(tmp_path / "lenient")
    (tmp_path / "lenient").mkdir()
    lenient["env"]["AGENT_LOADS_ANY"] = "1"
    async with FAKES[platform]() as fake:
        if platform == "telegram":
            fake.add_chat(FORUM, "supergroup", is_forum=True)
            fake.add_chat(PLAIN_GROUP, "supergroup")
        port = free_port()
        config = write_config(
            tmp_path / "wld.toml",
            {
                "web": {"listen": f"127.0.0.1:{port}"},
                "agents": {"codex": asking_agent(tmp_path), "lenient": lenient},
                "channels": {platform: SECTIONS[platform](fake) | {"edit_interval": 0.05, "sender_context": "never", **section}},
            },
        )
        async with wld_bridge(config, fake, platform, port) as (_, world):
            yield fake, world


async def told(world: Any, text: str, expect: str) -> dict[str, Any]:
    """Say ``text`` in the owner's Telegram chat; the bot's finished message there showing ``expect``."""
    await world.say(OWNER, text)
    return await world.reply_containing(OWNER, expect, final=True)


def prompts(tmp_path: Path) -> list[tuple[str, str]]:
    """(session id, text) of each prompt the codex stand-in got, oldest first."""
    return [(call["sessionId"], call["texts"][-1]) for call in agent_calls(tmp_path, "session/prompt")]


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_spawn_into_a_new_thread_streams_the_tasks_reply_there_and_the_thread_continues_it(platform: str, tmp_path: Path) -> None:
    async with spawning(platform, tmp_path, **({"allow_dms": True} if platform == "discord" else {})) as (fake, world):
        where = await world.mention('/spawn codex --thread "fix tests"')
        started = await world.reply_containing(where, "🧵 codex session", final=True)
        [session] = [call["sessionId"] for call in agent_calls(tmp_path, "session/new")]
        assert f"codex session {session} started in a new thread: fix tests" in world.current(started)
        if platform == "discord":
            [thread] = [int(t["id"]) for t in fake.channels.values() if t.get("name") == "fix tests" and t.get("parent_id")]
        else:
            [root] = [m for m in fake.bot_messages() if m.get("thread_ts") is None and m["text"] == "🧵 fix tests"]
            thread = root["ts"]
        await world.reply_containing(thread, "echo: fix tests", final=True)
        assert not any("echo: fix tests" in text for text in world.texts(where)), "the reply streams in the new thread only"

        await world.say(thread, "and the flaky one")  # a bound thread needs no mention
        await world.reply_containing(thread, "echo: and the flaky one", final=True)
        assert prompts(tmp_path) == [(session, "fix tests"), (session, "and the flaky one")]

        if platform == "slack":  # a direct message: no thread is opened there
            await world.say(None, "/spawn codex --thread more", channel=fake.add_channel("D0ALICE", fake.user_id, is_im=True)["id"])
            await world.reply_containing(None, "Slack threads are opened here only in channels, not in a direct message")
        else:
            dm = fake.snowflake()
            await world.say(dm, "/spawn codex --thread more")
            await world.reply_containing(dm, "Discord has no threads in direct messages")
        assert len(agent_calls(tmp_path, "session/new")) == 1, "a refused spawn starts no session"


async def test_discords_slash_spawn_opens_a_thread_in_the_channel_and_sessions_lists_it(tmp_path: Path) -> None:
    async with spawning("discord", tmp_path) as (fake, world):
        echo = await world.slash("spawn", fake.channel_id, agent="codex", task="fix tests", thread=True)
        assert echo["data"]["content"] == "/spawn codex --thread fix tests", "the command is shown as typed"
        await world.reply_containing(fake.channel_id, "🧵 codex session", final=True)
        [thread] = [int(t["id"]) for t in fake.channels.values() if t.get("name") == "fix tests" and t.get("parent_id")]
        await world.reply_containing(thread, "echo: fix tests", final=True)

        await world.slash("sessions", thread)
        listing, buttons = await world.buttons(thread, "Sessions of codex")
        assert [world.label(b) for b in buttons] == ["fix tests · just now"] and "continuing here" in world.current(listing)


async def test_spawn_opens_a_telegram_forum_topic_and_is_refused_plainly_where_there_are_none(tmp_path: Path) -> None:
    async with spawning("telegram", tmp_path) as (fake, world):
        fake.push_message(FORUM, OWNER, "/spawn codex --thread fix tests")
        await until(lambda: bool(fake.topics.get(FORUM)), "a forum topic opened")
        [topic] = fake.topics[FORUM]
        assert topic["name"] == "fix tests"
        in_topic = lambda text: [  # noqa: E731
            m for m in fake.bot_messages(FORUM) if m.get("message_thread_id") == topic["message_thread_id"] and shows(m.get("text") or "", text, True)
        ]
        await fake.wait_until(lambda: bool(in_topic("echo: fix tests")), timeout=PATIENCE)
        general = [m.get("text") or "" for m in fake.bot_messages(FORUM) if m.get("message_thread_id") != topic["message_thread_id"]]
        assert any("🧵 codex session" in text for text in general) and not any("echo:" in text for text in general)

        fake.push_message(FORUM, OWNER, "@bridge_test_bot next step", message_thread_id=topic["message_thread_id"])
        await fake.wait_until(lambda: bool(in_topic("echo: next step")), timeout=PATIENCE)
        [(session, _), (again, _)] = prompts(tmp_path)
        assert session == again, "the topic's next message continues the spawned session"

        fake.push_message(FORUM, OWNER, "/spawn codex --thread --resume nope-2 carry on")
        await until(lambda: len(fake.topics[FORUM]) == 2, "a second topic opened")
        said = lambda: [m.get("text") or "" for m in fake.bot_messages(FORUM)]  # noqa: E731
        await until(lambda: any("Nothing was started in this thread" in t and "nope-2" in t for t in said()), "the topic told why it is empty")
        general = lambda: [m.get("text") or "" for m in fake.bot_messages(FORUM) if m.get("message_thread_id") is None]  # noqa: E731
        await until(lambda: any(t.startswith("Agent codex could not reopen session nope-2") for t in general()), "where /spawn was sent, told too")

        refusal = await told(world, "/spawn codex --thread fix tests", "Telegram has topics only in groups")
        assert "--here" in refusal["text"]
        fake.push_message(PLAIN_GROUP, OWNER, "/spawn codex --thread fix tests")
        await fake.wait_until(lambda: any("needs Topics turned on" in (m.get("text") or "") for m in fake.bot_messages(PLAIN_GROUP)), timeout=PATIENCE)
        assert len(agent_calls(tmp_path, "session/new")) == 1, "a refused spawn starts no session"


async def test_spawn_here_resume_known_and_unknown_and_a_stranger_cannot_spawn(tmp_path: Path) -> None:
    async with spawning("telegram", tmp_path) as (fake, world):
        await told(world, "/spawn codex", "Say what codex should do. Usage: /spawn AGENT")
        await told(world, "/spawn gpt5 fix tests", "There is no agent named 'gpt5'. Configured agents: codex, lenient, runwield.")
        await told(world, "/spawn codex --here --thread fix tests", "Choose one of --here and --thread, not both")

        await told(world, "/spawn codex --here fix tests", "echo: fix tests")
        [(first, _)] = prompts(tmp_path)
        assert any(f"codex session {first} is bound here" in text for text in world.texts(OWNER))

        await told(world, "/new", "New session")
        resumed = await told(world, f"/spawn codex --here --resume {first} and now the docs", f"Resumed session {first} on codex (2 earlier messages)")
        assert "echo: fix tests" in resumed["text"]
        await world.reply_containing(OWNER, "echo: and now the docs", final=True)
        assert prompts(tmp_path)[-1] == (first, "and now the docs"), "the earlier session continues"

        for agent, refusal in (("codex", "could not reopen session nope-1"), ("lenient", "does not know session nope-1")):
            refused = await told(world, f"/spawn {agent} --here --resume nope-1 anything", refusal)
            assert "no new session was started" in refused["text"]
        await told(world, "still here?", "echo: still here?")
        assert prompts(tmp_path)[-1] == (first, "still here?"), "a refused resume changed nothing"
        assert not agent_calls(tmp_path / "lenient", "session/prompt") and "anything" not in [t for _, t in prompts(tmp_path)]

        await world.say(OWNER, "slow")
        await world.reply_containing(OWNER, "0 ")  # while the turn runs
        await told(world, "/spawn codex --here something else", "A turn is running here; send /cancel first, or spawn into a new thread with --thread.")
        await told(world, "/cancel", "Cancelled")

        fake.push_message(STRANGER, STRANGER, "/spawn codex --here take over")
        await fake.wait_until(lambda: any("allowlist" in (m.get("text") or "") for m in fake.bot_messages(STRANGER)), timeout=PATIENCE)
        assert not {"take over", "something else"} & {t for _, t in prompts(tmp_path)} and len(agent_calls(tmp_path, "session/new")) == 1


async def test_sessions_offers_the_agents_sessions_as_buttons_and_a_press_rebinds_the_chat(tmp_path: Path) -> None:
    async with spawning("telegram", tmp_path, agent="codex") as (fake, world):
        await told(world, "first topic", "echo: first topic")
        await told(world, "/new", "New session")
        await told(world, "second topic", "echo: second topic")
        (first, _), (second, _) = prompts(tmp_path)

        await world.say(OWNER, "/sessions")
        listing, buttons = await world.buttons(OWNER, "Sessions of codex")
        assert [world.label(b) for b in buttons] == ["second topic · just now", "first topic · just now"], "the newest first"
        assert "1. second topic (just now, continuing here)" in listing["text"]
        await world.click(listing, buttons[1])
        await world.reply_containing(OWNER, f"Resumed session {first} on codex", final=True)
        await told(world, "back to the first", "echo: back to the first")
        assert prompts(tmp_path)[-1] == (first, "back to the first"), "the next message continues the chosen session"

        await world.say(OWNER, "/resume")  # without an id: the same choice
        listings = lambda: [m for m in fake.bot_messages(OWNER) if "Sessions of codex" in (m.get("text") or "")]  # noqa: E731
        await fake.wait_until(lambda: len(listings()) == 2, timeout=PATIENCE)
        again, buttons = await world.buttons(OWNER, "Sessions of codex")
        assert again["message_id"] > listing["message_id"] and "1. first topic (just now, continuing here)\n2. second topic (just now)" in again["text"]
        await world.click(again, buttons[1])
        await world.reply_containing(OWNER, f"Resumed session {second} on codex", final=True)


@pytest.mark.parametrize(
    ("argument", "error"),
    [
        ("", "Name the agent first"),
        ("--thread codex fix", "Name the agent first"),
        ("codex --here --thread fix", "not both"),
        ("codex --resume", "--resume needs the id"),
        ("codex --verbose fix", "/spawn has no option --verbose"),
        ("codex --thread", "Say what codex should do"),
        ("claude fix", "There is no agent named 'claude'. Configured agents: codex, runwield."),
    ],
)
def test_a_spawn_that_cannot_be_understood_says_what_is_wrong(argument: str, error: str) -> None:
    with pytest.raises(BridgeError, match=error):
        parse_spawn(argument, ["codex", "runwield"])


def test_a_spawn_reads_its_options_and_takes_the_task_as_typed() -> None:
    for typed in ('"fix the tests"', "“fix the tests”", "fix the tests"):
        request = parse_spawn(f"codex --thread {typed}", ["codex"])
        assert (request.agent, request.thread, request.task, request.title) == ("codex", True, "fix the tests", "fix the tests")
    assert parse_spawn("codex say \"hi\" --here", ["codex"]).task == 'say "hi" --here', "options come before the task"
    resumed = parse_spawn("codex --resume abc-1", ["codex"])
    assert (resumed.thread, resumed.resume, resumed.task, resumed.title) == (False, "abc-1", "", "codex session abc-1")


async def test_the_built_in_session_hosts_sessions_include_one_started_in_an_ide_and_a_press_continues_it(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        ide = [await world.app.session_host.create(str(tmp_path), title=f"Refactor {n}") for n in range(11)]  # as Zed's session/new
        await world.exchange(OWNER, OWNER, "hello", "You said: hello")
        await world.send(OWNER, OWNER, "/sessions")
        message_id, buttons = await world.keyboard(OWNER, "Sessions of runwield")
        assert [b["text"] for b in buttons] == ["hello · just now", *(f"Refactor {n} · just now" for n in range(10, 1, -1))], "the ten newest"
        await world.press(OWNER, OWNER, buttons[1]["callback_data"], message_id)
        await world.reply_containing(OWNER, f"Resumed session {ide[10].id} on runwield")
        await world.exchange(OWNER, OWNER, "carry on", "You said: carry on")
        transcript = await world.app.store.sessions.transcript(ide[10].id)
        assert [e.text for e in transcript if e.kind == "user"] == ["carry on"], "the chat continues the IDE's session"


async def test_a_channel_without_threads_or_buttons_refuses_a_thread_and_lists_sessions_with_their_resume(tmp_path: Path) -> None:
    channel = RecordingChannel(Capabilities(max_message_length=4000, buttons=False), agent="codex")
    bridge = Bridge({"codex": CommandAgent(AgentConfig(**asking_agent(tmp_path)))}, MemoryBindings(), start_timeout=PATIENCE, backoff=FAST_BACKOFF)
    channel.inbox = ChannelInbox(bridge, channel)
    here = Conversation("memory", "1")
    try:
        for text in ("/spawn codex --thread fix it", "/spawn codex fix it"):
            await channel.inbox.receive_message(IncomingMessage(here, Sender("me", "me"), text))
        await channel.wait_for("The memory channel cannot open threads. Use /spawn AGENT --here TASK instead.")
        await channel.wait_for("echo: fix it")
        [session] = [call["sessionId"] for call in agent_calls(tmp_path, "session/new")]
        await channel.inbox.receive_message(IncomingMessage(here, Sender("me", "me"), "/sessions"))
        listing = await channel.wait_for("Sessions of codex")
        assert f"1. fix it (just now, continuing here): /resume {session}" in listing and "send its /resume" in listing
    finally:
        await bridge.close()
