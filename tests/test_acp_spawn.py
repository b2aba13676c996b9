"""/spawn in the Session Host, over `wld acp` as a real subprocess (every message checked against the official schema):
a new Session of the same project on an external agent (the SDK test agent standing in for Codex), its task as its
first turn, named in a message of its own with `_meta.runwield.spawned`; mistakes refused with nothing started."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from acp_session import menus, say, since, text_since, wld_session
from acp_wire import WireClient
from runwield_bridge.acp.extensions import SPAWNED
from tests.bridge_kit import agent_calls, asking_agent
from tests.wld_process import write_config
from waiting import release, until


def config(tmp_path: Path) -> str:
    """wld.toml with the SDK test agent as ``[agents.echo-agent]``; Sessions stay native (the scripted model)."""
    return write_config(tmp_path / "agents.toml", {"agents": {"echo-agent": asking_agent(tmp_path)}}).read_text()


def spawned(client: WireClient, start: int, session_id: str) -> list[dict[str, Any]]:
    """The `_meta.runwield.spawned` hints the Session sent since ``start``."""
    return [hint.model_dump(by_alias=True) for u in since(client, start, session_id, "agent_message_chunk") if (hint := SPAWNED.read(u))]


async def listed(client: WireClient) -> dict[str, str]:
    """Every Session the Session Host lists: id -> title."""
    return {s["sessionId"]: s.get("title") or "" for s in (await client.call("session/list", {}))["sessions"]}


async def test_spawn_starts_the_agent_on_its_task_in_a_new_session_that_a_client_joining_it_follows(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=config(tmp_path)) as (client, origin):
        [commands] = since(client, 0, origin, "available_commands_update")
        [spawn] = [c for c in commands["availableCommands"] if c["name"] == "spawn"]
        assert spawn["input"]["hint"] == "AGENT [--here | --thread] [--resume SESSION_ID] TASK"

        start = len(client.messages)
        assert (await say(client, origin, "/spawn echo-agent --thread hold on"))["result"] == {"stopReason": "end_turn"}
        [hint] = spawned(client, start, origin)
        new = hint["sessionId"]
        assert hint == {"sessionId": new, "agent": "echo-agent", "task": "hold on", "place": "thread", "cwd": str(tmp_path)}
        assert text_since(client, start, origin) == f"🧵 echo-agent session {new} started beside this one: hold on"
        assert (await listed(client))[new] == "hold on", "listed beside the Session that spawned it, titled with its task"
        await until(lambda: [c["texts"][-1] for c in agent_calls(tmp_path, "session/prompt")] == ["hold on"], "the task reaching the agent")

        joined = len(client.messages)
        await client.call("session/resume", {"sessionId": new, "cwd": str(tmp_path), "mcpServers": []})
        await until(lambda: since(client, joined, new, "available_commands_update"), "the joined Session's commands")
        release(tmp_path, "go")
        await until(lambda: "released: go" in text_since(client, joined, new), "the rest of the task's reply, streamed to the client that joined")
        await until(lambda: since(client, joined, new, "session_info_update"), "the task's turn settling")

        page = await client.call("_runwield/history", {"sessionId": new})
        said = [(e["update"]["sessionUpdate"], e["update"]["content"]["text"]) for e in page["entries"] if "content" in e["update"]]
        assert said == [("user_message_chunk", "hold on"), ("agent_message_chunk", "released: go")], "the task is the person's message"
        origin_page = await client.call("_runwield/history", {"sessionId": origin})
        assert SPAWNED.read(origin_page["entries"][-1]["update"]) is not None, "the saved line keeps its hint"

        start = len(client.messages)
        await say(client, origin, f"/spawn echo-agent --resume {new} and again")
        assert [h["place"] for h in spawned(client, start, origin)] == ["here"]
        assert text_since(client, start, origin) == f"🆕 echo-agent session {new} continued: and again"
        await until(lambda: "echo: and again" in text_since(client, start, new), "the continued Session's reply")
        sessions = {c["sessionId"] for c in agent_calls(tmp_path, "session/prompt")}
        assert len(sessions) == 1, "the same agent session continues"


def asked(wld_home: Path, session_id: str) -> bool:
    """The Session's transcript holds a question still waiting (read from its SQLite file, as the process wrote it)."""
    with contextlib.closing(sqlite3.connect(wld_home / "wld.db")) as db:
        kinds = [kind for (kind,) in db.execute("SELECT kind FROM transcript WHERE session_id = ? ORDER BY id", (session_id,))]
    return bool(kinds) and kinds[-1] == "question"


