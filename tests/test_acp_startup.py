"""`wld acp` answers ``initialize`` before it loads what only Sessions need: the store, the plugins, the models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wld_process import write_config

NOT_YET = (
    *("sqlalchemy", "sqlmodel", "aiosqlite", "pydantic_ai", "aiohttp", "markdown_it"),
    *("runwield_bridge.app", "runwield_bridge.core.store", "runwield_bridge.plugin_host", "runwield_bridge.plugin_api"),
    *("runwield_bridge.core.sessions", "runwield_bridge.acp.session_methods", "runwield_bridge.channels"),
)
"""Heavy or stateful modules that ``initialize`` does not need: the store, the plugins and their API, the Session core
and the channel kit."""
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
NEW_SESSION = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
# `wld acp` in this interpreter, noting on stderr which of NOT_YET are loaded when initialize is answered.
WLD_ACP_OBSERVED = """
import json, sys
from runwield_bridge.acp.server import AcpAgentServer
from runwield_bridge.cli import main

answer = AcpAgentServer.initialize

async def initialize(self, request):
    print(json.dumps([name for name in sys.argv[1:] if name in sys.modules]), file=sys.stderr)
    return await answer(self, request)

AcpAgentServer.initialize = initialize
sys.exit(main(["acp"]))
"""


def wld_acp(args: list[str], wld_home: Path, *lines: dict[str, object]) -> subprocess.CompletedProcess[str]:
    """Run ``args`` with these lines on stdin (then end of input); bounded, never left running."""
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    env = {**os.environ, "WLD_HOME": str(wld_home)}
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, timeout=60)


def answers(done: subprocess.CompletedProcess[str]) -> dict[object, dict[str, object]]:
    return {message["id"]: message for message in map(json.loads, done.stdout.splitlines()) if "id" in message}


def test_initialize_is_answered_before_the_store_and_the_plugins_are_loaded(tmp_path: Path) -> None:
    wld_home = tmp_path / "home"
    done = wld_acp([sys.executable, "-c", WLD_ACP_OBSERVED, *NOT_YET], wld_home, INITIALIZE, NEW_SESSION)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[0]) == [], "loaded before initialize was answered"
    replies = answers(done)
    assert replies[1]["result"]["protocolVersion"] == 1  # type: ignore[index]
    assert str(replies[2]["result"]["sessionId"]).startswith("ses_"), "the Session Host started after initialize"  # type: ignore[index]
    assert (wld_home / "wld.db").exists()


def test_a_configuration_error_found_when_the_host_starts_ends_wld_acp_with_the_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "wld.toml", {"sessions": {"model": "gpt-none"}})
    wld = str(Path(sys.executable).with_name("wld"))
    done = wld_acp([wld, "acp", "--config", str(config)], tmp_path / "home", INITIALIZE, NEW_SESSION)
    assert done.returncode == 2
    assert "wld: configuration error: sessions.model: unknown model 'gpt-none'" in done.stderr
    assert "result" in answers(done)[1], "initialize is answered before the Session Host starts"
    assert 2 not in answers(done) or "error" in answers(done)[2]
