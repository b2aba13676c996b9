"""Child sessions through the real `wld bridge` and the Telegram fake: a parent Session hands a task to another agent
(`spawn_session`), its turn settles at once, the child's result comes back as a later turn of the parent without a
second prompt, the child's prompt is the task and nothing else, there is no echo loop, `/status` lists the child,
cancelling the parent cancels it; `send_session` reports admission apart from delivery."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp_session import say, since, text_since, wld_session
from acp_wire import WireClient
from test_acp_server import INIT, WLD
from test_runtime_acp import mcp_config
from tests.bridge_kit import OWNER, agent_calls, asking_agent, telegram_section
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import TelegramWorld
from tests.test_chat_journey import wld_bridge
from tests.wld_process import write_config
from waiting import PATIENCE, release, until

TASK = "hold the line until released"
PEER_CHAT = 777
INTERNAL = ("runwield", "_meta", "<<<", "child session", "spawn_session", "sessionId")
"""What a child's prompt must not carry: RunWield's own words and markers."""


@contextlib.asynccontextmanager
async def world(tmp_path: Path) -> AsyncIterator[tuple[TelegramWorld, TelegramFake]]:
    """`wld bridge` with the scripted model and the SDK test agent as ``[agents.tester]``, polling a Telegram fake."""
    async with TelegramFake() as fake:
        config = write_config(
            tmp_path / "wld.toml",
            {"agents": {"tester": asking_agent(tmp_path)}, "channels": {"telegram": telegram_section(fake) | {"cwd": str(tmp_path)}}},
        )
        async with wld_bridge(config, fake) as (_, chat):
            yield chat, fake


def child_of(reply: str) -> str:
    """The child's id in the parent's answer to ``spawn_session``."""
    accepted = json.loads(reply[reply.index("{") : reply.index("}") + 1])
    assert accepted["status"] == "accepted"
    return str(accepted["sessionId"])


def line_of(fake: TelegramFake, chat: int) -> dict[str, Any]:
    [line] = [m for m in fake.bot_messages(chat) if (m.get("text") or "").startswith("🧵 tester:")]
    return line


async def test_a_child_runs_in_the_background_and_its_result_is_a_later_turn_of_the_parent(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, f"delegate to tester: {TASK}")
        answer = await chat.reply_containing(OWNER, '"status": "accepted"', final=True)
        child = child_of(answer["text"])
        await until(lambda: bool([m for m in fake.bot_messages(OWNER) if m.get("text") == f"🧵 tester: {TASK} …"]), "the child's line")
        await until(lambda: bool(agent_calls(tmp_path, "session/prompt")), "the child's prompt at its agent")
        [prompted] = agent_calls(tmp_path, "session/prompt")
        assert prompted["texts"] == [TASK], "the child's prompt is the task, and nothing RunWield-internal"
        assert not any(mark in text for mark in INTERNAL for text in prompted["texts"])
        assert not [t for t in chat.texts(OWNER) if "finished the task" in t], "the parent's turn settled before the child"

        await chat.say(OWNER, f"tell session {child}: hurry please")  # its own child: the completion path reports back
        told = await chat.reply_containing(OWNER, "targetDisposition", final=True)
        assert '"targetDisposition": "steered"' in told["text"] and '"delivery": {"status": "skipped"}' in told["text"]

        release(tmp_path, "all tests pass")
        result = await chat.reply_containing(OWNER, "tester finished the task I handed over", final=True)
        assert "It says: released: all tests pass" in result["text"]
        await until(lambda: line_of(fake, OWNER)["text"] == f"🧵 tester: {TASK} … done", "the same line edited to done")

        await chat.say(OWNER, "/status")
        status = await chat.reply_containing(OWNER, "Children:", final=True)
        assert f"Children: {child} (tester, done)" in status["text"]
        assert len([t for t in chat.texts(OWNER) if "finished the task" in t]) == 1, "exactly one result turn: no echo loop"
        assert [c["texts"] for c in agent_calls(tmp_path, "session/prompt")] == [[TASK], ["hurry please"]], "nothing echoed to the child"


async def test_a_child_resumed_by_its_parent_continues_its_agent_session_and_a_strange_id_starts_nothing(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, "delegate to tester: first part")
        child = child_of((await chat.reply_containing(OWNER, '"status": "accepted"', final=True))["text"])
        await chat.reply_containing(OWNER, "It says: echo: first part", final=True)
        await chat.say(OWNER, f"delegate to tester again in {child}: second part")
        await until(lambda: len([t for t in chat.texts(OWNER) if '"status": "accepted"' in t]) == 2, "the second spawn accepted")
        again = child_of([t for t in chat.texts(OWNER) if '"status": "accepted"' in t][-1])
        await chat.reply_containing(OWNER, "It says: echo: second part", final=True)
        first, second = agent_calls(tmp_path, "session/prompt")
        assert again == child and second["sessionId"] == first["sessionId"], "the same child, on the same agent session"
        await chat.say(OWNER, "delegate to tester again in nosuchsession: third part")
        refused = await chat.reply_containing(OWNER, "nosuchsession", final=True)
        assert "no child session 'nosuchsession' of this session on tester to resume; nothing was started" in refused["text"]
        assert len(agent_calls(tmp_path, "session/prompt")) == 2


async def test_a_child_whose_agent_fails_is_reported_to_the_parent_as_failed(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, "delegate to tester: crash right away")
        result = await chat.reply_containing(OWNER, "tester failed the task I handed over", final=True)
        assert "the external agent tester failed" in result["text"]
        await until(lambda: line_of(fake, OWNER)["text"] == "🧵 tester: crash right away … failed", "the line edited to failed")


async def test_a_child_writing_to_its_parent_is_not_announced_back_no_echo_loop(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, "hello")  # the first message starts the parent session
        await chat.reply_containing(OWNER, "You said: hello", final=True)
        await chat.say(OWNER, "/status")
        parent_id = re.search(r"Session: (\S+)", (await chat.reply_containing(OWNER, "Session: ", final=True))["text"]).group(1)
        await chat.say(OWNER, f"delegate to runwield: tell session {parent_id}: hi from your child")
        result = await chat.reply_containing(OWNER, "runwield finished the task I handed over", final=True)
        assert '"delivery": {"status": "skipped"}' in result["text"], "the child's word to its parent is not announced back"
        await chat.reply_containing(OWNER, "You said: hi from your child", final=True)
        await chat.say(OWNER, "/status")
        await until(lambda: sum("Children:" in t for t in chat.texts(OWNER)) == 1, "the status with the child")
        assert sum("finished the task" in t for t in chat.texts(OWNER)) == 1, "one result turn, and nothing bounced back"
        assert not [t for t in chat.texts(OWNER) if "replied to your message" in t]


async def test_cancelling_the_parent_cancels_its_running_child_and_no_result_follows(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, "delegate to tester: hold it, slow down")  # the parent's own reply is slow too
        await until(lambda: bool(agent_calls(tmp_path, "session/prompt")), "the child's prompt")
        await chat.say(OWNER, "/status")
        status = await chat.reply_containing(OWNER, "Children:")
        [child] = re.findall(r"Children: (\S+) \(tester, running\)", status["text"])
        await chat.say(OWNER, "/cancel")
        await until(lambda: bool(agent_calls(tmp_path, "session/cancel")), "the child's turn cancelled")
        await until(lambda: line_of(fake, OWNER)["text"] == "🧵 tester: hold it, slow down … cancelled", "the line edited to cancelled")
        release(tmp_path, "too late")
        await chat.say(OWNER, "/status")
        await until(lambda: any(f"Children: {child} (tester, cancelled)" in t for t in chat.texts(OWNER)), "the child listed as cancelled")
        assert not [t for t in chat.texts(OWNER) if "finished the task" in t or "too late" in t], "no late result"


async def test_cancel_when_only_a_child_runs_cancels_the_child(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(OWNER, "delegate to tester: hold it")
        await chat.reply_containing(OWNER, '"status": "accepted"', final=True)  # the parent's turn has settled
        await until(lambda: bool(agent_calls(tmp_path, "session/prompt")), "the child's prompt")
        await chat.say(OWNER, "/cancel")
        await until(lambda: bool(agent_calls(tmp_path, "session/cancel")), "the child's turn cancelled")
        await until(lambda: line_of(fake, OWNER)["text"] == "🧵 tester: hold it … cancelled", "the line edited to cancelled")
        assert not [t for t in chat.texts(OWNER) if t == "Nothing is running."], "a running child is something to cancel"


async def test_send_session_steers_a_busy_peer_or_queues_for_an_idle_one_and_its_reply_comes_back_later(tmp_path: Path) -> None:
    async with world(tmp_path) as (chat, fake):
        await chat.say(PEER_CHAT, "think about it slowly, slow")
        await chat.reply_containing(PEER_CHAT, "You said:")
        await chat.say(PEER_CHAT, "/status")
        peer = re.search(r"Session: (\S+)", (await chat.reply_containing(PEER_CHAT, "Session:", final=True))["text"]).group(1)
        await chat.say(OWNER, f"tell session {peer}: please wrap up")
        told = await chat.reply_containing(OWNER, "targetDisposition", final=True)
        assert '"targetDisposition": "steered"' in told["text"] and '"delivery": {"status": "pending"}' in told["text"]
        await chat.reply_containing(PEER_CHAT, "You said: please wrap up", timeout=PATIENCE)
        reply = await chat.reply_containing(OWNER, f"The session {peer} replied to your message", final=True)
        assert "You said: please wrap up" in reply["text"]

        await chat.say(OWNER, f"tell session {peer}: one more thing")  # the peer is idle now: the text is its next turn
        told = await chat.reply_containing(OWNER, '"targetDisposition": "queued"', final=True)
        assert '"delivery": {"status": "pending"}' in told["text"]
        await chat.reply_containing(PEER_CHAT, "You said: one more thing")
        await chat.reply_containing(OWNER, f"The session {peer} replied to your message: You said: one more thing", final=True)


async def test_the_mcp_bus_offers_spawn_session_to_an_external_agent_and_its_child_reports_back(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config(["spawn_session"])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "tools")
        assert text_since(client, start, sid) == "tools: spawn_session"
        start = len(client.messages)
        assert (await say(client, sid, "spawn"))["result"] == {"stopReason": "end_turn"}
        spawned = text_since(client, start, sid)
        child = json.loads(spawned.removeprefix("spawn: "))["sessionId"]
        heard = f"heard: The child session {child} on runwield finished: You said: say hi from the child"
        await until(lambda: heard in text_since(client, start, sid), "the child's result as the parent's own turn")
        lines = [u for u in since(client, start, sid) if u["sessionUpdate"].startswith("tool_call") and u["toolCallId"] == f"child-{child}"]
        assert [u["_meta"]["runwield"]["child"]["state"] for u in lines] == ["running", "done"]
        assert lines[0]["title"] == "🧵 runwield: say hi from the child" and lines[-1]["status"] == "completed"
        responses = [m for m in client.messages if "id" in m and "method" not in m]
        assert len(responses) == 4, "initialize, session/new and two prompts: the result turn answers nothing"
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        users = [u["content"]["text"] for u in since(client, 0, sid, "user_message_chunk")]
        assert users == ["tools", "spawn"], "the result turn's prompt is kept as the model's input, not as a person's words"
        assert heard in text_since(client, 0, sid)
