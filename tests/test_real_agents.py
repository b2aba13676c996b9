"""The real coding agents from npm (Codex, Qwen Code 0.24 and 0.15, Claude Agent, Gemini CLI) drive RunWield Sessions through `wld acp`,
offline: each against a local fake of its provider, with HOME in a temp directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_session import menus, say, text_since, wld_session
from fakes.openai_api import Reply
from real_agents import AGENTS, CODEX, QWEN, RealAgent, menu_choice

from runwield_bridge.runtimes.agent_modes import self_approval_warning

REJECT = {"codex": "No, and tell Codex what to do differently", "qwen": "Reject", "claude": "No", "gemini": "Reject"}
ALLOW_ONCE = {"codex": "Yes, proceed", "qwen": "Allow", "claude": "Yes", "gemini": "Allow"}


def tool_status(notification: dict[str, Any], call_id: str) -> str | None:
    """The status a ``session/update`` gives the agent's tool call ``call_id``, if it is about that call."""
    update = notification["params"]["update"]
    return update.get("status") if update.get("toolCallId") == call_id else None


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
            Reply(tool_calls=(agent.write("c1", tmp_path, "rejected.txt", "no"),)),
            *([Reply(text=("not written",))] if agent.goes_on_after_reject else []),
            Reply(tool_calls=(agent.write("c2", tmp_path, "allowed.txt", "yes"),)), Reply(text=("written",)),
        )  # fmt: skip
        async with wld_session(tmp_path, config=agent.config(tmp_path / "home", fake)) as (client, sid):
            start = len(client.messages)
            await say(client, sid, "write rejected.txt")
            [menu] = menus(client, start, sid, "asked")
            assert not (tmp_path / "rejected.txt").exists()  # asked before anything was written
            await say(client, sid, menu_choice(menu, REJECT[agent.name]))
            await client.wait_notification(lambda n: tool_status(n, agent.shown_id("c1")) == "failed")
            assert not (tmp_path / "rejected.txt").exists()

            start = len(client.messages)
            await say(client, sid, "write allowed.txt")
            [menu] = menus(client, start, sid, "asked")
            assert not (tmp_path / "allowed.txt").exists()
            await say(client, sid, menu_choice(menu, ALLOW_ONCE[agent.name]))
            await client.wait_notification(lambda n: tool_status(n, agent.shown_id("c2")) == "completed")
            await client.wait_notification(lambda n: "written" in json.dumps(n["params"]))
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


async def test_mode_shows_the_agents_own_modes_and_a_choice_changes_how_it_asks(tmp_path: Path) -> None:
    async with QWEN.fake() as fake:
        fake.queue(Reply(text=("hi",)), Reply(tool_calls=(QWEN.write("c1", tmp_path, "unasked.txt", "yolo"),)), Reply(text=("done",)))
        async with wld_session(tmp_path, config=QWEN.config(tmp_path / "home", fake)) as (client, sid):
            await say(client, sid, "hello")
            start = len(client.messages)
            await say(client, sid, "/mode")
            [menu] = menus(client, start, sid, "asked")
            assert "Choose the mode of qwen" in menu and "Default" in menu.split("(current)")[0].splitlines()[-1]
            start = len(client.messages)
            await say(client, sid, menu_choice(menu, "YOLO"))
            said = text_since(client, start, sid)
            assert "Mode of qwen: `yolo`." in said and self_approval_warning("qwen", "yolo") in said

            start = len(client.messages)
            await say(client, sid, "write unasked.txt")
            await client.wait_notification(lambda n: tool_status(n, "c1") == "completed")
            assert (tmp_path / "unasked.txt").read_text() == "yolo" and not menus(client, start, sid, "asked")


async def test_model_lists_the_agents_own_models_and_a_choice_reaches_its_provider(tmp_path: Path) -> None:
    async with CODEX.fake() as fake:
        fake.queue(Reply(text=("hi",)), Reply(text=("from the other model",)))
        async with wld_session(tmp_path, config=CODEX.config(tmp_path / "home", fake)) as (client, sid):
            await say(client, sid, "hello")
            assert fake.calls[-1]["model"] == "gpt-5.4"
            start = len(client.messages)
            await say(client, sid, "/model")
            [menu] = menus(client, start, sid, "asked")
            assert "codex: gpt-5.4 — (current)" in menu and "codex: gpt-5.2" in menu
            start = len(client.messages)
            await say(client, sid, menu_choice(menu, "codex: gpt-5.2"))
            assert "Model: codex: gpt-5.2." in text_since(client, start, sid)
            await say(client, sid, "again")
            assert fake.calls[-1]["model"] == "gpt-5.2"
