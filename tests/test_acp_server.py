"""`wld acp` on the wire: a real subprocess, every message validated against the official ACP schema."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import AvailableCommandsUpdate
from acp_wire import RpcError, WireClient
from waiting import until

WLD = str(Path(sys.executable).parent / "wld")
INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "wire-test", "version": "0"}}
BUSY = -32001
HELD_CHECKS = Path(__file__).parent / "fixtures" / "held_checks"


def text_prompt(session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}], **extra}


def updates(client: WireClient, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The session/update payloads received so far for a Session (optionally of one kind)."""
    found = [
        n["params"]["update"]
        for n in client.notifications
        if n["method"] == "session/update" and n["params"]["sessionId"] == session_id
    ]
    return [u for u in found if kind is None or u["sessionUpdate"] == kind]


def is_chunk(update: dict[str, Any]) -> bool:
    """A message chunk: what history replays (``available_commands_update`` follows the load answer)."""
    return update["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")


def reply_text(client: WireClient, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in updates(client, session_id, "agent_message_chunk"))


@pytest.fixture
async def acp(tmp_path: Path):
    """An initialized `wld acp` client and a new Session on it."""
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        yield client, session["sessionId"]


async def wait_for_reply(client: WireClient, session_id: str) -> None:
    await client.wait_notification(
        lambda n: n["params"]["sessionId"] == session_id and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


# initialize


async def test_nothing_but_initialize_is_served_before_initialize(tmp_path: Path) -> None:
    cwd = {"cwd": str(tmp_path), "mcpServers": []}
    early = [
        ("session/new", cwd),
        ("session/list", {}),
        ("session/load", {**cwd, "sessionId": "ses_x"}),
        ("session/prompt", text_prompt("ses_x", "hello")),
        ("authenticate", {"methodId": "agent-login"}),
        ("_session/steering", text_prompt("ses_x", "hello")),
    ]
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.notify("session/cancel", {"sessionId": "ses_x"})
        for method, params in early:
            answer = await client.request(method, params)
            assert answer["error"]["code"] == -32600 and "call initialize first" in answer["error"]["message"], (method, answer)
        await client.call("initialize", INIT)
        assert (await client.call("session/list", {}))["sessions"] == [], "nothing was created before initialize"
        session = await client.call("session/new", cwd)
        assert (await client.call("session/prompt", text_prompt(session["sessionId"], "hello")))["stopReason"] == "end_turn"


@pytest.mark.parametrize("asked", [1, 2, 99, 0])
async def test_initialize_answers_the_version_we_support_never_an_echo(tmp_path: Path, asked: int) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        result = await client.call("initialize", {**INIT, "protocolVersion": asked})
        assert result["protocolVersion"] == 1


async def test_initialize_advertises_what_we_do_and_not_images(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "--mode", "acp"], cwd=tmp_path) as client:
        caps = (await client.call("initialize", INIT))["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["sessionCapabilities"]["delete"] == {} and caps["sessionCapabilities"]["close"] == {}
    assert caps["promptCapabilities"]["image"] is False


# prompt turns


async def test_prompt_streams_chunks_and_exact_usage_then_ends_the_turn(wld_database: str, acp) -> None:
    client, sid = acp
    result = await client.call("session/prompt", text_prompt(sid, "the quick brown fox"))
    assert result == {"stopReason": "end_turn"}
    chunks = updates(client, sid, "agent_message_chunk")
    assert len(chunks) >= 2
    assert "the quick brown fox" in reply_text(client, sid)
    [usage] = updates(client, sid, "usage_update")
    # one token per word: 4 in the prompt, 6 in "You said: the quick brown fox"
    assert (usage["used"], usage["size"]) == (10, 32768)
    assert usage["cost"] == {"amount": pytest.approx(4e-6 + 6 * 2e-6), "currency": "USD"}


async def test_cost_in_usage_is_cumulative_for_the_session(wld_database: str, acp) -> None:
    client, sid = acp
    await client.call("session/prompt", text_prompt(sid, "one"))
    await client.call("session/prompt", text_prompt(sid, "two"))
    first, second = (u["cost"]["amount"] for u in updates(client, sid, "usage_update"))
    assert second > first
    assert second == pytest.approx(first + (1 + 3 + 1) * 1e-6 + 3 * 2e-6)


async def test_tool_calls_stream_as_tool_call_and_updates(acp, tmp_path: Path) -> None:
    client, sid = acp
    (tmp_path / "hello.txt").write_text("hi\n")
    await client.call("session/prompt", text_prompt(sid, "list files please"))
    [start] = updates(client, sid, "tool_call")
    assert start["title"] == "list_files ." and start["kind"] == "search"
    progress = updates(client, sid, "tool_call_update")
    assert [u["status"] for u in progress] == ["in_progress", "completed"]
    assert all(u["toolCallId"] == start["toolCallId"] for u in progress)
    assert "hello.txt" in progress[-1]["content"][0]["content"]["text"]


async def test_resource_links_are_part_of_the_prompt(acp) -> None:
    client, sid = acp
    prompt = [{"type": "text", "text": "look at"}, {"type": "resource_link", "uri": "file:///tmp/a.py", "name": "a.py"}]
    await client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert "[a.py](file:///tmp/a.py)" in reply_text(client, sid)


async def test_unsupported_prompt_content_is_invalid_params(acp) -> None:
    client, sid = acp
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    with pytest.raises(RpcError) as err:
        await client.call("session/prompt", {"sessionId": sid, "prompt": [image]})
    assert err.value.code == -32602


async def test_a_model_failure_is_an_error_never_a_claimed_success(acp) -> None:
    client, sid = acp
    with pytest.raises(RpcError) as err:
        await client.call("session/prompt", text_prompt(sid, "please fail"))
    assert err.value.code == -32603 and "asked to fail" in err.value.data["details"]
    assert "could not be completed" in reply_text(client, sid)
    assert (await client.call("session/prompt", text_prompt(sid, "ok")))["stopReason"] == "end_turn"


async def test_meta_never_overrides_a_real_parameter(acp) -> None:
    client, sid = acp
    params = text_prompt(sid, "meta test", _meta={"sessionId": "ses_someone_else", "prompt": []})
    assert (await client.call("session/prompt", params))["stopReason"] == "end_turn"
    assert "meta test" in reply_text(client, sid)


# cancel and overlap


async def test_cancel_returns_cancelled_after_the_final_updates(acp) -> None:
    client, sid = acp
    turn = asyncio.create_task(client.request("session/prompt", text_prompt(sid, "go slow")))
    await wait_for_reply(client, sid)
    await client.notify("session/cancel", {"sessionId": sid})
    response = await turn
    assert response["result"] == {"stopReason": "cancelled"}
    answered_at = client.messages.index(response)
    later = [m for m in client.messages[answered_at + 1 :] if m.get("method") == "session/update"]
    assert later == [], "no update for the cancelled turn may follow its response"
    assert (await client.call("session/prompt", text_prompt(sid, "after")))["stopReason"] == "end_turn"


async def test_cancel_when_idle_is_harmless(acp) -> None:
    client, sid = acp
    await client.notify("session/cancel", {"sessionId": sid})
    assert (await client.call("session/prompt", text_prompt(sid, "hi")))["stopReason"] == "end_turn"


async def test_an_overlapping_prompt_is_rejected_and_its_input_returned(acp) -> None:
    client, sid = acp
    turn = asyncio.create_task(client.call("session/prompt", text_prompt(sid, "slow please")))
    await wait_for_reply(client, sid)
    with pytest.raises(RpcError) as err:
        await client.call("session/prompt", text_prompt(sid, "me too"))
    assert err.value.code == BUSY
    assert err.value.data == {"sessionId": sid, "reason": "busy", "prompt": "me too"}
    await client.notify("session/cancel", {"sessionId": sid})
    assert (await turn)["stopReason"] == "cancelled"


# load, close, delete


async def test_a_session_loads_in_a_new_process_with_its_history(wld_database: str, tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as first:
        await first.call("initialize", INIT)
        sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await first.call("session/prompt", text_prompt(sid, "first words"))
        await first.call("session/prompt", text_prompt(sid, "second words"))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as second:
        await second.call("initialize", INIT)
        response = await second.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replay = [(u["sessionUpdate"], u["content"]["text"]) for u in updates(second, sid) if is_chunk(u)]
        assert replay == [
            ("user_message_chunk", "first words"),
            ("agent_message_chunk", "You said: first words"),
            ("user_message_chunk", "second words"),
            ("agent_message_chunk", "You said: second words"),
        ]
        last_update = max(
            i for i, m in enumerate(second.messages) if m.get("method") == "session/update" and is_chunk(m["params"]["update"])
        )
        assert second.messages.index(response) > last_update, "history is replayed before the answer"
        options = {o["id"]: o["currentValue"] for o in response["result"]["configOptions"]}
        assert options == {"mode": "build", "model": "scripted", "thought_level": "medium"}
        assert (await second.call("session/prompt", text_prompt(sid, "third")))["stopReason"] == "end_turn"


async def test_load_replays_thoughts_and_tool_calls_as_they_streamed(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hi\n")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as first:
        await first.call("initialize", INIT)
        sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await first.call("session/prompt", text_prompt(sid, "list files please"))
        streamed = shown(updates(first, sid))
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as second:
        await second.call("initialize", INIT)
        await second.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = shown(updates(second, sid))
    assert [u[0] for u in streamed] == ["agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
    assert replayed == [("user_message_chunk", "list files please"), *streamed]
    assert streamed[1][1:] == ("list_files .", "search", "pending") and "hello.txt" in streamed[2][2]


def shown(stream: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """What a client shows of a Session's updates: messages and thoughts (their chunks joined), tool calls (title,
    kind, status) and their outcome (status, text); the in-progress mark and state updates are left out."""
    rows: list[tuple[str, ...]] = []
    for update in stream:
        kind = update["sessionUpdate"]
        if kind in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk"):
            if rows and rows[-1][0] == kind:
                rows[-1] = (kind, rows[-1][1] + update["content"]["text"])
            else:
                rows.append((kind, update["content"]["text"]))
        elif kind == "tool_call":
            rows.append((kind, update["title"], update["kind"], update["status"]))
        elif kind == "tool_call_update" and update["status"] != "in_progress":
            rows.append((kind, update["status"], "".join(c["content"]["text"] for c in update.get("content") or [])))
    return rows


async def test_loading_an_unknown_session_is_resource_not_found(acp, tmp_path: Path) -> None:
    client, _ = acp
    with pytest.raises(RpcError) as err:
        await client.call("session/load", {"sessionId": "ses_nope", "cwd": str(tmp_path), "mcpServers": []})
    assert err.value.code == -32002


async def test_close_releases_and_changes_no_archive_state(acp, tmp_path: Path) -> None:
    client, sid = acp
    await client.call("session/prompt", text_prompt(sid, "before close"))
    assert await client.call("session/close", {"sessionId": sid}) == {}
    assert sid in run_wld("sessions")
    await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert (await client.call("session/prompt", text_prompt(sid, "after close")))["stopReason"] == "end_turn"


async def test_close_cancels_a_running_turn(acp) -> None:
    client, sid = acp
    turn = asyncio.create_task(client.call("session/prompt", text_prompt(sid, "slow")))
    await wait_for_reply(client, sid)
    assert await client.call("session/close", {"sessionId": sid}) == {}
    assert (await turn)["stopReason"] == "cancelled"


async def test_delete_archives_reversibly_and_is_idempotent(acp, tmp_path: Path) -> None:
    client, sid = acp
    await client.call("session/prompt", text_prompt(sid, "archive me"))
    assert await client.call("session/delete", {"sessionId": sid}) == {}
    assert await client.call("session/delete", {"sessionId": sid}) == {}
    assert await client.call("session/delete", {"sessionId": "ses_never_existed"}) == {}
    assert sid not in run_wld("sessions")
    assert f"{sid}" in run_wld("sessions", "--all") and "[archived]" in run_wld("sessions", "--all")

    before = len(client.notifications)
    await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    replayed = [u["sessionUpdate"] for n in client.notifications[before:] if is_chunk(u := n["params"]["update"])]
    assert replayed == ["user_message_chunk", "agent_message_chunk"]
    assert sid not in run_wld("sessions"), "loading an archived Session does not unarchive it"

    assert f"{sid} active" in run_wld("sessions", "unarchive", sid)
    assert sid in run_wld("sessions")


async def test_delete_stops_a_busy_session_first(acp) -> None:
    client, sid = acp
    turn = asyncio.create_task(client.call("session/prompt", text_prompt(sid, "slow")))
    await wait_for_reply(client, sid)
    assert await client.call("session/delete", {"sessionId": sid}) == {}
    assert (await turn)["stopReason"] == "cancelled"
    assert sid not in run_wld("sessions")


# configuration options


async def test_new_sessions_offer_model_and_reasoning_options(acp, tmp_path: Path) -> None:
    client, _ = acp
    result = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    by_id = {o["id"]: o for o in result["configOptions"]}
    assert by_id["model"]["category"] == "model" and by_id["model"]["currentValue"] == "scripted"
    assert {o["value"] for o in by_id["model"]["options"]} >= {"scripted", "scripted-fast"}
    assert by_id["thought_level"]["category"] == "thought_level"
    assert [o["value"] for o in by_id["thought_level"]["options"]] == ["low", "medium", "high"]


async def test_set_config_option_changes_only_that_session_without_a_model_request(acp, tmp_path: Path) -> None:
    client, sid = acp
    other = (await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
    before = len(client.notifications)
    result = await client.call("session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "high"})
    assert {o["id"]: o["currentValue"] for o in result["configOptions"]}["thought_level"] == "high"
    assert all(n["params"]["update"]["sessionUpdate"] != "usage_update" for n in client.notifications[before:])
    result = await client.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "scripted-fast"})
    assert [o["id"] for o in result["configOptions"]] == ["mode", "model"], "a model that does not reason has no level"
    await client.call("session/prompt", text_prompt(sid, "hi"))
    assert updates(client, sid, "agent_thought_chunk") == []
    await client.call("session/prompt", text_prompt(other, "hi"))
    assert "Thinking (medium)" in updates(client, other, "agent_thought_chunk")[0]["content"]["text"]


@pytest.mark.parametrize(
    ("config_id", "value"),
    [("model", "gpt-imaginary"), ("thought_level", "ultra"), ("colour", "blue")],
)
async def test_invalid_config_changes_fail_visibly_and_change_nothing(acp, tmp_path: Path, config_id: str, value: str) -> None:
    client, sid = acp
    with pytest.raises(RpcError) as err:
        await client.call("session/set_config_option", {"sessionId": sid, "configId": config_id, "value": value})
    assert err.value.code == -32602
    loaded = await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert {o["id"]: o["currentValue"] for o in loaded["configOptions"]} == {
        "mode": "build", "model": "scripted", "thought_level": "medium"
    }


async def test_reasoning_choice_unsupported_by_the_model_fails(acp) -> None:
    client, sid = acp
    await client.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "scripted-fast"})
    with pytest.raises(RpcError) as err:
        await client.call("session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "low"})
    assert err.value.code == -32602 and "no reasoning level" in err.value.data["details"]


async def test_config_change_during_a_turn_fails_and_changes_nothing(acp) -> None:
    client, sid = acp
    turn = asyncio.create_task(client.call("session/prompt", text_prompt(sid, "slow")))
    await wait_for_reply(client, sid)
    with pytest.raises(RpcError) as err:
        await client.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "scripted-fast"})
    assert err.value.code == BUSY
    await client.notify("session/cancel", {"sessionId": sid})
    await turn
    await client.call("session/prompt", text_prompt(sid, "still thinking?"))
    assert updates(client, sid, "agent_thought_chunk"), "the model did not change"


# JSON-RPC errors


async def test_malformed_input_gets_json_rpc_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with WireClient.spawn([WLD, "acp", "-vv"], cwd=tmp_path, validate=False) as client:
        await client.send_raw(b"{this is not json\n")
        parse = await client.wait_message(lambda m: m.get("error", {}).get("code") == -32700)
        assert parse["id"] is None
        await client.send_raw(b'[{"jsonrpc": "2.0", "id": 5, "method": "initialize"}]\n')
        await client.send_raw(b'{"jsonrpc": "1.0", "method": "initialize"}\n')
        invalid = await client.wait_message(lambda m: m.get("error", {}).get("code") == -32600)
        assert invalid["id"] is None
        assert (await client.request("no/such_method", {}))["error"]["code"] == -32601
        await client.call("initialize", INIT)
        assert (await client.request("session/new", {"cwd": 42}))["error"]["code"] == -32602
        assert (await client.request("session/new", {"cwd": "relative/dir", "mcpServers": []}))["error"]["code"] == -32602
        missing = await client.request("session/new", {"cwd": str(tmp_path / "nowhere"), "mcpServers": []})
        assert missing["error"]["code"] == -32602 and "not an existing directory" in missing["error"]["data"]["details"]
        assert (await client.call("initialize", INIT))["protocolVersion"] == 1
    assert "DEBUG" in client.stderr or "INFO" in client.stderr, "logs go to stderr"


# one writer per Session, across processes


async def test_one_writer_per_session_across_processes(wld_database: str, tmp_path: Path) -> None:
    """On PostgreSQL the second process has a state directory of its own, as on another host: only the database is shared."""
    elsewhere = {"WLD_HOME": str(tmp_path / "other-host")} if wld_database.startswith("postgresql") else {}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as a, WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=elsewhere) as b:
        await a.call("initialize", INIT)
        await b.call("initialize", INIT)
        sid = (await a.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        await b.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        # an idle open client reserves nothing
        assert (await a.call("session/prompt", text_prompt(sid, "a first")))["stopReason"] == "end_turn"
        chunks_before = len(updates(a, sid, "agent_message_chunk"))
        turn = asyncio.create_task(a.call("session/prompt", text_prompt(sid, "a slow one")))
        await a.wait_message(lambda _: len(updates(a, sid, "agent_message_chunk")) > chunks_before)
        with pytest.raises(RpcError) as err:
            await b.call("session/prompt", text_prompt(sid, "b wants in"))
        assert err.value.code == BUSY and err.value.data["prompt"] == "b wants in"
        with pytest.raises(RpcError) as err:
            await b.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "scripted-fast"})
        assert err.value.code == BUSY
        await a.notify("session/cancel", {"sessionId": sid})  # rather than its 15 s: what follows is the same once it settles
        assert (await turn)["stopReason"] == "cancelled"
        assert (await b.call("session/prompt", text_prompt(sid, "b wants in")))["stopReason"] == "end_turn"


