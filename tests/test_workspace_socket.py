"""ACP over the Workspace's WebSocket (`wld workspace`): the same messages and semantics as `wld acp` on stdio,
on the same state; logging in with a one-time link; refusals for anyone else."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from acp_socket import SocketWireClient, browser, log_in, running_workspace, workspace_config
from acp_wire import RpcError, WireClient
from waiting import until
from test_acp_server import INIT, WLD, text_prompt, updates

from runwield_bridge.acp.extensions import CONFLICT_CODE
from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.core.logins import WorkspaceLogins
from runwield_bridge.core.store import Store
from runwield_bridge.web.workspace import add_workspace_routes, login_url
from wld_process import free_port, write_config


def said(client: WireClient, session_id: str, kind: str) -> str:
    """Everything the Session's ``kind`` chunks said on this connection."""
    return "".join(u["content"]["text"] for u in updates(client, session_id, kind))


def meta(**values: Any) -> dict[str, Any]:
    return {"_meta": {"runwield": values}}


async def stored_sessions(wld_home: Path) -> list[Any]:
    store = await Store.open(f"sqlite+aiosqlite:///{wld_home / 'wld.db'}")
    try:
        return await store.sessions.list_sessions(include_archived=True)
    finally:
        await store.close()


async def user_turns(wld_home: Path, session_id: str) -> list[str]:
    store = await Store.open(f"sqlite+aiosqlite:///{wld_home / 'wld.db'}")
    try:
        return [entry.text for entry in await store.sessions.transcript(session_id) if entry.kind == "user"]
    finally:
        await store.close()


