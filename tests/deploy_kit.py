"""The deployment files read as Docker and compose read them (the Dockerfile's instructions, compose.yaml with its
``${NAME}`` interpolation, ``.env.example``), and their containers run here as processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tomllib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from tests.wld_process import Finished, WldProcess, free_port
from waiting import PATIENCE

ROOT = Path(__file__).resolve().parents[1]
BRIDGES = ["bridge-1", "bridge-2"]
COMPOSE_VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")
"""compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}`` (the forms compose.yaml uses)."""


@dataclass(frozen=True)
class Dockerfile:
    """What a container of the image starts with: its environment, user, working directory, command and health check."""

    env: dict[str, str]
    user: str
    workdir: str
    cmd: list[str]
    healthcheck: list[str]


def read_dockerfile(path: Path = ROOT / "Dockerfile") -> Dockerfile:
    """The Dockerfile's ENV (all of them), last USER and WORKDIR, CMD and HEALTHCHECK (exec forms, as JSON arrays)."""
    env: dict[str, str] = {}
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        instruction, _, arguments = line.strip().partition(" ")
        if instruction == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(arguments))
        found[instruction] = arguments.strip()
    healthcheck = found["HEALTHCHECK"].split(" CMD ", 1)[1]
    return Dockerfile(env, found["USER"], found["WORKDIR"], json.loads(found["CMD"]), json.loads(healthcheck))


def read_compose(path: Path = ROOT / "compose.yaml") -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def read_env_file(path: Path = ROOT / ".env.example") -> dict[str, str]:
    """``NAME=value`` lines, as compose reads ``.env``."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """``value`` with compose's variables replaced; a required one that is missing is an AssertionError with its message."""

    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if variables.get(name):
            return variables[name]
        assert kind == "-", f"compose.yaml: {rest or f'{name} is not set'}"
        return rest

    return COMPOSE_VARIABLE.sub(one, value)


def variables_in(text: str) -> dict[str, str | None]:
    """The ``${NAME}`` references in ``text``: name -> its ``:-`` default, or None when it has to be set."""
    return {name: rest if kind == "-" else None for name, kind, rest in COMPOSE_VARIABLE.findall(text)}


def config_references(path: Path = ROOT / "deploy/wld.toml") -> set[str]:
    """The environment variables the values of a wld.toml read (``"${NAME}"``)."""

    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    return {name for text in strings(tomllib.loads(path.read_text(encoding="utf-8"))) for name in variables_in(text)}


def volume_mounts(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's ``SOURCE:TARGET[:ro]`` volumes as target -> source."""
    return {mount.split(":")[1]: mount.split(":")[0] for mount in service.get("volumes", [])}


def bridge_environment(variables: dict[str, str], service: str) -> dict[str, str]:
    """A bridge container's environment: the image's ENV, then compose's ``environment`` with ``variables`` (.env)."""
    compose_env = read_compose()["services"][service]["environment"]
    return {**read_dockerfile().env, **{name: interpolate(str(value), variables) for name, value in compose_env.items()}}


class Container:
    """A container's process, run here: its command, environment and working directory."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name, self.command, self.env, self.cwd = name, command, env, cwd
        self.process: WldProcess | None = None
        self.finished: Finished | None = None

    async def start(self) -> None:
        pipe = asyncio.subprocess.PIPE
        self.process = WldProcess(await asyncio.create_subprocess_exec(*self.command, cwd=self.cwd, env=self.env, stdout=pipe, stderr=pipe))

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.proc.returncode is None

    async def stop(self) -> Finished:
        """``docker stop``: SIGTERM, then the exit status and what it printed (the same on later calls)."""
        assert self.process is not None
        if self.finished is None:
            if self.running:
                self.process.proc.send_signal(signal.SIGTERM)
            self.finished = await self.process.finish(PATIENCE)
        return self.finished


class Bridge(Container):
    """A bridge container: the image's CMD and working directory, with the container's environment mapped here."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        image = read_dockerfile()
        super().__init__(name, image.cmd, env, Path(env["WLD_HOME"]))  # the image's WORKDIR is its state directory
        self.url = f"http://{env['WLD_LISTEN']}"

    async def healthcheck(self) -> int:
        """The image's HEALTHCHECK command, run with this container's environment: its exit status."""
        command = [sys.executable if part == "python" else part for part in read_dockerfile().healthcheck]
        check = await asyncio.create_subprocess_exec(*command, env=self.env, stderr=asyncio.subprocess.DEVNULL)
        return await asyncio.wait_for(check.wait(), PATIENCE)


def bridges(database_url: str, state: Path, variables: dict[str, str]) -> list[Bridge]:
    """bridge-1 and bridge-2 on one database and one state directory, each on a free port."""
    venv_bin = str(Path(sys.executable).parent)  # where `wld` is installed, as on the image's PATH
    made = []
    for name in BRIDGES:
        env = bridge_environment(variables, name)
        assert make_url(env["WLD_DATABASE_URL"]).host == "db", "the containers reach the compose service `db`"
        env |= {"WLD_DATABASE_URL": database_url, "WLD_LISTEN": f"127.0.0.1:{free_port()}", "WLD_HOME": str(state)}
        env |= {"WLD_CONFIG": str(ROOT / "deploy/wld.toml"), "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}"}
        made.append(Bridge(name, env))
    return made


def proxy(variables: dict[str, str], running: list[Bridge], home: Path) -> Container:
    """The web service: Caddy with deploy/Caddyfile, its upstreams (``bridge-N:8787``) mapped to the bridges here."""
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.fail("Caddy is not installed: run `apt-get update && apt-get install -y caddy` (as .ci/run does)")
    web = read_compose()["services"]["web"]
    env = {name: interpolate(str(value), variables) for name, value in web["environment"].items()}
    port = {bridge.name: bridge_environment(variables, bridge.name)["WLD_LISTEN"].rpartition(":")[2] for bridge in running}
    addresses = {f"{bridge.name}:{port[bridge.name]}": bridge.env["WLD_LISTEN"] for bridge in running}  # in compose -> here
    env["WLD_UPSTREAMS"] = " ".join(addresses[upstream] for upstream in env["WLD_UPSTREAMS"].split())
    env |= {"CADDY_ADMIN": "off", "HOME": str(home), "XDG_CONFIG_HOME": str(home), "XDG_DATA_HOME": str(home), "PATH": os.environ["PATH"]}
    command = [caddy, "run", "--config", str(ROOT / volume_mounts(web)["/etc/caddy/Caddyfile"]), "--adapter", "caddyfile"]
    return Container("web", command, env, home)


@contextlib.asynccontextmanager
async def started(*containers: Container) -> AsyncIterator[None]:
    """The containers started at the same moment, and stopped at the end."""
    await asyncio.gather(*(container.start() for container in containers))
    try:
        yield
    finally:
        await asyncio.gather(*(container.stop() for container in containers))