@pytest.mark.parametrize("check", ["session/set_config_option", "session/load"])
async def test_checking_the_writer_never_makes_a_lone_prompt_busy(tmp_path: Path, check: str) -> None:
    """Process A checks the Session's writer (loading it, or setting an option) while process B prompts. A runs with
    a hook that stops it for as long as it holds a writer lock (tests/fixtures/held_checks), so a check that took
    the lock even for a moment would still hold it when B's prompt comes: B's lone prompt must not be refused.
    Only a running turn makes the Session busy."""
    held, go = tmp_path / "held", tmp_path / "go"
    os.mkfifo(go)
    hook = {"PYTHONPATH": str(HELD_CHECKS), "WLD_TEST_HELD": str(held), "WLD_TEST_GO": str(go)}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=hook) as a, WireClient.spawn([WLD, "acp"], cwd=tmp_path) as b:
        await a.call("initialize", INIT)
        await b.call("initialize", INIT)
        sid = (await b.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
        params = {
            "session/set_config_option": {"sessionId": sid, "configId": "model", "value": "scripted"},
            "session/load": {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []},
        }[check]
        checking = asyncio.create_task(a.call(check, params))
        try:
            await until(lambda: checking.done() or held.exists(), f"A's {check} to answer or to hold the writer")
            assert (await b.call("session/prompt", text_prompt(sid, "a lone prompt")))["stopReason"] == "end_turn"
            assert not held.exists(), f"A held the Session's writer while only checking it ({check})"
        finally:
            if held.exists():
                os.close(os.open(go, os.O_WRONLY))  # let A go on
        await checking
        turn = asyncio.create_task(b.call("session/prompt", text_prompt(sid, "a slow one")))
        await b.wait_message(lambda _: "slow one 1" in reply_text(b, sid))
        with pytest.raises(RpcError) as err:
            await a.call("session/prompt", text_prompt(sid, "a real overlap"))
        assert err.value.code == BUSY, "a running turn still makes the Session busy"
        await b.notify("session/cancel", {"sessionId": sid})  # rather than its 15 s
        assert (await turn)["stopReason"] == "cancelled"
        assert (await b.call("session/prompt", text_prompt(sid, "b after it")))["stopReason"] == "end_turn", "a settled turn frees the Session"


def run_wld(*args: str) -> str:
    return subprocess.run([WLD, *args], capture_output=True, text=True, check=True).stdout


def test_requests_from_a_file_are_answered_into_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}\n'
        f'{{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {{"cwd": "{tmp_path}", "mcpServers": []}}}}\n'
    )
    answers = tmp_path / "answers.jsonl"
    with requests.open() as stdin, answers.open("w") as stdout:
        subprocess.run([WLD, "acp"], stdin=stdin, stdout=stdout, timeout=60, check=True)
    ids = [json.loads(line)["id"] for line in answers.read_text().splitlines()]
    assert ids == [1, 2]


def test_end_of_input_from_dev_null_exits_cleanly(tmp_path: Path) -> None:
    done = subprocess.run([WLD, "acp"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == b""


async def test_an_update_for_a_client_that_is_gone_is_no_error(caplog: pytest.LogCaptureFixture) -> None:
    """After end of input the SDK refuses notifications; an update still owed then is dropped quietly."""
    from runwield_bridge.acp.server import AcpAgentServer
    from runwield_bridge.acp.session_methods import SessionMethods

    class Gone:
        def add_observer(self, observer: Any) -> None:
            pass

        async def send_notification(self, method: str, params: Any) -> None:
            raise ConnectionError("Connection closed")

    server = AcpAgentServer(None)
    server.attach(Gone())  # type: ignore[arg-type]
    sessions = SessionMethods(server, None)  # type: ignore[arg-type]  # the host is not needed to send an update
    server.after_response(sessions.send_update("ses_gone", AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[])))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