async def test_a_browser_session_is_continued_on_stdio_and_back(tmp_path: Path, wld_home: Path) -> None:
    config = workspace_config(tmp_path)
    stdio = [WLD, "acp", "--config", str(config)]
    async with running_workspace(config) as workspace, browser() as http:
        cookie = await log_in(http, workspace.login_url)
        async with SocketWireClient.connect(http, workspace, cookie) as socket:
            init = await socket.call("initialize", INIT)
            assert init["_meta"]["runwield"]["workspace"]["version"] == 1
            session_id = (await socket.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            assert (await socket.call("session/prompt", text_prompt(session_id, "first from the browser")))["stopReason"] == "end_turn"
        async with WireClient.spawn(stdio, cwd=tmp_path) as ide:
            await ide.call("initialize", INIT)
            await ide.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
            assert "first from the browser" in said(ide, session_id, "user_message_chunk")
            await ide.call("session/prompt", text_prompt(session_id, "second from the IDE"))
        async with SocketWireClient.connect(http, workspace, cookie) as socket:  # a new connection, the same login
            await socket.call("initialize", INIT)
            await socket.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
            assert "first from the browser" in (history := said(socket, session_id, "user_message_chunk"))
            assert "second from the IDE" in history
            await socket.call("session/prompt", text_prompt(session_id, "third from the browser"))
            listed = (await socket.call("session/list", {}))["sessions"]
    assert [info["sessionId"] for info in listed] == [session_id]
    assert await user_turns(wld_home, session_id) == [
        "first from the browser", "second from the IDE", "third from the browser",
    ]  # fmt: skip


async def test_no_way_in_without_a_login_from_this_origin(tmp_path: Path, wld_home: Path) -> None:
    async with running_workspace(workspace_config(tmp_path)) as workspace, browser() as http:
        async with http.get(workspace.origin + "/workspace") as page:
            assert page.status == 401
        token = workspace.login_url.rsplit("=", 1)[1]
        async with http.get(workspace.origin + "/workspace/login?token=" + token[:-2] + "xx", allow_redirects=False) as wrong:
            assert wrong.status == 401 and "wld_workspace" not in wrong.cookies
        async with http.get(workspace.login_url, allow_redirects=False) as first:
            assert first.status == 303 and first.headers["Location"] == "/workspace"
            cookie = first.cookies["wld_workspace"]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/" and not cookie["secure"]
        async with http.get(workspace.login_url, allow_redirects=False) as again:  # the link works once
            assert again.status == 401 and "wld_workspace" not in again.cookies
        async with http.get(workspace.origin + "/workspace", headers={"Cookie": f"wld_workspace={cookie.value}"}) as page:
            assert page.status == 200
        refused = {
            "no cookie": ({"Origin": workspace.origin}, 401),
            "wrong cookie": ({"Origin": workspace.origin, "Cookie": "wld_workspace=guessed"}, 401),
            "wrong origin": ({"Origin": "http://evil.example", "Cookie": f"wld_workspace={cookie.value}"}, 403),
            "no origin": ({"Cookie": f"wld_workspace={cookie.value}"}, 403),
        }
        for case, (headers, status) in refused.items():
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await http.ws_connect(workspace.socket_url, headers=headers)
            assert caught.value.status == status, case
    assert await stored_sessions(wld_home) == []


async def test_a_duplicate_action_has_one_effect_whichever_transport_repeats_it(tmp_path: Path, wld_home: Path) -> None:
    config = workspace_config(tmp_path)
    async with running_workspace(config) as workspace, browser() as http:
        cookie = await log_in(http, workspace.login_url)
        async with SocketWireClient.connect(http, workspace, cookie) as socket:
            await socket.call("initialize", INIT)
            new = {"cwd": str(tmp_path), "mcpServers": [], **meta(requestId="new-1")}
            session_id = (await socket.call("session/new", new))["sessionId"]
            prompt = text_prompt(session_id, "only once", **meta(requestId="prompt-1"))
            answer = await socket.call("session/prompt", prompt)
            assert await socket.call("session/prompt", prompt) == answer
            assert (await socket.call("session/new", new))["sessionId"] == session_id
    async with WireClient.spawn([WLD, "acp", "--config", str(config)], cwd=tmp_path) as ide:  # another process, later
        await ide.call("initialize", INIT)
        assert await ide.call("session/prompt", prompt) == answer
        with pytest.raises(RpcError) as reused:
            await ide.call("session/prompt", text_prompt(session_id, "something else", **meta(requestId="prompt-1")))
    assert (reused.value.code, reused.value.data["reason"]) == (CONFLICT_CODE, "requestIdReused")
    assert [record.id for record in await stored_sessions(wld_home)] == [session_id]
    assert await user_turns(wld_home, session_id) == ["only once"]


async def test_a_stale_revision_or_another_project_is_refused_alike_on_both_transports(tmp_path: Path, wld_home: Path) -> None:
    config = workspace_config(tmp_path)
    refusals: dict[str, list[dict[str, Any]]] = {"socket": [], "stdio": []}
    async with running_workspace(config) as workspace, browser() as http:
        cookie = await log_in(http, workspace.login_url)
        async with SocketWireClient.connect(http, workspace, cookie) as socket:
            await socket.call("initialize", INIT)
            created = await socket.call("session/new", {"cwd": str(tmp_path), "mcpServers": [], **meta(requestId="n")})
            session_id, seen = created["sessionId"], created["_meta"]["runwield"]["revision"]
            answer = await socket.call("session/prompt", text_prompt(session_id, "seen", **meta(revision=seen)))
            assert answer["_meta"]["runwield"]["revision"] > seen
            stale = text_prompt(session_id, "on an old view", **meta(revision=seen, requestId="stale-1"))
            elsewhere = text_prompt(session_id, "in another project", **meta(project="/elsewhere"))
            for params in (stale, elsewhere):
                refusals["socket"].append((await socket.request("session/prompt", params))["error"])
        async with WireClient.spawn([WLD, "acp", "--config", str(config)], cwd=tmp_path) as ide:
            await ide.call("initialize", INIT)
            for params in (stale, elsewhere):
                refusals["stdio"].append((await ide.request("session/prompt", params))["error"])
    assert refusals["socket"] == refusals["stdio"]
    (stale_error, project_error) = refusals["stdio"]
    assert stale_error["code"] == project_error["code"] == CONFLICT_CODE
    assert stale_error["data"] == {"reason": "staleRevision", "sessionId": session_id, "revision": answer["_meta"]["runwield"]["revision"]}
    assert project_error["data"] == {"reason": "otherProject", "sessionId": session_id, "project": str(tmp_path)}
    assert await user_turns(wld_home, session_id) == ["seen"]


HOSTILE_FRAMES: list[tuple[str | bytes, int]] = [
    ("not json", -32700),
    (b"\x00\x01binary", -32700),
    ("[]", -32600),
    ('{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":5}', -32600),
    ("[" * 5000 + "]" * 5000, -32700),
    ('{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":"\\ud800","mcpServers":[]}}', -32602),
    ('{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"x","prompt":[],"_meta":{"runwield":{"requestId":5}}}}', -32602),
]


async def test_hostile_frames_are_answered_and_the_connection_keeps_serving(tmp_path: Path) -> None:
    async with running_workspace(workspace_config(tmp_path)) as workspace, browser() as http:
        cookie = await log_in(http, workspace.login_url)
        headers = {"Origin": workspace.origin, "Cookie": f"wld_workspace={cookie}"}
        async with http.ws_connect(workspace.socket_url, headers=headers) as socket:
            await socket.send_str(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}))
            assert json.loads((await socket.receive(timeout=60)).data)["result"]["protocolVersion"] == 1
            for frame, code in HOSTILE_FRAMES:
                await (socket.send_bytes(frame) if isinstance(frame, bytes) else socket.send_str(frame))
                answer = json.loads((await socket.receive(timeout=60)).data)
                assert answer["error"]["code"] == code, (frame[:80], answer)
        async with SocketWireClient.connect(http, workspace, cookie) as client:  # and the server still serves
            assert (await client.call("initialize", INIT))["protocolVersion"] == 1


