"""`session/list` and `session/resume` on the wire: `wld acp` as a subprocess, every message checked against the official schema."""

from __future__ import annotations

import base64
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from acp_wire import RpcError, WireClient
from test_acp_server import INIT, WLD, is_chunk, text_prompt, updates

from runwield_bridge.acp.listing import PAGE_SIZE
from runwield_bridge.core.store import Store

INCLUDE_ARCHIVED = {"runwield": {"includeArchived": True}}


async def stored_sessions(wld_home: Path, cwd: Path, count: int) -> list[str]:
    """Make ``count`` Sessions in ``cwd`` straight in the store `wld acp` will read (quicker than over the wire)."""
    store = await Store.open(f"sqlite+aiosqlite:///{wld_home / 'wld.db'}")
    try:
        return [(await store.sessions.create_session(cwd=str(cwd), agent="build", model="scripted", reasoning="medium")).id for _ in range(count)]
    finally:
        await store.close()


async def list_all(client: WireClient, **params: Any) -> list[list[dict[str, Any]]]:
    """Every page of ``session/list``, following ``nextCursor`` to the end."""
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        response = await client.call("session/list", params | ({"cursor": cursor} if cursor else {}))
        pages.append(response["sessions"])
        if (cursor := response.get("nextCursor")) is None:
            return pages


async def new_session(client: WireClient, cwd: Path) -> str:
    return (await client.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]


def usage_used(client: WireClient, session_id: str) -> int:
    return updates(client, session_id, "usage_update")[-1]["used"]


async def test_initialize_advertises_list_and_resume(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        caps = (await client.call("initialize", INIT))["agentCapabilities"]["sessionCapabilities"]
    assert caps["list"] == {} and caps["resume"] == {}


@pytest.mark.parametrize("same_time", [False, True], ids=["apart", "all-updated-at-once"])
async def test_list_pages_through_every_session_newest_first(tmp_path: Path, wld_home: Path, same_time: bool) -> None:
    made = await stored_sessions(wld_home, tmp_path, PAGE_SIZE + 10)
    if same_time:  # Sessions updated in the same instant still page without a gap or a repeat
        with sqlite3.connect(wld_home / "wld.db") as db:
            db.execute("UPDATE sessions SET updated_at = 1700000000.25")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        pages = await list_all(client)
    assert [len(page) for page in pages] == [PAGE_SIZE, 10]
    listed = [info for page in pages for info in page]
    assert sorted(info["sessionId"] for info in listed) == sorted(made), "each Session exactly once"
    times = [datetime.fromisoformat(info["updatedAt"]) for info in listed]
    assert times == sorted(times, reverse=True), "most recently updated first"
    assert all(info["cwd"] == str(tmp_path) and "title" not in info for info in listed)


async def test_list_shows_title_and_update_time_and_filters_by_cwd(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        here = await new_session(client, project)
        elsewhere = await new_session(client, other)
        before = datetime.now(timezone.utc)
        await client.call("session/prompt", text_prompt(here, "fix the login form\nand more"))
        after = datetime.now(timezone.utc)

        [info] = (await client.call("session/list", {"cwd": str(project)}))["sessions"]
        assert (info["sessionId"], info["cwd"], info["title"]) == (here, str(project), "fix the login form")
        assert info["updatedAt"].endswith("Z") and before <= datetime.fromisoformat(info["updatedAt"]) <= after
        assert [s["sessionId"] for s in (await client.call("session/list", {}))["sessions"]] == [here, elsewhere]
        assert (await client.call("session/list", {"cwd": str(tmp_path / "nowhere")})) == {"sessions": []}
        with pytest.raises(RpcError) as err:
            await client.call("session/list", {"cwd": "project"})
        assert err.value.code == -32602 and "absolute" in err.value.data["details"]


async def test_archived_sessions_are_listed_only_when_asked(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        kept, archived = await new_session(client, tmp_path), await new_session(client, tmp_path)
        await client.call("session/delete", {"sessionId": archived})

        listed = (await client.call("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in listed] == [kept]
        assert "_meta" not in listed[0]
        everything = (await client.call("session/list", {"_meta": INCLUDE_ARCHIVED}))["sessions"]
        assert {s["sessionId"]: s.get("_meta") for s in everything} == {kept: None, archived: {"runwield": {"archived": True}}}
        with pytest.raises(RpcError) as err:
            await client.call("session/list", {"_meta": {"runwield": {"includeArchived": "yes"}}})
        assert err.value.code == -32602 and err.value.data["errors"][0]["field"] == "_meta.runwield.includeArchived"


@pytest.mark.parametrize(
    "cursor",
    ["not a cursor", "", base64.urlsafe_b64encode(b'{"page": 2}').decode(), base64.urlsafe_b64encode(b'["late", "ses_x"]').decode()],
)
async def test_a_cursor_we_did_not_give_is_invalid_params(tmp_path: Path, cursor: str) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        await new_session(client, tmp_path)
        with pytest.raises(RpcError) as err:
            await client.call("session/list", {"cursor": cursor})
        assert err.value.code == -32602 and "cursor" in err.value.data["details"]


async def test_resume_replays_nothing_and_the_conversation_goes_on(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as first:
        await first.call("initialize", INIT)
        sid = await new_session(first, tmp_path)
        await first.call("session/prompt", text_prompt(sid, "remember the word pineapple"))
        used_first = usage_used(first, sid)
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as second:
        await second.call("initialize", INIT)
        resumed = await second.call("session/resume", {"sessionId": sid, "cwd": str(tmp_path)})
        options = {o["id"]: o["currentValue"] for o in resumed["configOptions"]}
        assert options == {"mode": "build", "model": "scripted", "thought_level": "medium"}
        await second.wait_notification(lambda n: n["params"]["update"]["sessionUpdate"] == "available_commands_update")
        assert [u for u in updates(second, sid) if is_chunk(u)] == [], "resume replays no history"

        prompt = "which word was it"
        assert (await second.call("session/prompt", text_prompt(sid, prompt)))["stopReason"] == "end_turn"
        # the scripted model counts a token per word of all it is sent: the first exchange is in this turn's context
        assert usage_used(second, sid) == used_first + len(prompt.split()) + len(f"You said: {prompt}".split())
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as third:
        await third.call("initialize", INIT)
        await third.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replay = [u["content"]["text"] for u in updates(third, sid) if is_chunk(u)]
    assert replay == ["remember the word pineapple", "You said: remember the word pineapple", prompt, f"You said: {prompt}"]


async def test_resume_checks_like_load(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        sid = await new_session(client, tmp_path)
        with pytest.raises(RpcError) as err:
            await client.call("session/resume", {"sessionId": "ses_nope", "cwd": str(tmp_path)})
        assert err.value.code == -32002
        with pytest.raises(RpcError) as err:
            await client.call("session/resume", {"sessionId": sid, "cwd": str(tmp_path / "nowhere")})
        assert err.value.code == -32602 and "not an existing directory" in err.value.data["details"]
        missing_cwd = await client.request("session/resume", {"sessionId": sid}, check=False)
        assert missing_cwd["error"]["code"] == -32602 and missing_cwd["error"]["data"]["errors"][0]["problem"] == "'cwd' is a required property"
