"""Steering over the wire: `_session/steering` adds input to the running turn, and only to it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp_session import say, since, wld_session
from acp_wire import WireClient
from test_acp_server import INIT, WLD, wait_for_reply

from runwield_bridge.plugins.scripted import count_tokens


@pytest.fixture
async def acp(tmp_path: Path):
    async with wld_session(tmp_path) as session:
        yield session


async def steer(client: WireClient, session_id: str, *blocks: str) -> dict[str, Any]:
    """Send `_session/steering` with text blocks; the whole response (result or error)."""
    prompt = [{"type": "text", "text": text} for text in blocks]
    return await client.request("_session/steering", {"sessionId": session_id, "prompt": prompt})


async def test_initialize_advertises_steering(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        result = await client.call("initialize", INIT)
    assert result["_meta"]["steering"] == {"supported": True}


async def test_steering_joins_the_running_turn_once_and_completes_within_the_prompt(acp) -> None:
    client, sid = acp
    start = len(client.messages)
    turn = asyncio.create_task(say(client, sid, "slow steer me"))
    await wait_for_reply(client, sid)
    steered = await steer(client, sid, "also this")
    assert steered["result"] == {"outcome": "injected"}
    response = await turn
    assert response["result"] == {"stopReason": "end_turn"}
    assert client.messages.index(steered) < client.messages.index(response), "answered before the turn settles"

    updates = since(client, start, sid)
    [user] = [i for i, u in enumerate(updates) if u["sessionUpdate"] == "user_message_chunk"]
    assert updates[user]["content"]["text"] == "also this"
    before = [u for u in updates[:user] if u["sessionUpdate"] == "agent_message_chunk"]
    after = [u for u in updates[user:] if u["sessionUpdate"] == "agent_message_chunk"]
    assert {u["messageId"] for u in before}.isdisjoint({u["messageId"] for u in after}), "the reply is a new message"
    assert len({u["messageId"] for u in after}) == 1
    assert "".join(u["content"]["text"] for u in after) == "You said: also this"

    # The model's next request holds the prompt, the interrupted reply and the steered input, once each.
    partial = "".join(u["content"]["text"] for u in before)
    [usage] = since(client, start, sid, "usage_update")
    assert usage["used"] == count_tokens("slow steer me") + count_tokens(partial) + 2 + count_tokens("You said: also this")


async def test_steering_an_idle_session_needs_a_prompt_and_queues_nothing(acp) -> None:
    client, sid = acp
    assert (await steer(client, sid, "remember purple"))["result"] == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    start = len(client.messages)
    await say(client, sid, "hello")
    [usage] = since(client, start, sid, "usage_update")
    assert usage["used"] == 1 + 3, "no steered text reached the model"
    assert since(client, start, sid, "user_message_chunk") == []


async def test_steering_while_a_chat_question_waits_needs_a_prompt(acp) -> None:
    client, sid = acp
    assert (await say(client, sid, "/agent"))["result"] == {"stopReason": "end_turn"}
    for text in ("go on", "/agent"):
        assert (await steer(client, sid, text))["result"] == {"outcome": "promptRequired", "reason": "questionPending"}
    start = len(client.messages)
    await say(client, sid, "2")
    assert [u["configOptions"][0]["currentValue"] for u in since(client, start, sid, "config_option_update")] == ["guide"]


async def test_bad_steering_is_an_error_and_delivers_nothing(acp) -> None:
    client, sid = acp
    assert (await steer(client, "ses_nope", "hi"))["error"]["code"] == -32002
    start = len(client.messages)
    turn = asyncio.create_task(say(client, sid, "slow"))
    await wait_for_reply(client, sid)
    for blocks in (("/model scripted-fast",), ("   ",), ()):
        assert (await steer(client, sid, *blocks))["error"]["code"] == -32602, blocks
    await client.notify("session/cancel", {"sessionId": sid})
    assert (await turn)["result"] == {"stopReason": "cancelled"}
    assert since(client, start, sid, "user_message_chunk") == []
    assert since(client, start, sid, "config_option_update") == []
    await client.call("session/close", {"sessionId": sid})
    closed = await steer(client, sid, "hi")
    assert closed["error"]["code"] == -32002 and closed["error"]["data"]["reason"] == "closed"