async def test_behind_https_the_cookie_is_secure_and_only_the_public_origin_may_connect(tmp_path: Path) -> None:
    port = free_port()
    public = "https://wield.example"
    config = write_config(tmp_path / "wld.toml", {"web": {"listen": f"127.0.0.1:{port}", "public_url": public}})
    app = await App.start(load_settings(str(config)))
    logins = WorkspaceLogins(app.store.workspace)
    add_workspace_routes(app.review_pages.server, app.session_host, logins)
    try:
        assert await app.review_pages.base_url() == public
        local = f"http://127.0.0.1:{port}"
        link = login_url(local, await logins.mint_token())  # what a proxy in front of public_url passes on
        async with browser() as http:
            async with http.get(link, allow_redirects=False) as response:
                cookie = response.cookies["wld_workspace"]
            assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Strict"
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await http.ws_connect(f"ws://127.0.0.1:{port}/acp", headers={"Origin": local, "Cookie": f"wld_workspace={cookie.value}"})
            assert caught.value.status == 403
            headers = {"Origin": public, "Cookie": f"wld_workspace={cookie.value}"}
            async with http.ws_connect(f"ws://127.0.0.1:{port}/acp", headers=headers) as socket:
                await socket.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
                assert (await socket.receive_json(timeout=60))["result"]["protocolVersion"] == 1
    finally:
        await app.close()


async def test_open_shows_the_login_link_in_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    record = f"import sys, pathlib; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])"
    browser_command = f"{shlex.quote(sys.executable)} -c {shlex.quote(record)} %s"
    async with running_workspace(workspace_config(tmp_path), "--open", env={"BROWSER": browser_command}) as workspace:
        await until(lambda: opened.exists() and opened.read_text(), "the browser to be asked to open the link")
        assert opened.read_text() == workspace.login_url


async def test_a_login_survives_a_restart_and_an_expired_link_lets_nobody_in(tmp_path: Path, wld_home: Path) -> None:
    config = workspace_config(tmp_path)
    async with browser() as http:
        async with running_workspace(config) as workspace:
            cookie = await log_in(http, workspace.login_url)
        async with running_workspace(config) as restarted, SocketWireClient.connect(http, restarted, cookie) as socket:
            assert (await socket.call("initialize", INIT))["protocolVersion"] == 1
    store = await Store.open(f"sqlite+aiosqlite:///{wld_home / 'wld.db'}")
    try:
        expired = WorkspaceLogins(store.workspace, token_ttl=0.0)
        assert await expired.log_in(await expired.mint_token()) is None
        assert not await expired.is_logged_in("guessed") and not await expired.is_logged_in(None)
    finally:
        await store.close()


async def test_one_bridge_process_serves_a_chat_and_a_browser_at_once(tmp_path: Path) -> None:
    config = write_config(tmp_path / "wld.toml", {"web": {"listen": "127.0.0.1:0"}, "channels": {"console": {}}})
    async with running_workspace(config, "--workspace", command="bridge") as workspace, browser() as http:
        cookie = await log_in(http, workspace.login_url)
        async with SocketWireClient.connect(http, workspace, cookie) as socket:
            await socket.call("initialize", INIT)
            session_id = (await socket.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            assert (await socket.call("session/prompt", text_prompt(session_id, "from the browser")))["stopReason"] == "end_turn"
        assert workspace.process.proc.returncode is None, "the chat bridge keeps running"
