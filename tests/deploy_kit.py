"""Reading the deployment files as Docker and compose read them: the Dockerfile's instructions, compose.yaml
with its ``${NAME}`` interpolation, and ``.env.example``."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
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
