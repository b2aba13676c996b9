"""The real coding agents from npm (Codex, Qwen Code 0.24 and 0.15, Claude Agent, Gemini CLI, OpenCode) drive RunWield Sessions through `wld acp`,
offline: each against a local fake of its provider, with HOME in a temp directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_session import menus, offered, say, selection, since, text_since, wld_session
from acp_wire import WireClient
from fakes.openai_api import Reply
from tests.bridge_kit import OWNER, bridge_world
from tests.fakes.telegram_api import TelegramFake
from test_cli_first_use import free_port, wld
from waiting import PATIENCE, until
from real_agents import AGENTS, CODEX, QWEN, RealAgent, menu_choice

from runwield_bridge.runtimes.agent_modes import self_approval_warning

REJECT = {"codex": "No, and tell Codex what to do differently", "qwen": "Reject", "claude": "No", "gemini": "Reject", "opencode": "Reject"}
ALLOW_ONCE = {"codex": "Yes, proceed", "qwen": "Allow", "claude": "Yes", "gemini": "Allow", "opencode": "Allow once"}


def tool_status(notification: dict[str, Any], call_id: str) -> str | None:
    """The status a ``session/update`` gives the agent's tool call ``call_id``, if it is about that call."""
    update = notification["params"]["update"]
    return update.get("status") if update.get("toolCallId") == call_id else None


def settled_since(client: WireClient, start: int, sid: str) -> bool:
    """Whether the Session's turn has settled since message ``start``."""
    return any(((u.get("_meta") or {}).get("runwield", {}).get("turn") or {}).get("state") == "settled" for u in since(client, start, sid))


async def asked(client: WireClient, start: int, sid: str, about: str) -> str:
    """The chat menu asking about ``about`` since message ``start``, once it is shown (a prompt sent while the
    agent's turn is still ending is steered into it, so its answer can come before the question)."""
    await client.wait_notification(lambda n: about in json.dumps(n["params"]) and "asks to go ahead" in json.dumps(n["params"]))
    [menu] = [menu for menu in menus(client, start, sid, "asked") if about in menu]
    return menu


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
            menu = await asked(client, start, sid, "rejected.txt")
            assert not (tmp_path / "rejected.txt").exists()  # asked before anything was written
            answered = len(client.messages)
            await say(client, sid, menu_choice(menu, REJECT[agent.name]))
            await client.wait_notification(lambda n: tool_status(n, agent.shown_id("c1")) == "failed")
            await until(lambda: settled_since(client, answered, sid), "the agent's turn settles after the rejection")
            assert not (tmp_path / "rejected.txt").exists()

            start = len(client.messages)
            await say(client, sid, "write allowed.txt")
            menu = await asked(client, start, sid, "allowed.txt")
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
            assert selection(since(client, start, sid, "config_option_update")[-1])["agent_mode"] == "yolo"  # an IDE is told

            start = len(client.messages)
            await say(client, sid, "write unasked.txt")
            await client.wait_notification(lambda n: tool_status(n, "c1") == "completed")
            assert (tmp_path / "unasked.txt").read_text() == "yolo" and not menus(client, start, sid, "asked")


@pytest.mark.parametrize("agent", [CODEX, QWEN], ids=["codex", "qwen"])
async def test_model_lists_the_agents_own_models_and_a_choice_reaches_its_provider(tmp_path: Path, agent: RealAgent) -> None:
    async with agent.fake() as fake:
        other = agent.other_model(tmp_path / "home", fake)
        fake.queue(Reply(text=("hi",)), Reply(text=("from the other model",)))
        async with wld_session(tmp_path, config=agent.config(tmp_path / "home", fake)) as (client, sid):
            await say(client, sid, "hello")
            assert fake.turn_models()[-1] == fake.model
            start = len(client.messages)
            await say(client, sid, "/model")
            [menu] = menus(client, start, sid, "asked")
            assert f"{agent.name}: {fake.model} — (current)" in menu and f"{agent.name}: {other}" in menu
            start = len(client.messages)
            await say(client, sid, menu_choice(menu, f"{agent.name}: {other}"))
            assert f"Model: {agent.name}: {other}." in text_since(client, start, sid)
            await say(client, sid, "again")
            assert fake.turn_models()[-1] == other


