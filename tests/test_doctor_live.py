"""`wld doctor --live` as a real process: each configured agent started, asked for an exact reply in a temporary
session and stopped, one line each; exit 1 when an agent answers otherwise or does not start; no agent left running."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from test_agent_lifecycle import alive, stubborn_config, stubborn_pids

from tests.wld_process import run_wld, write_config

REPO = Path(__file__).resolve().parent.parent
ECHO_AGENT = REPO / "bench" / "echo_agent.mjs"


async def doctor_live(tmp_path: Path, agents: dict[str, object]):
    config = write_config(tmp_path / "wld.toml", {"web": {"listen": "127.0.0.1:0"}, "agents": agents})
    return await run_wld("doctor", "--live", "--config", str(config), env={"WLD_HOME": str(tmp_path / "home")}, timeout=180)


def line_of(output: str, subject: str) -> str:
    [line] = [line for line in output.splitlines() if f" {subject}:" in line]
    return line


async def test_doctor_live_reports_the_agents_name_version_reply_and_time_and_leaves_no_process(tmp_path: Path) -> None:
    done = await doctor_live(tmp_path, {"stubborn": stubborn_config(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    line = line_of(done.stdout, "agent stubborn")
    assert line.startswith("ok ") and "asking-agent 1.2.3 replied 'LIVE-OK' to 'Reply with exactly LIVE-OK' in " in line and line.endswith("s")
    assert done.stdout.rstrip().endswith("no problems found")
    assert not alive(stubborn_pids(tmp_path)), "the agent (which ignores SIGTERM) and its grandchild are stopped"


async def test_doctor_live_fails_when_an_agent_replies_otherwise_or_does_not_start(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node and ECHO_AGENT.exists()
    agents = {
        "echo": {"command": [node, str(ECHO_AGENT)], "cwd": str(REPO)},
        "ghost": {"command": [str(tmp_path / "no-such-agent")]},
        "good": {"command": [sys.executable, str(Path(__file__).parent / "agents" / "asking_agent.py")]},
    }
    done = await doctor_live(tmp_path, agents)
    assert done.returncode == 1, done.stdout + done.stderr
    echo = line_of(done.stdout, "agent echo")
    assert echo.startswith("problem ") and "replied 'Reply with exactly LIVE-OK'" in echo
    ghost = line_of(done.stdout, "agent ghost")
    assert ghost.startswith("problem ") and "it did not start" in ghost and "no-such-agent" in ghost
    assert line_of(done.stdout, "agent good").startswith("ok ")
    assert "2 problem(s) found" in done.stdout
