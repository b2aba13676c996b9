"""Validation: the project's configured commands, run with captured output and a timeout."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import command_supervisor

OUTPUT_LIMIT = 16_000
DRAIN_SECONDS = 5.0  # how long output is read after the command has ended
STOP_SECONDS = 10.0  # how long a stopped command may take to end what it started

ValidationState = Literal["passed", "failed", "unvalidated"]


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How one validation command ended; ``output`` is the tail of its stdout and stderr."""

    command: str
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return f"`{self.command}` timed out after {round(self.seconds, 1):g}s"
        if self.passed:
            return f"`{self.command}` passed"
        return f"`{self.command}` failed (exit {self.exit_code})"


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """All commands' results: the outcome reported to the user, whatever the Agent claimed."""

    results: tuple[CommandResult, ...]

    @property
    def state(self) -> ValidationState:
        if not self.results:
            return "unvalidated"
        return "passed" if all(r.passed for r in self.results) else "failed"

    def summary(self) -> str:
        if not self.results:
            return "Not validated: no [validation] commands are configured."
        passed = sum(r.passed for r in self.results)
        verdict = "Validation passed" if self.state == "passed" else "Validation failed"
        return f"{verdict}: {passed} of {len(self.results)} commands passed ({'; '.join(r.describe() for r in self.results)})."


def tail(text: str, limit: int = OUTPUT_LIMIT) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


async def run_command(command: str, cwd: Path, timeout: float, on_output: Callable[[str], None] | None = None) -> CommandResult:
    """Run a shell command under ``command_supervisor``, in a session of its own: when the shell exits, anything it
    left running in the background is stopped (and named in the output); on timeout or cancellation everything it
    started is. ``on_output`` gets the output (stdout and stderr) as it arrives."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *command_supervisor.supervised(command), cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )
    captured = bytearray()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    async def collect() -> None:
        while data := await proc.stdout.read(65536):
            captured.extend(data)
            if on_output is not None:
                on_output(decoder.decode(data))
            del captured[: max(0, len(captured) - 4 * OUTPUT_LIMIT)]

    reader = asyncio.ensure_future(collect())
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        timed_out = True
        await _stop(proc)
    except asyncio.CancelledError:
        await _stop(proc)
        raise
    finally:
        await asyncio.wait({reader}, timeout=DRAIN_SECONDS)  # output a stray process holds open is not waited for
        reader.cancel()
    output = tail(captured.decode(errors="replace"))
    return CommandResult(command, None if timed_out else proc.returncode, output, time.monotonic() - started, timed_out)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Have the supervisor end everything the command started; kill the supervisor if it does not end in time."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
