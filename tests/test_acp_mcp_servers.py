"""Client-supplied stdio MCP servers over `wld acp`: a real server written with the `mcp` SDK, started per Session,
its tool called by a fake OpenAI-compatible model, stopped with the Session; an unusable server is reported."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp_wire import WireClient
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from test_acp_server import INIT, WLD, text_prompt, updates
from test_providers import model_entry
from test_providers import openai_fake as model  # noqa: F401 - the fake model fixture
from waiting import until

ECHO_SERVER = Path(__file__).parent / "fixtures" / "mcp" / "echo_server.py"


def echo_server(name: str = "echo", *extra: str) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [str(ECHO_SERVER), *extra], "env": []}


@contextlib.asynccontextmanager
async def wld_acp(tmp_path: Path, model: OpenAIFake) -> AsyncIterator[WireClient]:
    """`wld acp` with the fake as its model; the MCP capabilities it advertises are stdio only."""
    (tmp_path / "wld.toml").write_text(model_entry("openai", "llama3.1", model.base_url))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        init = await client.call("initialize", INIT)
        assert init["agentCapabilities"]["mcpCapabilities"] == {"http": False, "sse": False}
        yield client


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def shout(client: WireClient, model: OpenAIFake, session_id: str, text: str) -> int:
    """Have the model call the echo server's tool; returns the pid of the server that answered."""
    model.queue(Reply(tool_calls=(ToolCall("call_1", "mcp__echo__shout", {"text": text}),)), Reply(text=("done",)))
    response = await client.call("session/prompt", text_prompt(session_id, "shout it"))
    assert response == {"stopReason": "end_turn"}
    [done] = [u for u in updates(client, session_id, "tool_call_update") if u.get("status") == "completed"][-1:]
    output = json.dumps(done)
    assert text.upper() in output
    return int(output.split("(pid ")[1].split(")")[0])


async def test_a_clients_stdio_server_gives_the_model_its_tool_and_stops_with_the_session(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_server()]})
        session_id = session["sessionId"]
        pid = await shout(client, model, session_id, "hello")
        first, second = model.calls_to("chat.completions")
        assert "mcp__echo__shout" in [tool["function"]["name"] for tool in first["tools"]]
        assert second["messages"][-1]["role"] == "tool" and "HELLO" in second["messages"][-1]["content"]
        assert alive(pid)
        await client.call("session/close", {"sessionId": session_id})
        await until(lambda: not alive(pid), "the MCP server to stop with its Session")


async def test_servers_stop_on_delete_and_when_the_process_ends(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        deleted = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_server()]}))["sessionId"]
        kept = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_server()]}))["sessionId"]
        deleted_pid = await shout(client, model, deleted, "one")
        kept_pid = await shout(client, model, kept, "two")
        assert deleted_pid != kept_pid  # one server per Session
        await client.call("session/delete", {"sessionId": deleted})
        await until(lambda: not alive(deleted_pid), "the MCP server to stop with its deleted Session")
        assert alive(kept_pid)
    await until(lambda: not alive(kept_pid), "the MCP server to stop when `wld acp` ends")


async def test_load_starts_the_servers_the_loading_client_brings(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
    async with wld_acp(tmp_path, model) as client:
        await client.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": [echo_server()]})
        assert await shout(client, model, session_id, "again")


async def test_an_unusable_server_is_reported_and_the_session_still_works(tmp_path: Path, model: OpenAIFake) -> None:
    servers = [
        {"name": "missing", "command": str(tmp_path / "no-such-program"), "args": [], "env": []},
        echo_server("refuses", "--fail-start"),
        echo_server(),
    ]
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": servers}))["sessionId"]

        def warnings() -> str:
            return "".join(u["content"]["text"] for u in updates(client, session_id, "agent_message_chunk"))

        await until(lambda: "'missing'" in warnings() and "'refuses'" in warnings(), "a notice for each unusable server")
        assert "could not be started" in warnings() and "'echo'" not in warnings()
        assert await shout(client, model, session_id, "still")


async def test_a_server_that_crashes_fails_the_tool_call_visibly(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_server()]}))["sessionId"]
        model.queue(
            Reply(tool_calls=(ToolCall("call_1", "mcp__echo__crash", {}),)),
            Reply(tool_calls=(ToolCall("call_2", "mcp__echo__shout", {"text": "x"}),)),
            Reply(text=("the server is gone",)),
        )
        assert await client.call("session/prompt", text_prompt(session_id, "crash it")) == {"stopReason": "end_turn"}
        failed = [u for u in updates(client, session_id, "tool_call_update") if u.get("status") == "failed"]
        assert [u["toolCallId"] for u in failed] == ["call_1", "call_2"]
        assert "MCP server 'echo'" in json.dumps(failed[-1])
