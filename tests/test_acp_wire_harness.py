"""The ACP wire harness accepts a conforming agent and catches every kind of wire violation."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_wire import REPO_ROOT, RpcError, WireClient, WireViolation, schema_path

ECHO_AGENT = ["node", str(REPO_ROOT / "bench" / "echo_agent.mjs")]
PYTHON_ECHO_AGENT = [sys.executable, str(REPO_ROOT / "bench" / "echo_agent.py")]  # the benchmarks' second baseline
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
    "clientInfo": {"name": "wire-harness-test", "version": "0"},
}
VALID_INIT = '{"jsonrpc": "2.0", "id": $ID, "result": {"protocolVersion": 1}}'
PERMISSION_REQUEST = json.dumps({
    "jsonrpc": "2.0",
    "id": "perm-1",
    "method": "session/request_permission",
    "params": {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "call-1", "title": "Edit config", "kind": "edit", "status": "pending"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
    },
})
# A stand-in agent: answers `initialize` with the scripted stdout lines ($ID = the request's id)
# and reports every other message it receives back as a `_test/received` notification.
FAKE_AGENT = """
import json, sys
print("fake agent ready", file=sys.stderr, flush=True)
script = json.loads(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        for out in script:
            sys.stdout.write(out.replace("$ID", json.dumps(message["id"])) + "\\n")
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "_test/received", "params": message}) + "\\n")
    sys.stdout.flush()
"""


def fake_agent(*lines: str) -> list[str]:
    """Command line of a stand-in agent that answers initialize with lines."""
    return [sys.executable, "-c", FAKE_AGENT, json.dumps(lines)]


def prompt(session_id: str, text: str) -> dict[str, Any]:
    """session/prompt params with one text block."""
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("agent", [ECHO_AGENT, PYTHON_ECHO_AGENT], ids=["typescript-sdk", "python-sdk"])
async def test_sdk_echo_agent_conforms(tmp_path: Path, agent: list[str]) -> None:
    """initialize, session/new and a streamed session/prompt from the official SDKs' echo agents all validate."""
    async with WireClient.spawn(agent, cwd=tmp_path) as client:
        init = await client.call("initialize", INITIALIZE)
        assert init["protocolVersion"] == 1
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert await client.call("session/prompt", prompt(session["sessionId"], "hello")) == {"stopReason": "end_turn"}
        assert [n["params"] for n in client.notifications] == [
            {
                "sessionId": session["sessionId"],
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}},
            }
        ]
    assert client.violations == []


async def test_sdk_echo_agent_errors_validate(tmp_path: Path) -> None:
    """Error responses (unknown session, unknown method, malformed JSON) validate as ACP errors."""
    async with WireClient.spawn(ECHO_AGENT, cwd=tmp_path) as client:
        await client.call("initialize", INITIALIZE)
        with pytest.raises(RpcError) as unknown_session:
            await client.call("session/prompt", prompt("no-such-session", "hi"))
        assert unknown_session.value.code == -32002
        unknown_method = await client.request("_runwield/nope", {})
        assert unknown_method["error"]["code"] == -32601
        await client.send_raw(b'{"jsonrpc": "2.0", "id": 9, "method": \n')
        parse_error = await client.wait_message(lambda m: "id" in m and m["id"] is None)
        assert parse_error["error"]["code"] == -32700
    assert client.violations == []


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        pytest.param(['{"jsonrpc": "2.0", "id": $ID, "result": {"protocolVersion": "one"}}'],
                     r"InitializeResponse: 'one' is not of type 'integer' \(at \$\.protocolVersion\)", id="bad-result"),
        pytest.param(["starting agent...", VALID_INIT], "stdout line is not JSON", id="log-on-stdout"),
        pytest.param(['{"hello": 1}', VALID_INIT], "not a JSON-RPC 2.0", id="not-json-rpc"),
        pytest.param(['{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", '
                      '"update": {"sessionUpdate": "agent_message_chunk"}}}', VALID_INIT],
                     r"SessionNotification: .*'content' is a required property", id="bad-notification"),
        pytest.param(['{"jsonrpc": "2.0", "method": "session/made_up", "params": {}}', VALID_INIT],
                     "'session/made_up' is not an ACP agent notification", id="unknown-method"),
        pytest.param(['{"jsonrpc": "2.0", "id": 999, "result": {}}', VALID_INIT],
                     "response to no pending request", id="unknown-id"),
        pytest.param(['{"jsonrpc": "2.0", "id": $ID, "error": {"code": "oops", "message": "no"}}'],
                     r"\$defs/Error: 'oops' is not of type 'integer'", id="bad-error"),
    ],
)
async def test_violations_are_caught(lines: list[str], match: str) -> None:
    """Each kind of invalid agent output fails the request that observes it."""
    async with WireClient.spawn(fake_agent(*lines)) as client:
        with pytest.raises(WireViolation, match=match):
            await client.request("initialize", INITIALIZE)
        assert len(client.violations) == 1


