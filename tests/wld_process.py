"""`wld` as a real subprocess: a wld.toml written from a dict, the command started, its output collected."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def toml_value(value: Any) -> str:
    """A TOML value for a string, number, bool or list of them (JSON's string syntax is TOML's basic string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)


def write_config(path: Path, config: dict[str, Any]) -> Path:
    """``config`` as wld.toml: plain keys first, then one ``[a.b]`` table per nested dict."""

    def table(name: str, values: dict[str, Any]) -> list[str]:
        lines = [f"[{name}]"] if name else []
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items() if not isinstance(value, dict)]
        for key, value in values.items():
            if isinstance(value, dict):
                lines += ["", *table(f"{name}.{key}" if name else key, value)]
        return lines

    path.write_text("\n".join(table("", config)) + "\n", encoding="utf-8")
    return path


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Finished:
    """A `wld` process that has exited."""

    returncode: int
    stdout: str
    stderr: str


class WldProcess:
    """A running `wld` subcommand, stopped with SIGINT as a person stops it with Ctrl-C."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None) -> WldProcess:
        """``wld ARGS``; ``env`` adds to this process's environment."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "runwield_bridge.cli", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, **(env or {})},
        )  # fmt: skip
        return cls(proc)

    async def stop(self, timeout: float = 30.0) -> Finished:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
        return await self.finish(timeout)

    async def finish(self, timeout: float = 60.0) -> Finished:
        try:
            out, err = await asyncio.wait_for(self.proc.communicate(), timeout)
        except TimeoutError:
            self.proc.kill()
            out, err = await self.proc.communicate()
        assert self.proc.returncode is not None
        return Finished(self.proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def start_bridge(config: Path, home: Path, log: Path) -> asyncio.subprocess.Process:
    """``wld bridge --config CONFIG`` with ``home`` as WLD_HOME, its output to the file ``log`` (a pipe nobody reads
    could fill and stall it)."""
    with log.open("wb") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "runwield_bridge.cli", "bridge", "--config", str(config),
            stdout=out, stderr=out, env={**os.environ, "WLD_HOME": str(home)},
        )  # fmt: skip


async def stop_bridges(procs: list[tuple[asyncio.subprocess.Process, Path]], timeout: float) -> None:
    """Stop each running bridge with SIGINT (SIGKILL after ``timeout``), then print the end of its log (shown when a
    test fails)."""
    for proc, _ in procs:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
    for proc, log in procs:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        print(f"--- {log.name}\n{log.read_text(errors='replace')[-20000:]}")


async def run_wld(*args: str, env: dict[str, str] | None = None, timeout: float = 60.0) -> Finished:
    """Run a `wld` subcommand to completion."""
    return await (await WldProcess.start(*args, env=env)).finish(timeout)
