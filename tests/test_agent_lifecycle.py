"""No agent outlives wld: `wld acp` and `wld bridge` as real processes, stopped by SIGTERM, SIGINT or the end of
their input, leave no process of their agents behind (Codex through its npm launcher, which starts the native binary
as a grandchild; our stubborn agent, which ignores SIGTERM and starts a grandchild in a session of its own)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp_session import say
from acp_wire import WireClient
from test_acp_server import INIT, WLD
from waiting import PATIENCE, until

from runwield_bridge.core.command_supervisor import living_descendants, process_table
from tests.bridge_kit import OWNER, bridge_world, telegram_section
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import TelegramWorld
from tests.wld_process import WldProcess, write_config

REPO = Path(__file__).resolve().parent.parent
CODEX_ACP = REPO / "node_modules" / ".bin" / "codex-acp"
STUBBORN_AGENT = Path(__file__).parent / "agents" / "stubborn_agent.py"
STOPS = ["SIGTERM", "SIGINT", "end of input"]


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` that still run (not gone, not a zombie)."""
    table = process_table()
    return {pid for pid in pids if pid in table and table[pid][0] != "Z"}


def codex_config(tmp_path: Path, port: int) -> dict[str, object]:
    """``[agents.codex]``: the npm launcher, its provider a local port that accepts and never answers, offline."""
    home = tmp_path / "codex-home"
    home.mkdir()
    overrides = [
        'sandbox_mode="danger-full-access"',
        'model_provider="local"',
        'model_providers.local.name="local"',
        f'model_providers.local.base_url="http://127.0.0.1:{port}/v1"',
        'model_providers.local.wire_api="responses"',
        'model="gpt-test"',
    ]
    command = [str(CODEX_ACP), *(part for override in overrides for part in ("-c", override))]
    return {"command": command, "env": {"CODEX_HOME": str(home), "HOME": str(tmp_path)}}


def stubborn_config(tmp_path: Path) -> dict[str, object]:
    env = {"AGENT_PIDS": str(tmp_path / "agent-pids"), "AGENT_STATE": str(tmp_path / "agent-state.json")}
    return {"command": [sys.executable, str(STUBBORN_AGENT)], "env": env}


def stubborn_pids(tmp_path: Path) -> set[int]:
    return {int(line) for line in (tmp_path / "agent-pids").read_text().split()}


@contextlib.asynccontextmanager
async def silent_provider() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A local HTTP port that takes requests and never answers; yields the port and what arrived."""
    heard: list[bytes] = []
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        heard.append(await reader.read(65536))

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], heard
    finally:
        for writer in held:
            writer.close()
        server.close()


async def stop_wld(proc: asyncio.subprocess.Process, how: str) -> None:
    """Stop `wld` as ``how`` says and wait (bounded) for it to exit."""
    if how == "end of input":
        assert proc.stdin is not None
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, how))
    await asyncio.wait_for(proc.wait(), PATIENCE)


def codex_processes(root: int) -> set[int]:
    return {pid for pid, line in living_descendants([root]).items() if "codex-acp" in line}


@pytest.mark.parametrize("how", STOPS)
async def test_wld_acp_stopped_leaves_no_codex_process_launcher_or_native_binary(tmp_path: Path, how: str) -> None:
    async with silent_provider() as (port, heard):
        config = {"sessions": {"runtime": "acp:codex"}, "agents": {"codex": codex_config(tmp_path, port)}}
        env = {"WLD_CONFIG": str(write_config(tmp_path / "wld.toml", config)), "WLD_HOME": str(tmp_path / "wld-home")}
        async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
            await client.call("initialize", INIT)
            session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            turn = asyncio.ensure_future(say(client, session["sessionId"], "hello"))
            await until(lambda: heard or turn.done(), "Codex asking its model provider")
            started = codex_processes(client.proc.pid)
            assert len(started) >= 2, f"the launcher and the native binary: {started}"  # node codex-acp, then codex-acp
            await stop_wld(client.proc, how)
            await until(lambda: not alive(started), f"no Codex process left after {how} (left: {alive(started)})", timeout=10)
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)


@pytest.mark.parametrize("how", STOPS)
async def test_wld_acp_stopped_leaves_no_process_of_an_agent_that_ignores_sigterm(tmp_path: Path, how: str) -> None:
    config = {"sessions": {"runtime": "acp:stubborn"}, "agents": {"stubborn": stubborn_config(tmp_path)}}
    env = {"WLD_CONFIG": str(write_config(tmp_path / "wld.toml", config)), "WLD_HOME": str(tmp_path / "wld-home")}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
        await client.call("initialize", INIT)
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        answer = await say(client, session["sessionId"], "hello")
        assert answer["result"]["stopReason"] == "end_turn"
        started = stubborn_pids(tmp_path)
        assert len(alive(started)) == 2
        await stop_wld(client.proc, how)
        await until(lambda: not alive(started), f"no agent process left after {how} (left: {alive(started)})", timeout=10)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
async def test_wld_bridge_stopped_leaves_no_process_of_its_agent(tmp_path: Path, how: str) -> None:
    async with TelegramFake() as fake:
        config = {
            "channels": {"telegram": telegram_section(fake, agent="stubborn", cwd=str(tmp_path))},
            "agents": {"stubborn": stubborn_config(tmp_path)},
        }
        path = write_config(tmp_path / "wld.toml", config)
        process = await WldProcess.start("bridge", "--config", str(path), env={"WLD_HOME": str(tmp_path / "wld-home")})
        try:
            world = TelegramWorld(fake, None)  # type: ignore[arg-type]
            await fake.wait_until(lambda: bool(fake.calls_to("deleteWebhook")), timeout=PATIENCE)
            await world.say(OWNER, "hello")
            await world.reply_containing(OWNER, "echo: hello", final=True)
            started = stubborn_pids(tmp_path)
            assert len(alive(started)) == 2
            await stop_wld(process.proc, how)
            await until(lambda: not alive(started), f"no agent process left after {how} (left: {alive(started)})", timeout=10)
        finally:
            print((await process.stop()).stderr)


async def test_an_agent_that_hangs_up_and_lingers_is_stopped_with_what_it_started_and_restarted(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, telegram={"agent": "stubborn"}, agents={"stubborn": stubborn_config(tmp_path)}) as world:
        await world.exchange(OWNER, OWNER, "hello", "echo: hello")
        first = stubborn_pids(tmp_path)
        await world.exchange(OWNER, OWNER, "hangup", "stopped during this turn")  # it closes its output, ignores SIGTERM
        await until(lambda: not alive(first), f"the agent that hung up and what it started stopped (left: {alive(first)})")
        await world.exchange(OWNER, OWNER, "again", "echo: again")
        assert stubborn_pids(tmp_path).isdisjoint(first)
