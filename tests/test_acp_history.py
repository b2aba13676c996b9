"""Bounded history over `wld acp`: ``_runwield/history`` advertised in ``initialize``, windows of the saved conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp_session import INIT, WLD, say
from acp_wire import RpcError, WireClient


def texts(page: dict) -> list[str]:
    return [entry["update"]["content"]["text"] for entry in page["entries"]]


async def test_history_is_advertised_and_pages_back_from_the_latest_entries(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        answer = await client.call("initialize", INIT)
        workspace = answer["_meta"]["runwield"]["workspace"]
        assert (workspace["version"], workspace["history"]) == (1, "_runwield/history")
        sid = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        for word in ("one", "two", "three"):
            await say(client, sid, f"say {word}")

        latest = await client.call("_runwield/history", {"sessionId": sid, "limit": 3})
        assert latest["total"] == 9 and [e["index"] for e in latest["entries"]] == [6, 7, 8]
        assert texts(latest) == ["say three", "Thinking (medium) about: say three", "You said: say three"]
        kinds = [e["update"]["sessionUpdate"] for e in latest["entries"]]
        assert kinds == ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk"]
        older = await client.call("_runwield/history", {"sessionId": sid, "before": 6, "limit": 2})
        assert [e["index"] for e in older["entries"]] == [4, 5]
        assert texts(older) == ["Thinking (medium) about: say two", "You said: say two"]
        assert (await client.call("_runwield/history", {"sessionId": sid, "before": 0}))["entries"] == []


@pytest.mark.parametrize(
    ("params", "code"),
    [({"sessionId": "nope"}, -32002), ({"limit": 2}, -32602), ({"sessionId": "x", "limit": 0}, -32602), ([], -32602)],
)
async def test_bad_history_requests_get_clear_errors(tmp_path: Path, params: object, code: int) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        with pytest.raises(RpcError) as error:
            await client.call("_runwield/history", params)
        assert error.value.code == code
