"""Wire-test helpers for the interaction layer: `wld acp` clients with and without forms, a probe plugin."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp_wire import WireClient
from test_acp_server import INIT, WLD
from test_plugins import make_distribution

FORMS_INIT = {**INIT, "clientCapabilities": {"elicitation": {"form": {}}}}

# A plugin whose commands ask one question each and say how it settled.
PROBE_PLUGIN = '''
from runwield_bridge.core.commands import Command
from runwield_bridge.core.interactions import Choice, approval, select, text
from runwield_bridge.hookspecs import hookimpl


def asking(question):
    async def run(ctx, args):
        outcome = await ctx.ask(question)
        await ctx.say(f"outcome={outcome.status} value={outcome.value}")
    return run


FRUIT = select("Pick a fruit", [Choice("apple", "Apple"), Choice("pear", "Pear"), Choice("stop", "Cancel")])


@hookimpl
def register_commands(register):
    register(Command("approve", "Ask for an approval", asking(approval("Deploy now?")), source="probe"))
    register(Command("note", "Ask for a note", asking(text("What should the note say?")), source="probe"))
    register(Command("fruit", "Ask for a fruit", asking(FRUIT), source="probe"))
    register(Command("help", "A plugin /help, which the built-in beats", asking(text("never")), source="probe"))
'''


def probe_env(tmp_path: Path) -> dict[str, str]:
    """Environment for a `wld acp` that loads the probe plugin through its entry point."""
    site = tmp_path / "probe-site"
    site.mkdir(exist_ok=True)
    make_distribution(site, "wld_probe", PROBE_PLUGIN)
    return {"PYTHONPATH": str(site)}


@contextlib.asynccontextmanager
async def wld_session(
    tmp_path: Path, init: dict[str, Any] = INIT, env: dict[str, str] | None = None, config: str = ""
) -> AsyncIterator[tuple[WireClient, str]]:
    """An initialized `wld acp` (with wld.toml ``config``) and a new Session on it."""
    env = dict(env or {})
    if config:
        (tmp_path / "wld.toml").write_text(config)
        env["WLD_CONFIG"] = str(tmp_path / "wld.toml")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
        await client.call("initialize", init)
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        yield client, session["sessionId"]


async def say(client: WireClient, session_id: str, *blocks: str | dict[str, Any]) -> dict[str, Any]:
    """Send a prompt (strings are text blocks) and return its response, result or error."""
    prompt = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
    return await client.request("session/prompt", {"sessionId": session_id, "prompt": prompt})


def since(client: WireClient, start: int, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The session/update payloads received from message index ``start`` on (optionally of one kind)."""
    found = [
        m["params"]["update"]
        for m in client.messages[start:]
        if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
    ]
    return [u for u in found if kind is None or u["sessionUpdate"] == kind]


def text_since(client: WireClient, start: int, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in since(client, start, session_id, "agent_message_chunk"))


def question_state(update: dict[str, Any]) -> str | None:
    """``asked``, ``unmatched`` or ``other`` for a chat-menu message, None for anything else."""
    return (update.get("_meta") or {}).get("runwield", {}).get("question", {}).get("state")


def menus(client: WireClient, start: int, session_id: str, state: str | None = None) -> list[str]:
    """The texts of chat-menu messages since ``start`` (optionally in one state)."""
    return [
        u["content"]["text"]
        for u in since(client, start, session_id, "agent_message_chunk")
        if question_state(u) and (state is None or question_state(u) == state)
    ]


def model_requests(client: WireClient, start: int, session_id: str) -> int:
    """How many scripted-model responses were reported since ``start`` (each reports usage once)."""
    return len(since(client, start, session_id, "usage_update"))


def selection(update: dict[str, Any]) -> dict[str, str]:
    """A config_option_update (or a configOptions result) as ``{id: currentValue}``."""
    return {o["id"]: o["currentValue"] for o in update["configOptions"]}



def offered(update: dict[str, Any], option_id: str) -> list[str]:
    """The values config option ``option_id`` offers in a config_option_update (or a configOptions result)."""
    [option] = [o for o in update["configOptions"] if o["id"] == option_id]
    return [entry["value"] for entry in option["options"]]
