"""The real coding agents from npm (Codex, Qwen Code 0.24 and 0.15) drive RunWield Sessions through `wld acp`,
offline: each against a local fake of its provider, with HOME in a temp directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp_session import menus, say, text_since, wld_session
from fakes.openai_api import Reply
from real_agents import AGENTS, QWEN, RealAgent, menu_choice

from runwield_bridge.runtimes.agent_modes import self_approval_warning

REJECT = {"codex": "No", "qwen": "Reject"}
ALLOW_ONCE = {"codex": "Yes, proceed", "qwen": "Allow"}
by_id = pytest.mark.parametrize("agent", AGENTS, ids=[agent.id for agent in AGENTS])


@by_id
async def test_the_agent_streams_its_reply_into_the_session(tmp_path: Path, agent: RealAgent) -> None:
    async with agent.fake() as fake:
        fake.queue(Reply(text=("Hel", "lo from ", agent.name)))
        async with wld_session(tmp_path, config=agent.config(tmp_path / "home", fake)) as (client, sid):
            start = len(client.messages)
            response = await say(client, sid, "say hello")
            assert response.get("result", {}).get("stopReason") == "end_turn", (response, text_since(client, start, sid))
            assert f"Hello from {agent.name}" in text_since(client, start, sid)
            assert "say hello" in json.dumps(fake.calls[0].params)


@by_id
async def test_in_its_default_configuration_the_agent_asks_before_writing_and_reject_leaves_the_file_unwritten(
    tmp_path: Path, agent: RealAgent
) -> None:
    async with agent.fake() as fake:
        fake.queue(
            Reply(tool_calls=(agent.write("c1", tmp_path, "rejected.txt", "no"),)), Reply(text=("not written",)),
            Reply(tool_calls=(agent.write("c2", tmp_path, "allowed.txt", "yes"),)), Reply(text=("written",)),
        )  # fmt: skip
        async with wld_session(tmp_path, config=agent.config(tmp_path / "home", fake)) as (client, sid):
            start = len(client.messages)
            await say(client, sid, "write rejected.txt")
            [menu] = menus(client, start, sid, "asked")
            assert not (tmp_path / "rejected.txt").exists()  # asked before anything was written
            await say(client, sid, menu_choice(menu, REJECT[agent.name]))
            await client.wait_notification(lambda n: "not written" in json.dumps(n["params"]))
            assert not (tmp_path / "rejected.txt").exists()

            start = len(client.messages)
            await say(client, sid, "write allowed.txt")
            [menu] = menus(client, start, sid, "asked")
            assert not (tmp_path / "allowed.txt").exists()
            await say(client, sid, menu_choice(menu, ALLOW_ONCE[agent.name]))
            await client.wait_notification(lambda n: "written" in json.dumps(n["params"]) and "not written" not in json.dumps(n["params"]))
            assert (tmp_path / "allowed.txt").read_text() == "yes"


async def test_a_mode_in_which_the_agent_approves_itself_is_said_in_the_chat_before_the_first_turn(tmp_path: Path) -> None:
    async with QWEN.fake() as fake:
        fake.queue(Reply(text=("hi",)))
        async with wld_session(tmp_path, config=QWEN.config(tmp_path / "home", fake, 'mode = "auto"\n')) as (client, sid):
            start = len(client.messages)
            await say(client, sid, "hello")
            said = text_since(client, start, sid)
            warning = self_approval_warning("qwen", "auto")
            assert warning in said and said.index(warning) < said.index("hi")
