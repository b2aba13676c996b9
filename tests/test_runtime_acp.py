"""An external ACP agent as a Session's runtime, over `wld acp` as a real subprocess: the official TypeScript SDK's
example agent (it asks for permission) and our asking agent (elicitations, session/load, a prompt log)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_session import FORMS_INIT, menus, say, since, text_since, wld_session
from acp_wire import WireClient
from tests.bridge_kit import NOT_OFFERED
from test_acp_server import INIT, WLD
from waiting import PATIENCE

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_AGENT = REPO / "node_modules" / "acpx" / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples" / "agent.js"
ASKING_AGENT = Path(__file__).parent / "agents" / "asking_agent.py"


def example_config(extra: str = "") -> str:
    node = shutil.which("node")
    assert node and EXAMPLE_AGENT.exists(), "the TypeScript SDK's example agent needs node and node_modules"
    return f'[sessions]\nruntime = "acp:example"\n{extra}\n[agents.example]\ncommand = {json.dumps([node, str(EXAMPLE_AGENT)])}\n'


def asking_config(tmp_path: Path, extra: str = "") -> str:
    env = {"AGENT_LOG": str(tmp_path / "agent.log"), "AGENT_STATE": str(tmp_path / "agent-state.json")}
    return (
        f'[sessions]\nruntime = "acp:asker"\n{extra}\n[agents.asker]\ncommand = {json.dumps([sys.executable, str(ASKING_AGENT)])}\n'
        f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in env.items())} }}\n"
    )


def agent_log(tmp_path: Path, method: str) -> list[dict[str, Any]]:
    lines = (tmp_path / "agent.log").read_text().splitlines()
    return [entry for entry in map(json.loads, lines) if entry["method"] == method]


def tool_statuses(client: WireClient, start: int, sid: str) -> dict[str, str]:
    statuses: dict[str, str] = {}
    for update in since(client, start, sid):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and update.get("status"):
            statuses[update["toolCallId"]] = update["status"]
    return statuses


async def test_the_example_agent_drives_the_turn_and_its_permission_is_a_form_for_a_forms_client(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT, config=example_config()) as (client, sid):
        forms: list[dict[str, Any]] = []

        def allow(params: dict[str, Any]) -> dict[str, Any]:
            forms.append(params)
            return {"action": "accept", "content": {"answer": "allow"}}

        client.on_request("elicitation/create", allow)
        start = len(client.messages)
        response = await say(client, sid, "Please improve the config")
        assert response["result"]["stopReason"] == "end_turn"
        said = text_since(client, start, sid)
        assert said.startswith("I'll help you with that.") and "successfully updated the configuration" in said
        assert tool_statuses(client, start, sid) == {"call_1": "completed", "call_2": "completed"}
        [form] = forms
        assert "Modifying critical configuration file" in form["message"] and form["toolCallId"] == "call_2"
        labels = [option["title"] for option in form["requestedSchema"]["properties"]["answer"]["oneOf"]]
        assert labels == ["Allow this change", "Skip this change"]
        assert not [m for m in client.requests if m["method"] == "session/request_permission"]  # never asked as a permission


async def test_a_chat_only_client_gets_the_permission_as_a_menu_and_reject_means_it_does_not_happen(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=example_config()) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "Please improve the config")
        [menu] = menus(client, start, sid, "asked")
        assert "1. Allow this change" in menu and "2. Skip this change" in menu
        await say(client, sid, "2")
        await client.wait_notification(lambda n: "skip the configuration update" in json.dumps(n["params"]))
        assert tool_statuses(client, start, sid).get("call_2") != "completed"
        assert "successfully updated" not in text_since(client, start, sid)


async def test_an_unanswered_permission_expires_as_a_rejection(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=example_config("question_timeout = 0.5")) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "Please improve the config")
        await client.wait_notification(lambda n: "skip the configuration update" in json.dumps(n["params"]))
        said = text_since(client, start, sid)
        assert "expired without an answer" in said and "successfully updated" not in said


async def test_an_elicitation_from_the_agent_is_a_form_and_its_answer_goes_back(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT, config=asking_config(tmp_path)) as (client, sid):
        client.on_request("elicitation/create", lambda params: {"action": "accept", "content": {"answer": "green"}})
        start = len(client.messages)
        await say(client, sid, "choose")
        assert text_since(client, start, sid) == 'form: accept {"colour": "green"}'
        [form] = [m["params"] for m in client.requests if m["method"] == "elicitation/create"]
        assert "Pick a colour" in form["message"] and "Colour" in form["message"]


async def test_a_declined_permission_from_our_agent_is_a_rejection(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT, config=asking_config(tmp_path)) as (client, sid):
        client.on_request("elicitation/create", lambda params: {"action": "decline"})
        start = len(client.messages)
        await say(client, sid, "permission")
        assert text_since(client, start, sid) == "permission: selected reject"
        assert tool_statuses(client, start, sid) == {"call-1": "failed"}


async def test_client_methods_we_do_not_advertise_are_method_not_found_for_the_agent(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=asking_config(tmp_path)) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "terminal")
        assert text_since(client, start, sid) == NOT_OFFERED


async def test_each_turn_sends_only_its_new_input_after_a_byte_stable_context_prefix(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=asking_config(tmp_path)) as (client, sid):
        await say(client, sid, "first message")
        await say(client, sid, "second message")
        first, second = agent_log(tmp_path, "session/prompt")
        assert first["texts"][0].startswith("<runwield-context>") and first["texts"][1] == "first message"
        assert second["texts"] == ["second message"]
        assert len(agent_log(tmp_path, "session/new")) == 1


async def test_a_restart_reopens_the_agents_session_with_session_load(tmp_path: Path) -> None:
    config = asking_config(tmp_path)
    async with wld_session(tmp_path, config=config) as (client, sid):
        await say(client, sid, "hello")
    [created] = agent_log(tmp_path, "session/new")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        start = len(client.messages)
        await say(client, sid, "again")
        assert text_since(client, start, sid) == "echo: again"
    [loaded] = agent_log(tmp_path, "session/load")
    assert loaded["sessionId"] == created["sessionId"] and len(agent_log(tmp_path, "session/new")) == 1
    assert agent_log(tmp_path, "session/prompt")[-1]["texts"] == ["again"]


async def test_an_agent_that_cannot_reopen_its_session_says_so_after_a_restart(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=example_config("question_timeout = 0.5")) as (client, sid):
        await say(client, sid, "hello")
        await client.wait_notification(lambda n: "skip the configuration update" in json.dumps(n["params"]))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        start = len(client.messages)
        await say(client, sid, "again")
        await client.wait_notification(lambda n: "skip the configuration update" in json.dumps(n["params"]))
        assert "cannot reopen its earlier session" in json.dumps(since(client, start, sid))


@pytest.mark.parametrize(
    ("sessions", "error"),
    [('runtime = "acp:nobody"', "sessions.runtime: 'acp:nobody' is not a runtime"), ('model = "acp:asker"', "is a runtime, not a model")],
)
async def test_a_runtime_that_is_not_configured_or_used_as_a_model_is_a_config_error(tmp_path: Path, sessions: str, error: str) -> None:
    (tmp_path / "wld.toml").write_text(f"[sessions]\n{sessions}\n[agents.asker]\ncommand = [\"true\"]\n")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)  # the Session Host (and the configuration check) starts once it is answered
        await asyncio.wait_for(client.proc.wait(), PATIENCE)
        assert client.proc.returncode == 2 and error in client.stderr


# the picker: models, then the external agents


def model_option(options: list[dict[str, Any]]) -> dict[str, Any]:
    return next(option for option in options if option["id"] == "model")


async def set_model(client: WireClient, sid: str, value: str) -> dict[str, Any]:
    return await client.request("session/set_config_option", {"sessionId": sid, "configId": "model", "value": value})


async def test_the_model_picker_lists_external_agents_after_the_models_and_switches_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "wld.toml").write_text(asking_config(tmp_path).replace('runtime = "acp:asker"', ""))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        created = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid, picker = created["sessionId"], model_option(created["configOptions"])
        assert picker["currentValue"] == "scripted"
        assert picker["options"][-1] == {"value": "acp:asker", "name": "asker (external agent)", "description": "[agents.asker] drives the turns"}
        assert [o["value"] for o in picker["options"]].index("acp:asker") > [o["value"] for o in picker["options"]].index("scripted")
        switched = await set_model(client, sid, "acp:asker")
        assert model_option(switched["result"]["configOptions"])["currentValue"] == "acp:asker"
        assert not any(o["id"] == "thought_level" for o in switched["result"]["configOptions"])
        start = len(client.messages)
        await say(client, sid, "hello")
        assert text_since(client, start, sid) == "echo: hello"
        back = await set_model(client, sid, "scripted")
        assert model_option(back["result"]["configOptions"])["currentValue"] == "scripted"
        start = len(client.messages)
        await say(client, sid, "hello")
        assert text_since(client, start, sid) == "You said: hello"
        unknown = await set_model(client, sid, "acp:nobody")
        assert "unknown external agent 'acp:nobody'" in unknown["error"]["data"]["details"]


async def test_a_session_on_an_external_agent_needs_no_key_and_switching_back_without_one_names_it(tmp_path: Path) -> None:
    models = '[models.gpt]\nprovider = "openai"\nmodel = "gpt-4o"\n'
    (tmp_path / "wld.toml").write_text(asking_config(tmp_path, 'model = "gpt"').replace("[agents.asker]", models + "[agents.asker]"))
    env = {"WLD_CONFIG": str(tmp_path / "wld.toml"), "OPENAI_API_KEY": ""}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
        await client.call("initialize", INIT)
        sid = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        start = len(client.messages)
        await say(client, sid, "hello")
        assert text_since(client, start, sid) == "echo: hello"
        refused = await set_model(client, sid, "gpt")
        assert "OPENAI_API_KEY" in refused["error"]["data"]["details"]
        start = len(client.messages)
        await say(client, sid, "still here")
        assert text_since(client, start, sid) == "echo: still here"


# RunWield's tools as one MCP bus

MCP_AGENT = Path(__file__).parent / "agents" / "mcp_agent.py"


def mcp_config(tools: list[str]) -> str:
    return f'[sessions]\nruntime = "acp:mcp"\n\n[agents.mcp]\ncommand = {json.dumps([sys.executable, str(MCP_AGENT)])}\ntools = {json.dumps(tools)}\n'


async def test_user_interview_works_through_the_mcp_bus_when_the_agent_may_use_it(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT, config=mcp_config(["user_interview"])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "tools")
        assert text_since(client, start, sid) == "tools: user_interview"
        client.on_request("elicitation/create", lambda params: {"action": "accept", "content": {"answer": "blue"}})
        start = len(client.messages)
        await say(client, sid, "interview")
        said = text_since(client, start, sid)
        assert said.startswith("interview: ") and json.loads(said.removeprefix("interview: ")) == {
            "status": "answered", "answers": [{"question": "Which colour?", "type": "choice", "answer": "blue"}]
        }  # fmt: skip
        [form] = [m["params"] for m in client.requests if m["method"] == "elicitation/create"]
        assert form["message"] == "Which colour?"


async def test_plan_tools_are_served_when_listed_and_an_unknown_tool_is_a_config_error(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config(["write_plan", "user_interview"])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "tools")
        assert sorted(text_since(client, start, sid).removeprefix("tools: ").split(", ")) == ["user_interview", "write_plan"]
    (tmp_path / "wld.toml").write_text(mcp_config(["user_interview", "rm_rf"]))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await asyncio.wait_for(client.proc.wait(), PATIENCE)
        assert client.proc.returncode == 2 and "agents.mcp.tools: no tool 'rm_rf'" in client.stderr


async def test_a_plan_the_agent_writes_through_the_mcp_bus_is_there_for_load_plan(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config(["write_plan"])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "plan")
        assert "Saved Plan" in text_since(client, start, sid) and "A greeting file" in text_since(client, start, sid)
        start = len(client.messages)
        await say(client, sid, "/load-plan")
        menu = text_since(client, start, sid)
        assert "Choose a Plan" in menu and "A greeting file (draft" in menu, menu


async def test_the_agent_sees_no_runwield_tool_when_none_is_listed(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config([])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "tools")
        assert text_since(client, start, sid) == "tools: none"


async def test_cancelling_the_turn_withdraws_the_agents_question_and_the_next_turn_asks_again(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=example_config()) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "Please improve the config")
        assert menus(client, start, sid, "asked")
        await client.notify("session/cancel", {"sessionId": sid})
        await client.wait_notification(lambda n: '"stopReason": "cancelled"' in json.dumps(n["params"]))
        start = len(client.messages)
        while "error" in (response := await say(client, sid, "Please try again")):  # the cancelled turn is still being saved
            assert response["error"]["data"]["reason"] == "busy"
        assert menus(client, start, sid, "asked")
        await say(client, sid, "1")
        await client.wait_notification(lambda n: "successfully updated the configuration" in json.dumps(n["params"]))


async def test_a_chat_only_client_answers_the_agents_elicitation_from_a_menu(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=asking_config(tmp_path)) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "choose")
        [menu] = menus(client, start, sid, "asked")
        assert "Pick a colour" in menu and "2. green" in menu
        start = len(client.messages)
        await say(client, sid, "2")
        await client.wait_notification(lambda n: "form: accept" in json.dumps(n["params"]))
        assert text_since(client, start, sid).endswith('form: accept {"colour": "green"}')


@pytest.mark.parametrize("crash", ["crash", "hangup"])  # exits at once; closes the connection and lives on
async def test_an_agent_that_crashes_fails_the_turn_visibly_and_the_next_turn_starts_it_again(tmp_path: Path, crash: str) -> None:
    async with wld_session(tmp_path, config=asking_config(tmp_path)) as (client, sid):
        await say(client, sid, "hello")
        start = len(client.messages)
        crashed = await say(client, sid, crash)
        assert "error" in crashed or crashed["result"]["stopReason"] != "end_turn"
        assert "The turn could not be completed: the external agent asker failed" in json.dumps(since(client, start, sid))
        start = len(client.messages)
        await say(client, sid, "hello again")
        assert text_since(client, start, sid) == "echo: hello again"
    assert len(agent_log(tmp_path, "initialize")) == 2 and len(agent_log(tmp_path, "session/load")) == 1


async def test_thoughts_plans_and_usage_stream_into_the_session_and_its_transcript(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config([])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "stream")
        updates = since(client, start, sid)
        assert [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk"] == ["thinking it over"]
        assert "The agent's plan:\\n- [completed] read the code\\n- [pending] fix the bug" in json.dumps(updates)
        [usage] = [u for u in updates if u["sessionUpdate"] == "usage_update"]
        assert (usage["used"], usage["size"], usage["cost"]) == (1200, 200000, {"amount": 0.25, "currency": "USD"})
        assert text_since(client, start, sid).endswith("done")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = since(client, 0, sid)
        assert any(u["sessionUpdate"] == "agent_thought_chunk" and u["content"]["text"] == "thinking it over" for u in replayed)
        assert "fix the bug" in json.dumps(replayed)


async def test_a_restart_reopens_the_agents_session_with_session_resume_when_it_offers_only_that(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=mcp_config(["user_interview"])) as (client, sid):
        start = len(client.messages)
        await say(client, sid, "which session?")
        first = text_since(client, start, sid)
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        start = len(client.messages)
        await say(client, sid, "which session?")
        assert text_since(client, start, sid) == first and first.startswith("session mcp-")
        start = len(client.messages)
        await say(client, sid, "tools")  # the resumed session has the tool bus again
        assert text_since(client, start, sid) == "tools: user_interview"
