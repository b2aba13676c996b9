"""An agent's process on pipes, and stopping it so that nothing it started outlives it.

The agent runs in a session (and so a process group) of its own. Stopping it closes its input; whatever of it is
still running after ``AGENT_EXIT_GRACE`` seconds (the agent, anything left in its process group, anything it started
that left the group) gets SIGTERM, and after as long again SIGKILL; if stopping is itself cut short, SIGKILL at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

from acp.transports import default_environment

from ..core.command_supervisor import living_descendants, living_members, process_table
from .transport import STREAM_LIMIT

AGENT_EXIT_GRACE = 2.0
"""Seconds an agent gets to exit after end of input, and again after SIGTERM."""
EXIT_POLL = 0.05
"""Seconds between two looks at whether what the agent started has exited."""


@contextlib.asynccontextmanager
async def agent_process(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> AsyncIterator[asyncio.subprocess.Process]:
    """The agent on pipes, in a session of its own: a terminal's Ctrl-C goes to its foreground process
    group, and must reach wld (which cancels the turn), not the agent."""
    process = await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**default_environment(), **env},
        cwd=cwd,
        limit=STREAM_LIMIT,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        await stop_agent(process)


async def stop_agent(process: asyncio.subprocess.Process) -> None:
    """End of input; then SIGTERM, then SIGKILL, to the agent's process group and every process it started, each
    when something of it still runs ``AGENT_EXIT_GRACE`` seconds later."""
    started = set(living_descendants([process.pid]))
    assert process.stdin is not None
    with contextlib.suppress(OSError, RuntimeError):
        process.stdin.close()
    try:
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if await _all_gone(process, started):
                return
            started |= set(living_descendants([process.pid, *started]))
            _signal_all(process.pid, started, signum)
        await _all_gone(process, started)
    except asyncio.CancelledError:  # no time left to wait: nothing of it may outlive wld
        _signal_all(process.pid, started | set(living_descendants([process.pid, *started])), signal.SIGKILL)
        raise


async def _all_gone(process: asyncio.subprocess.Process, started: set[int]) -> bool:
    """Whether the agent, its process group and ``started`` have all exited within ``AGENT_EXIT_GRACE`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + AGENT_EXIT_GRACE
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), AGENT_EXIT_GRACE)
    while process.returncode is not None:
        started -= _exited(started)
        if not started and not living_members(process.pid):
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(EXIT_POLL)
    return False


def _exited(pids: set[int]) -> set[int]:
    table = process_table()
    return {pid for pid in pids if table.get(pid, ("Z",))[0] == "Z"}


def _signal_all(group: int, pids: set[int], signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(group, signum)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
