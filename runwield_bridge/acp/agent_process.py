"""An agent's process on pipes, and stopping it so that nothing it started outlives it.

The agent runs under the command supervisor (``core/command_supervisor.py``), in a session (and so a process group)
of its own: the supervisor follows wld, so the agent and all it started end with wld even when wld is killed (an
agent waiting on a question may not end at the end of its input). Stopping it closes its input; whatever of it is
still running after ``AGENT_EXIT_GRACE`` seconds (the agent, anything left in its process group, anything it started
that left the group) gets SIGTERM, and after as long again SIGKILL; if stopping is itself cut short, SIGKILL at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shlex
import shutil
import signal
from pathlib import Path
from collections.abc import AsyncIterator

from acp.transports import default_environment

from ..core.command_supervisor import living_descendants, living_members, process_table, supervised
from .transport import STREAM_LIMIT

AGENT_EXIT_GRACE = 2.0
"""Seconds an agent gets to exit after end of input, and again after SIGTERM."""
EXIT_POLL = 0.05
"""Seconds between two looks at whether what the agent started has exited."""


@contextlib.asynccontextmanager
async def agent_process(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> AsyncIterator[asyncio.subprocess.Process]:
    """The agent on pipes, in a session of its own: a terminal's Ctrl-C goes to its foreground process
    group, and must reach wld (which cancels the turn), not the agent."""
    env = {**default_environment(), **env}
    program = found_program(command, env.get("PATH"), cwd)
    process = await asyncio.create_subprocess_exec(
        *supervised("exec " + shlex.join([program, *args])),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        limit=STREAM_LIMIT,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        await stop_agent(process)


def found_program(command: str, path: str | None, cwd: str | None) -> str:
    """The agent's program as its command names it (on ``path``, or relative to ``cwd``); FileNotFoundError, as
    starting a missing program raises, when there is none."""
    found = shutil.which(command, path=path) if os.sep not in command else str(Path(cwd or ".", command))
    if found is None or not os.access(found, os.X_OK):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return found


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