async def test_unreported_violation_fails_at_exit() -> None:
    """A violation nobody waited for still fails the `async with` block."""
    bad_update = '{"jsonrpc": "2.0", "method": "session/update", "params": {}}'
    with pytest.raises(WireViolation, match="SessionNotification"):
        async with WireClient.spawn(fake_agent(VALID_INIT, bad_update)) as client:
            await client.request("initialize", INITIALIZE)


async def test_extension_methods_pass_untyped() -> None:
    """`_`-prefixed methods are not typed by the schema, and stderr is captured."""
    extension = '{"jsonrpc": "2.0", "method": "_runwield/status", "params": {"anything": [1, 2]}}'
    async with WireClient.spawn(fake_agent(extension, VALID_INIT)) as client:
        await client.request("initialize", INITIALIZE)
        assert client.notifications[0]["method"] == "_runwield/status"
    assert "fake agent ready" in client.stderr


async def test_handler_answers_agent_request() -> None:
    """A registered handler answers an agent->client request with a validated response."""
    async with WireClient.spawn(fake_agent(PERMISSION_REQUEST, VALID_INIT)) as client:
        client.on_request("session/request_permission", lambda params: {
            "outcome": {"outcome": "selected", "optionId": params["options"][0]["optionId"]}
        })
        await client.request("initialize", INITIALIZE)
        received = await client.wait_notification(lambda n: n["method"] == "_test/received")
        assert received["params"] == {
            "jsonrpc": "2.0", "id": "perm-1", "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}
        }
        assert client.requests[0]["method"] == "session/request_permission"


async def test_invalid_handler_reply_is_caught() -> None:
    """A client->agent response that breaks the schema is a violation too."""
    async with WireClient.spawn(fake_agent(PERMISSION_REQUEST, VALID_INIT)) as client:
        client.on_request("session/request_permission", lambda params: {"outcome": "yes"})
        with pytest.raises(WireViolation, match="RequestPermissionResponse"):
            await client.request("initialize", INITIALIZE)
            await client.wait_notification(lambda n: n["method"] == "_test/received")


async def test_unhandled_agent_request_gets_method_not_found() -> None:
    """Without a handler the agent's request is answered with -32601."""
    async with WireClient.spawn(fake_agent(PERMISSION_REQUEST, VALID_INIT)) as client:
        await client.request("initialize", INITIALIZE)
        received = await client.wait_notification(lambda n: n["method"] == "_test/received")
        assert received["params"]["error"]["code"] == -32601


async def test_outbound_messages_are_validated(tmp_path: Path) -> None:
    """Invalid client->agent params raise before sending unless check=False."""
    async with WireClient.spawn(ECHO_AGENT, cwd=tmp_path) as client:
        await client.call("initialize", INITIALIZE)
        with pytest.raises(WireViolation, match="NewSessionRequest: 'mcpServers' is a required property"):
            await client.request("session/new", {"cwd": str(tmp_path)})
        response = await client.request("session/new", {"cwd": 3}, check=False)
        assert response["error"]["code"] == -32602


async def test_unstable_methods_need_the_unstable_schema(tmp_path: Path) -> None:
    """session/fork is only in schema.unstable.json; the stable client says so."""
    fork = {"sessionId": "s1", "cwd": str(tmp_path), "mcpServers": []}
    async with WireClient.spawn(ECHO_AGENT, cwd=tmp_path) as client:
        with pytest.raises(WireViolation, match="only in schema.unstable.json"):
            await client.request("session/fork", fork)
    async with WireClient.spawn(ECHO_AGENT, cwd=tmp_path, unstable=True) as client:
        await client.call("initialize", INITIALIZE)
        assert (await client.request("session/fork", fork))["error"]["code"] == -32601


def test_missing_schema_fails_with_npm_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without node_modules the harness fails (never skips) and says to run `npm ci`."""
    monkeypatch.setenv("ACP_SCHEMA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="run `npm ci`"):
        schema_path()