async def test_an_ide_sees_the_agents_own_models_and_modes_once_its_session_opens_and_its_choice_reaches_the_agent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with QWEN.fake() as fake:
        other = QWEN.other_model(home, fake)
        fake.queue(Reply(text=("hi",)), Reply(tool_calls=(QWEN.write("c1", tmp_path, "unasked.txt", "yolo"),)), Reply(text=("done",)))
        async with wld_session(tmp_path, config=QWEN.config(home, fake)) as (client, sid):
            [opened] = [m["result"] for m in client.messages if (m.get("result") or {}).get("sessionId") == sid]
            assert "agent_mode" not in selection(opened) and not [v for v in offered(opened, "model") if v.startswith("qwen: ")]

            await say(client, sid, "hello")  # the agent's session opens: the IDE is told what it offers
            [update] = [u for u in since(client, 0, sid, "config_option_update") if "agent_mode" in selection(u)]
            assert selection(update)["agent_mode"] == "default" and "yolo" in offered(update, "agent_mode")
            assert selection(update)["model"] == f"qwen: {fake.model}(openai)"
            assert {f"qwen: {other}(openai)", "scripted", "acp:qwen"} <= set(offered(update, "model"))  # RunWield's choices stay

            choose = {"sessionId": sid, "configId": "model", "value": f"qwen: {other}(openai)"}
            assert selection(await client.call("session/set_config_option", choose))["model"] == f"qwen: {other}(openai)"
            refused = await client.request("session/set_config_option", {**choose, "configId": "agent_mode", "value": "reckless"})
            assert refused["error"]["code"] == -32602 and "offers no mode 'reckless'" in refused["error"]["data"]["details"]
            start = len(client.messages)
            chosen = await client.call("session/set_config_option", {**choose, "configId": "agent_mode", "value": "yolo"})
            assert selection(chosen)["agent_mode"] == "yolo"
            warning = self_approval_warning("qwen", "yolo")
            await client.wait_notification(lambda n: warning in json.dumps(n["params"]))

            await say(client, sid, "write unasked.txt")
            await client.wait_notification(lambda n: tool_status(n, "c1") == "completed")
            assert (tmp_path / "unasked.txt").read_text() == "yolo" and not menus(client, start, sid, "asked")  # yolo: not asked
            assert fake.turn_models()[-1] == other
            start = len(client.messages)
            await say(client, sid, "/agent guide")
            [changed] = since(client, start, sid, "config_option_update")
            assert selection(changed)["mode"] == "guide" and selection(changed)["agent_mode"] == "yolo"  # RunWield's Agent, beside the agent's


async def test_a_chat_on_qwen_through_the_bridge_gets_its_write_as_a_question_and_reject_leaves_it_unwritten(tmp_path: Path) -> None:
    async with QWEN.fake() as fake:
        fake.queue(Reply(tool_calls=(QWEN.write("c1", tmp_path, "rejected.txt", "no"),)))
        agents = {"qwen": QWEN.section(tmp_path / "home", fake)}
        async with bridge_world(tmp_path=tmp_path, telegram={"agent": "qwen", "cwd": str(tmp_path)}, agents=agents) as world:
            await world.send(OWNER, OWNER, "write rejected.txt")
            message_id, buttons = await world.keyboard(OWNER, "rejected.txt", timeout=2 * PATIENCE)
            assert not (tmp_path / "rejected.txt").exists()  # asked (in Qwen's default mode), nothing written yet
            [reject] = [button for button in buttons if button["text"] == "Reject"]
            await world.press(OWNER, OWNER, reject["callback_data"], message_id)
            await fake.wait_until(lambda: any("canceled by the user" in json.dumps(call.params) for call in fake.calls))  # Qwen was told
            assert not (tmp_path / "rejected.txt").exists()


async def test_a_session_the_bridge_resumes_on_qwen_is_put_back_in_its_asking_mode(tmp_path: Path) -> None:
    async with QWEN.fake() as fake, TelegramFake() as telegram:
        fake.queue(Reply(text=("first words",)), Reply(tool_calls=(QWEN.write("c1", tmp_path, "asked.txt", "no"),)))
        agents = {"qwen": QWEN.section(tmp_path / "home", fake)}
        world_settings: dict[str, Any] = {"tmp_path": tmp_path, "fake": telegram, "telegram": {"agent": "qwen", "cwd": str(tmp_path)}, "agents": agents}
        async with bridge_world(**world_settings) as world:
            await world.exchange(OWNER, OWNER, "hello", "first words", timeout=2 * PATIENCE)
            first = (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id
            await world.exchange(OWNER, OWNER, "/new", "New session", timeout=2 * PATIENCE)
        async with bridge_world(**world_settings) as world:  # a new Qwen Code process: it reopens the session in its `auto`
            await world.exchange(OWNER, OWNER, f"/resume {first}", f"Resumed session {first}", timeout=2 * PATIENCE)
            await world.send(OWNER, OWNER, "write asked.txt")
            await world.keyboard(OWNER, "asked.txt", timeout=2 * PATIENCE)
            assert not (tmp_path / "asked.txt").exists()  # asked, in its `default` mode, before anything was written


def test_wld_doctor_says_which_agent_approves_itself_in_its_configured_mode(tmp_path: Path) -> None:
    (tmp_path / "wld.toml").write_text(
        f'[web]\nlisten = "127.0.0.1:{free_port()}"\n\n'
        f'[agents.qwen]\ncommand = ["qwen", "--acp"]\nmode = "yolo"\n\n'
        f'[agents.codex]\ncommand = ["codex-acp"]\n'
    )
    doctor = wld("doctor", home=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")})
    lines = doctor.stdout.splitlines()
    assert doctor.returncode == 1 and lines[-1] == "1 problem(s) found", doctor.stdout + doctor.stderr
    assert f"problem  [agents.qwen]: {self_approval_warning('qwen', 'yolo')}" in lines
    assert "ok       [agents.codex]: codex agent: its sessions start in its mode `untrusted`, in which it asks you before it acts" in lines
