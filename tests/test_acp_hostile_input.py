"""Hostile input to `wld acp`: every bad frame gets the right JSON-RPC answer (or none) and the server lives on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp_wire import WireClient, schema_path
from test_acp_server import INIT, WLD, text_prompt

from runwield_bridge.acp.official_schema import OFFICIAL_SCHEMA

DEEP = b"[" * 1000 + b"]" * 1000


def frame(request_id: Any, method: str, params: Any) -> bytes:
    """One raw request line (``request_id`` may be of any JSON type)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"


async def probe(client: WireClient) -> None:
    """The server still answers an ordinary request."""
    assert (await client.call("initialize", INIT))["protocolVersion"] == 1


def null_id_errors(client: WireClient, start: int) -> list[tuple[int, str]]:
    """Code and message of the error answers with id null received since message ``start``."""
    return [(m["error"]["code"], m["error"]["message"]) for m in client.messages[start:] if "error" in m and m.get("id", 0) is None]


def errors_with_null_id(client: WireClient, start: int) -> list[int]:
    """Codes of the error answers with id null received since message ``start``."""
    return [code for code, _ in null_id_errors(client, start)]


@pytest.fixture
async def wire(tmp_path: Path):
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        yield client, session["sessionId"]


async def test_json_nested_1000_deep_is_a_parse_error_and_the_turn_in_flight_survives(wire) -> None:
    client, sid = wire
    turn = asyncio.create_task(client.call("session/prompt", text_prompt(sid, "a slow one")))
    await client.wait_notification(lambda n: n["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    start = len(client.messages)
    await client.send_raw(DEEP + b"\n")
    await client.send_raw(b'{"jsonrpc": "2.0", "id": "deep", "method": "initialize", "params": {"_meta": {"a": ' + DEEP + b"}}}\n")
    await client.wait_message(lambda _: errors_with_null_id(client, start) == [-32700, -32700])
    assert (await turn)["stopReason"] == "end_turn", "the turn in flight is not hurt"
    await probe(client)
    assert not any(m.get("id") == "deep" for m in client.messages), "a frame that could not be read gets no answer by its id"


async def test_an_id_of_the_wrong_type_is_an_invalid_request_answered_with_id_null(wire) -> None:
    client, _ = wire
    for bad_id in (True, False, 1.5, 1.0, {"a": 1}, [1], 2**63, -(2**63) - 1, "\ud800"):
        start = len(client.messages)
        await client.send_raw(frame(bad_id, "initialize", INIT))
        await client.wait_message(lambda _: errors_with_null_id(client, start) == [-32600])
        await probe(client)
        assert [m for m in client.messages[start:] if "result" in m] == [client.messages[-1]], f"{bad_id!r} got an answer"


async def test_nan_and_infinite_numbers_are_no_json(wire) -> None:
    client, _ = wire
    for number in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"):
        start = len(client.messages)
        await client.send_raw(b'{"jsonrpc": "2.0", "id": "nan", "method": "initialize", "params": {"protocolVersion": ' + number + b"}}\n")
        await client.wait_message(lambda _: errors_with_null_id(client, start) == [-32700])
        await probe(client)
    assert not any(m.get("id") == "nan" for m in client.messages)


async def test_invalid_utf8_is_a_parse_error_even_where_json_would_take_it_as_a_surrogate(wire) -> None:
    client, _ = wire
    surrogate = "\ud800".encode("utf-8", "surrogatepass")  # UTF-8 has no encoding of a lone surrogate
    for line in (
        b'{"jsonrpc": "2.0", "id": "u", "method": "initialize' + surrogate + b'", "params": {}}',
        b'{"jsonrpc": "2.0", "id": "u", "method": "initialize", "params": {"protocolVersion": 1, "x": "' + surrogate + b'"}}',
        b'{"jsonrpc": "2.0", "id": "u", "method": "initialize\xff"}',
    ):
        start = len(client.messages)
        await client.send_raw(line + b"\n")
        await client.wait_message(lambda _: [m for m in client.messages[start:] if "error" in m])
        [(code, message)] = null_id_errors(client, start)
        assert code == -32700 and "UTF-8" in message, message
        await probe(client)
    assert not any(m.get("id") == "u" for m in client.messages), "a frame that could not be read gets no answer by its id"


async def test_an_invalid_request_is_told_what_is_wrong_with_it(wire) -> None:
    client, _ = wire
    carries = client.expect_response("both", "initialize")
    await client.send_raw(b'{"jsonrpc": "2.0", "id": "both", "method": "initialize", "params": {}, "result": {}}\n')
    assert "must not carry" in (await asyncio.wait_for(carries, 30))["error"]["message"]
    for line, says in (
        (b'{"jsonrpc": "2.0", "id": 5, "result": {}, "error": {"code": 1, "message": "x"}}', "not both"),
        (b'{"jsonrpc": "2.0", "id": 5}', 'must have "method"'),
        (b'{"jsonrpc": "2.0", "result": {}}', '"id"'),
    ):
        start = len(client.messages)
        await client.send_raw(line + b"\n")
        await client.wait_message(lambda _: len(null_id_errors(client, start)) == 1)
        [(code, message)] = null_id_errors(client, start)
        assert code == -32600 and says in message, message
    await probe(client)


SCHEMA_BREAKERS = [
    ("initialize", {"protocolVersion": "1"}),
    ("initialize", {"protocolVersion": [1]}),
    ("initialize", {"protocolVersion": 1.5}),
    ("initialize", {"protocolVersion": -1}),
    ("initialize", {"protocolVersion": True}),
    ("initialize", {"protocolVersion": 1, "clientCapabilities": 5}),
    ("initialize", {"protocolVersion": 1, "clientCapabilities": []}),
    ("initialize", {"protocolVersion": 1, "_meta": "x"}),
    ("initialize", [1]),
    ("initialize", None),
    ("authenticate", {}),
    ("session/new", {"cwd": "/", "mcpServers": [1]}),
    ("session/new", {"cwd": "/", "mcpServers": [], "_meta": "x"}),
    ("session/new", {"cwd": "/"}),
    ("session/prompt", {"sessionId": "$SID", "prompt": "hello"}),
    ("session/prompt", {"sessionId": "$SID", "prompt": [{"type": "text"}]}),
    ("session/prompt", {"sessionId": 5, "prompt": []}),
    ("session/set_config_option", {"sessionId": "$SID", "configId": "model", "value": 3}),
    ("session/load", {"sessionId": "$SID", "cwd": "/", "mcpServers": {}}),
    ("session/close", {"sessionId": ["$SID"]}),
    ("session/delete", {"sessionId": None}),
    ("_session/steering", {"sessionId": "$SID", "prompt": [{"type": "text", "text": 1}]}),
]


async def test_params_that_break_the_official_schema_are_invalid_params_and_change_nothing(wire, tmp_path: Path) -> None:
    client, sid = wire
    for method, params in SCHEMA_BREAKERS:
        params = json.loads(json.dumps(params).replace("$SID", sid))
        answer = await client.request(method, params, check=False)
        assert answer.get("error", {}).get("code") == -32602, (method, params, answer)
        assert answer["error"]["data"]["errors"][0]["problem"], "the answer says what is wrong"
    loaded = await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert {o["id"]: o["currentValue"] for o in loaded["configOptions"]}["model"] == "scripted"
    assert not any(u["params"]["update"]["sessionUpdate"] == "user_message_chunk" for u in client.notifications)


async def test_lone_surrogates_are_invalid_params_and_change_nothing(wire, tmp_path: Path) -> None:
    client, sid = wire
    for params in (text_prompt("\ud800", "hi"), text_prompt(sid, "hi \udfff there")):
        answer = await client.request("session/prompt", params)
        assert answer["error"]["code"] == -32602, answer
    answer = await client.request("session/load", {"sessionId": sid, "cwd": "/tmp/\udc80", "mcpServers": []})
    assert answer["error"]["code"] == -32602, answer
    answer = client.expect_response("sur", "initialize")
    await client.send_raw(b'{"jsonrpc": "2.0", "id": "sur", "method": "initialize\\ud800", "params": {}}\n')
    assert (await asyncio.wait_for(answer, 30))["error"]["code"] == -32600
    await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert not any(u["params"]["update"]["sessionUpdate"] == "user_message_chunk" for u in client.notifications)


async def test_a_notification_with_bad_params_gets_no_answer_and_harms_nothing(wire) -> None:
    client, sid = wire
    start = len(client.messages)
    for params in (None, [1], {"sessionId": 5}, {"sessionId": "\ud800"}, {"sessionId": "ses_nope"}, {"sessionId": sid, "_meta": 1}):
        await client.notify("session/cancel", params, check=False)
        await probe(client)
    assert (await client.call("session/prompt", text_prompt(sid, "still here")))["stopReason"] == "end_turn"
    assert [m for m in client.messages[start:] if "error" in m] == [], "a notification is never answered"


async def test_authenticate_is_invalid_params_since_no_method_is_advertised(wire) -> None:
    client, _ = wire
    advertised = (await client.call("initialize", INIT))["authMethods"]
    answer = await client.request("authenticate", {"methodId": "agent-login"})
    assert advertised == [] and answer["error"]["code"] == -32602
    assert answer["error"]["data"]["methodId"] == "agent-login" and "no authentication" in answer["error"]["data"]["details"]


async def test_deep_json_quoted_as_sender_metadata_is_no_internal_error(wire) -> None:
    client, sid = wire
    deep = "<sender_context>" + DEEP.decode() + "</sender_context>"
    answer = await client.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": deep}, {"type": "text", "text": "hi"}]})
    assert answer.get("result") == {"stopReason": "end_turn"}, answer


def test_the_server_checks_params_against_the_schema_the_tests_use() -> None:
    """The official schema shipped in the package is the very file every wire test validates with."""
    assert OFFICIAL_SCHEMA.read_bytes() == schema_path().read_bytes()
