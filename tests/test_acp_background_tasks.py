"""Background tasks over `wld acp`: a tool starts work that outlives the prompt; its result arrives later as the
Session's own result turn on the same connection; `session/cancel` stops it and no late result turn follows;
loading the Session elsewhere replays the delivered result and does not restart the task."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

from acp_wire import WireClient
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from test_acp_server import INIT, WLD, text_prompt, updates
from test_plugins import make_distribution
from test_providers import model_entry
from test_providers import openai_fake as model  # noqa: F401 - the fake model fixture
from waiting import release, until

# A tool that starts background work: it waits for the file `release` (waiting.release writes it whole), writes `finished` and returns the text;
# cancelled, it writes `cancelled` (so a test can know the work was stopped without waiting for something that never comes).
LATER_PLUGIN = '''
import asyncio
from pathlib import Path

from runwield_bridge import Tool, ToolSpec, hookimpl


async def wait_for_release(cwd: Path) -> str:
    try:
        while not (cwd / "release").exists():
            await asyncio.sleep(0.02)
        (cwd / "finished").write_text("yes")
        return (cwd / "release").read_text()
    except asyncio.CancelledError:
        (cwd / "cancelled").write_text("yes")
        raise


async def later(arguments, ctx):
    task_id = ctx.start_background(wait_for_release(ctx.cwd), arguments["title"])
    return f"started {task_id}"


@hookimpl
def register_tools(register):
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    register(Tool(ToolSpec("later", "Start work that finishes later", schema), "execute", later))
'''


@contextlib.asynccontextmanager
async def wld_acp(tmp_path: Path, model: OpenAIFake) -> AsyncIterator[WireClient]:
    site = tmp_path / "site"
    if not site.exists():
        site.mkdir()
        make_distribution(site, "wld_later", LATER_PLUGIN)
        (tmp_path / "wld.toml").write_text(model_entry("openai", "llama3.1", model.base_url))
    env = {"WLD_CONFIG": str(tmp_path / "wld.toml"), "PYTHONPATH": str(site)}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
        await client.call("initialize", INIT)
        yield client


async def start_task(client: WireClient, model: OpenAIFake, session_id: str) -> None:
    """A prompt whose tool starts the background task; the prompt ends while the task still runs."""
    model.queue(Reply(tool_calls=(ToolCall("call_1", "later", {"title": "slow job"}),)), Reply(text=("Started it.",)))
    assert await client.call("session/prompt", text_prompt(session_id, "start the slow job")) == {"stopReason": "end_turn"}
    [done] = [u for u in updates(client, session_id, "tool_call_update") if u.get("status") == "completed"]
    assert "started task-1" in json.dumps(done)


def shown(client: WireClient, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in updates(client, session_id, "agent_message_chunk"))


def settled_turns(client: WireClient, session_id: str) -> int:
    return sum(1 for u in updates(client, session_id, "session_info_update") if "turn" in json.dumps(u.get("_meta", {})))


async def test_the_result_arrives_after_the_prompt_as_a_new_turn(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await start_task(client, model, session_id)
        turns = settled_turns(client, session_id)
        assert "the answer is 42" not in shown(client, session_id)
        model.queue(Reply(text=("The job says 42.",)))
        release(tmp_path, "the answer is 42")
        await until(lambda: settled_turns(client, session_id) == turns + 1, "the result turn to settle")
        assert "Background task \u201cslow job\u201d finished:\n\nthe answer is 42" in shown(client, session_id)
        assert shown(client, session_id).endswith("The job says 42.")
        told = model.calls_to("chat.completions")[-1]["messages"][-1]
        assert told["role"] == "user" and "the answer is 42" in told["content"]
        responses = [m for m in client.messages if "id" in m and "method" not in m]
        assert len(responses) == 3  # initialize, session/new, the one prompt: the result turn answers nothing
    async with wld_acp(tmp_path, model) as client:  # elsewhere: history has the result; the task is not restarted
        asked = len(model.calls)
        await client.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
        assert "the answer is 42" in shown(client, session_id)
        assert len(model.calls) == asked


async def test_cancel_stops_the_task_and_no_late_result_follows(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await start_task(client, model, session_id)
        asked = len(model.calls)
        await client.notify("session/cancel", {"sessionId": session_id})
        await until(lambda: (tmp_path / "cancelled").exists(), "the background work to be cancelled")
        release(tmp_path, "too late")
        model.queue(Reply(text=("Hello again.",)))
        assert await client.call("session/prompt", text_prompt(session_id, "hi")) == {"stopReason": "end_turn"}
        assert "too late" not in shown(client, session_id) and "finished" not in shown(client, session_id)
        assert len(model.calls) == asked + 1  # only the new prompt reached the model


async def test_a_result_never_answers_a_waiting_question(tmp_path: Path, model: OpenAIFake) -> None:
    async with wld_acp(tmp_path, model) as client:
        session_id = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await start_task(client, model, session_id)
        interview = {"questions": [{"question": "What name?"}]}
        model.queue(
            Reply(tool_calls=(ToolCall("call_2", "user_interview", interview),)),
            Reply(text=("Thanks, Ada.",)),
            Reply(text=("Noted the result.",)),
        )
        assert await client.call("session/prompt", text_prompt(session_id, "ask me")) == {"stopReason": "end_turn"}
        assert updates(client, session_id, "tool_call_update")[-1]["status"] != "completed"  # the question waits
        release(tmp_path, "the answer is 42")
        await until(lambda: (tmp_path / "finished").exists(), "the background work to finish")
        assert await client.call("session/prompt", text_prompt(session_id, "Ada")) == {"stopReason": "end_turn"}
        answered = model.calls_to("chat.completions")[3]["messages"][-1]
        assert answered["role"] == "tool" and '"answer": "Ada"' in answered["content"] and "42" not in answered["content"]
        await until(lambda: shown(client, session_id).endswith("Noted the result."), "the result turn after the answer")
        assert shown(client, session_id).index("Thanks, Ada.") < shown(client, session_id).index("the answer is 42")
