"""What a command leaves running in the background, also past ``setsid``, ends with it: when the command exits (and so
before its turn ends), when it times out, when the turn is cancelled, and when the process running it is killed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from test_coding_tools import alive, coder, finished, model, repo  # noqa: F401 - model and repo are fixtures
from waiting import PATIENCE, until

from runwield_bridge.core.events import Event, ToolProgress, TurnSettled
from runwield_bridge.core.validation import run_command

CHILD = "sh -c 'echo $$ > child.pid; exec sleep 300'"
CHILDREN = {
    "in the command's group": f"{CHILD} &",
    "in a session of its own": f"setsid {CHILD} &",
    "with nohup, setsid and its output elsewhere": f"nohup setsid {CHILD} >/dev/null 2>&1 &",
}
ESCAPED = [CHILDREN["in a session of its own"], CHILDREN["with nohup, setsid and its output elsewhere"]]
STARTED = "while [ ! -s child.pid ]; do sleep 0.01; done; echo started"
"""Goes on once the background child has written its pid."""
STOPPED_NOTE = "\n[the command exited; what it left running in the background was stopped: `"
"""Then the command line of each process stopped (the child's, before or after its exec of sleep)."""


@contextlib.asynccontextmanager
async def background_child(where: Path) -> AsyncIterator[None]:
    """Around a command that starts ``CHILD`` in ``where``: afterwards that child must end (within PATIENCE); if
    it does not, the test fails and the child is killed, so that a failing test leaks nothing."""
    yield
    pid = int((where / "child.pid").read_text())
    try:
        await until(lambda: not alive(pid), f"the background child {pid} to end")
    finally:
        with contextlib.suppress(OSError):
            if b"sleep" in Path(f"/proc/{pid}/cmdline").read_bytes():  # still the child, not a reused pid
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("child", CHILDREN.values(), ids=CHILDREN.keys())
async def test_what_a_command_leaves_running_is_stopped_when_it_exits_and_said(tmp_path: Path, repo: Path, model: OpenAIFake, child: str) -> None:
    async with coder(tmp_path, repo, model, command_timeout=PATIENCE) as c, background_child(repo):
        c.person.answers = ["once"]
        done = finished(await c.call("run_command", {"command": f"{child} {STARTED}"}))
    assert done.status == "completed", "a child holding the output open does not make the command time out"
    assert done.output.startswith(f"started\n{STOPPED_NOTE}") and done.output.endswith("`]\n\n(exit code 0)"), done.output


@pytest.mark.parametrize("child", ESCAPED)
async def test_a_command_that_times_out_is_stopped_with_what_it_started_in_another_session(tmp_path: Path, repo: Path, model: OpenAIFake, child: str) -> None:
    async with coder(tmp_path, repo, model, command_timeout=4) as c, background_child(repo):
        c.person.answers = ["once"]
        done = finished(await c.call("run_command", {"command": f"{child} {STARTED}; sleep 300"}))
    assert done.status == "failed"
    assert done.output.startswith("started\n") and "timed out after 4s and was stopped, with everything it started" in done.output


@pytest.mark.parametrize("child", ESCAPED)
async def test_cancelling_the_turn_stops_what_the_command_started_in_another_session(tmp_path: Path, repo: Path, model: OpenAIFake, child: str) -> None:
    async with coder(tmp_path, repo, model, command_timeout=PATIENCE * 10) as c, background_child(repo):
        c.person.answers = ["once"]
        cancel: asyncio.Future[Any] | None = None

        async def emit(event: Event) -> None:
            nonlocal cancel
            if cancel is None and isinstance(event, ToolProgress) and "started" in (event.output or ""):
                cancel = asyncio.ensure_future(c.app.session_host.cancel(c.session_id))

        c.model.queue(Reply(tool_calls=(ToolCall("call_1", "run_command", {"command": f"{child} {STARTED}; wait"}),)))
        settled = await c.app.session_host.prompt(c.session_id, "run it", emit, forms=c.person)
        assert cancel is not None
        await cancel
    assert isinstance(settled, TurnSettled) and settled.stop_reason == "cancelled"


async def test_a_validation_command_passes_and_what_it_left_running_is_stopped(tmp_path: Path) -> None:
    async with background_child(tmp_path):
        result = await run_command(f"{CHILDREN['in a session of its own']} {STARTED}", tmp_path, PATIENCE)
    assert result.passed and result.output.startswith(f"started\n{STOPPED_NOTE}") and result.output.endswith("`]\n")


RUNNER = """
import asyncio, sys
from pathlib import Path
from runwield_bridge.core.validation import run_command
asyncio.run(run_command(sys.argv[1], Path(sys.argv[2]), 600))
"""


async def test_a_killed_wld_leaves_nothing_its_command_started_running(tmp_path: Path) -> None:
    command = f"{CHILDREN['with nohup, setsid and its output elsewhere']} {STARTED}; sleep 300"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, command, str(tmp_path)])
    try:
        async with background_child(tmp_path):
            pid_file = tmp_path / "child.pid"
            await until(lambda: (pid_file.exists() and pid_file.stat().st_size) or runner.poll() is not None, "the command to start its child")
            runner.kill()
    finally:
        runner.kill()
        runner.wait()