async def test_a_question_the_task_asked_of_nobody_is_a_chat_menu_for_a_client_without_forms_that_opens_it(tmp_path: Path, wld_home: Path) -> None:
    async with wld_session(tmp_path, config=config(tmp_path)) as (client, origin):
        start = len(client.messages)
        await say(client, origin, "/spawn echo-agent --thread choose a colour")
        [hint] = spawned(client, start, origin)
        new = hint["sessionId"]
        await until(lambda: asked(wld_home, new), "the task's question, asked while no client had its Session open")
        joined = len(client.messages)
        await client.call("session/resume", {"sessionId": new, "cwd": str(tmp_path), "mcpServers": []})
        await until(lambda: menus(client, joined, new, "asked"), "the question shown to the client that opened the Session")
        [menu] = menus(client, joined, new, "asked")
        assert "Pick a colour" in menu
        assert (await say(client, new, "green"))["result"] == {"stopReason": "end_turn"}
        assert 'form: accept {"colour": "green"}' in text_since(client, joined, new)


async def test_spawn_runwield_starts_a_native_session_as_the_chats_do(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=config(tmp_path)) as (client, origin):
        start = len(client.messages)
        await say(client, origin, "/spawn runwield --thread say hello")
        [hint] = spawned(client, start, origin)
        new = hint["sessionId"]
        await client.call("session/resume", {"sessionId": new, "cwd": str(tmp_path), "mcpServers": []})
        assert (await say(client, new, "and then?"))["result"] == {"stopReason": "end_turn"}, "it waits for the task's turn"
        page = await client.call("_runwield/history", {"sessionId": new})
        said = [e["update"]["content"]["text"] for e in page["entries"] if e["update"]["sessionUpdate"] == "user_message_chunk"]
        assert said == ["say hello", "and then?"]
        assert "You said: say hello" in "".join(e["update"]["content"]["text"] for e in page["entries"] if "content" in e["update"])
        assert not agent_calls(tmp_path), "the scripted model answered, not an external agent"


async def test_a_wrong_spawn_is_refused_plainly_and_starts_nothing(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=config(tmp_path)) as (client, origin):
        before = await listed(client)
        refusals = {
            "/spawn codex fix it": "There is no agent named 'codex'. Configured agents: runwield, echo-agent.",
            "/spawn echo-agent": "Say what echo-agent should do.",
            "/spawn echo-agent --here --thread fix it": "Choose one of --here and --thread, not both.",
            "/spawn echo-agent --fast fix it": "/spawn has no option --fast.",
            f"/spawn echo-agent --resume {origin} fix it": f"There is no session {origin!r} on echo-agent to continue.",
            "/spawn echo-agent --resume ses_nope fix it": "There is no session 'ses_nope' on echo-agent to continue.",
        }
        for typed, reason in refusals.items():
            start = len(client.messages)
            assert (await say(client, origin, typed))["result"] == {"stopReason": "end_turn"}
            [notice] = since(client, start, origin, "agent_message_chunk")
            assert notice["_meta"]["runwield"]["notice"] == "error", typed
            assert reason in notice["content"]["text"] and "Nothing was started." in notice["content"]["text"], typed
        assert await listed(client) == before
        assert not agent_calls(tmp_path), "the agent was never started"
