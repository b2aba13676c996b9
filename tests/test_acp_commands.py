"""Slash commands and Agents over the wire: the registry, advertising, built-ins, templates, Skills."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp_session import menus, model_requests, probe_env, say, selection, since, text_since, wld_session
from acp_wire import WireClient
from test_acp_server import INIT, WLD

TEMPLATE = "---\ndescription: Review a file\nargument-hint: path\n---\nReview this file: $ARGUMENTS\n"
SKILL = "---\nname: tidy\ndescription: Tidy up code\n---\nRemove dead code and keep names clear.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a prompt template, a template named like a built-in, and a Skill."""
    commands = tmp_path / ".runwield" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(TEMPLATE)
    (commands / "help.md").write_text("---\ndescription: a template that loses to the built-in\n---\nHELP ME\n")
    skill = tmp_path / ".runwield" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    return tmp_path


@pytest.fixture
async def acp(project: Path):
    async with wld_session(project, env=probe_env(project)) as session:
        yield session


def advertised(update: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in update["availableCommands"]}


async def test_commands_from_builtins_register_commands_templates_and_skills_are_advertised(project: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=project, env=probe_env(project)) as client:
        await client.call("initialize", INIT)
        response = await client.request("session/new", {"cwd": str(project), "mcpServers": []})
        sid = response["result"]["sessionId"]
        update = await client.wait_notification(lambda n: n["params"]["update"]["sessionUpdate"] == "available_commands_update")
        assert client.messages.index(update) > client.messages.index(response), "advertised once the Session is known"
        commands = advertised(update["params"]["update"])
        assert {"agent", "model", "help", "review", "tidy", "approve", "fruit", "note"} <= set(commands)
        assert not {"copy", "theme", "quit", "exit", "new", "resume", "login", "models"} & set(commands)
        assert commands["help"]["description"] == "List the commands", "built-ins beat plugins and templates"
        assert commands["review"] == {"name": "review", "description": "Review a file", "input": {"hint": "path"}}
        assert commands["tidy"]["description"] == "Tidy up code"
        assert commands["model"]["_meta"] == {"runwield": {"aliases": ["models"]}}

        before = len(client.messages)
        await client.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        await client.wait_message(lambda _: bool(since(client, before, sid, "available_commands_update")))
        [again] = since(client, before, sid, "available_commands_update")
        assert advertised(again) == commands


async def test_help_and_terminal_ui_commands_answer_without_the_model(acp) -> None:
    client, sid = acp
    start = len(client.messages)
    await say(client, sid, "/help")
    listing = text_since(client, start, sid)
    assert "/agent [Agent (optional)]: Choose the Agent" in listing and "(also /models)" in listing
    assert "/review [path]: Review a file" in listing and "/tidy" in listing
    assert "does not run terminal-UI commands (/copy, /theme, /quit, /exit, /new, /resume, /login)" in listing
    for name in ("quit", "exit", "copy", "theme", "new", "resume", "login"):
        before = len(client.messages)
        assert (await say(client, sid, f"/{name}"))["result"] == {"stopReason": "end_turn"}
        assert text_since(client, before, sid) == f"/{name} belongs to a terminal UI and does not run over ACP; nothing was done."
    assert model_requests(client, start, sid) == 0


async def test_an_unknown_command_is_said_and_reaches_no_model(acp) -> None:
    client, sid = acp
    start = len(client.messages)
    await say(client, sid, "/frobnicate now")
    assert text_since(client, start, sid) == "Unknown command /frobnicate. /help lists the commands."
    assert model_requests(client, start, sid) == 0


async def test_templates_and_skills_become_model_prompts_and_replay_as_typed(acp, project: Path) -> None:
    client, sid = acp
    start = len(client.messages)
    await say(client, sid, "/review src/app.py")
    assert text_since(client, start, sid) == "You said: Review this file: src/app.py"
    start = len(client.messages)
    await say(client, sid, "/tidy utils.py")
    reply = text_since(client, start, sid)
    assert reply.startswith('You said: Use the "tidy" skill.') and "Remove dead code" in reply and reply.endswith("Apply it to: utils.py")
    before = len(client.messages)
    await client.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
    users = [u["content"]["text"] for u in since(client, before, sid, "user_message_chunk")]
    assert users == ["/review src/app.py", "/tidy utils.py"], "what the user typed, not the expanded prompt"


async def test_model_command_alias_and_menu(acp) -> None:
    client, sid = acp
    start = len(client.messages)
    await say(client, sid, "/models scripted-fast")
    assert text_since(client, start, sid) == "Model: scripted-fast."
    [update] = since(client, start, sid, "config_option_update")
    assert selection(update) == {"mode": "build", "model": "scripted-fast"}
    assert "Now working as" not in text_since(client, start, sid), "a model change is no Agent switch"
    start = len(client.messages)
    await say(client, sid, "/model")
    [menu] = menus(client, start, sid)
    assert "1. Scripted" in menu and "2. Scripted (fast)" in menu
    start = len(client.messages)
    await say(client, sid, "scripted")
    assert text_since(client, start, sid) == "Model: scripted (reasoning: medium)."
    [update] = since(client, start, sid, "config_option_update")
    assert selection(update) == {"mode": "build", "model": "scripted", "thought_level": "medium"}


async def test_an_agent_switch_is_announced_once_and_only_changes_the_agent_makes_send_an_update(acp) -> None:
    client, sid = acp
    loaded = await client.call("session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "high"})
    mode = next(o for o in loaded["configOptions"] if o["id"] == "mode")
    assert mode["category"] == "mode" and mode["currentValue"] == "build", "Guide is not the default"
    assert [o["value"] for o in mode["options"]] == ["build", "guide"]

    start = len(client.messages)
    await say(client, sid, "/agent guide")
    assert text_since(client, start, sid).count("Now working as the Guide Agent") == 1
    [update] = since(client, start, sid, "config_option_update")
    assert selection(update) == {"mode": "guide", "model": "scripted", "thought_level": "high"}

    start = len(client.messages)
    await say(client, sid, "/agent Guide")
    assert text_since(client, start, sid) == "The Guide Agent is already active."
    assert since(client, start, sid, "config_option_update") == []

    start = len(client.messages)
    result = await client.call("session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "build"})
    assert selection(result) == {"mode": "build", "model": "scripted", "thought_level": "high"}
    result = await client.call("session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "low"})
    assert selection(result) == {"mode": "build", "model": "scripted", "thought_level": "low"}
    assert since(client, start, sid) == [], "the client's own changes are answered, not echoed; nothing is said outside a turn"
