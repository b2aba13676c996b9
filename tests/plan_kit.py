"""Helpers for Plan tests: a temporary git project, an App on a config, an approved Plan, an event recorder."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.core.events import Event, Notice, ToolProgress
from runwield_bridge.core.records import PlanRecord

GIT_IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_project(root: Path) -> Path:
    """A git repository with one commit."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('hello')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def write_config(tmp_path: Path, commands: list[str], timeout: float = 60, database_url: str | None = None) -> Path:
    """A wld.toml validating with ``commands``; state in ``database_url`` when given, else SQLite under WLD_HOME."""
    path = tmp_path / "wld.toml"
    database = f"database_url = {json.dumps(database_url)}\n\n" if database_url else ""
    validation = f"[validation]\ncommands = {json.dumps(commands)}\ntimeout = {timeout}\n"  # a JSON array is TOML
    path.write_text(f'{database}[web]\nlisten = "127.0.0.1:0"\n\n{validation}')  # review pages on a free port
    return path


async def start_app(config: Path) -> App:
    return await App.start(load_settings(config))


async def approved_plan(app: App, project: Path, session_id: str, title: str = "Add a README") -> PlanRecord:
    """A Plan written by the Session and approved through a review link."""
    plan = await app.plans.write(cwd=project, title=title, body="1. Write README.md", session_id=session_id)
    link = await app.reviews.start(plan.id, session_id)
    await app.reviews.approve(link.url.rsplit("/", 1)[1])
    return await app.plans.get(plan.id)


@dataclass
class Bench:
    """A git project, an App validating with the given commands, a Session and its approved Plan."""

    project: Path
    app: App
    session_id: str
    plan: PlanRecord


async def bench(tmp_path: Path, commands: list[str], timeout: float = 60, database_url: str | None = None) -> Bench:
    project = make_project(tmp_path / "proj")
    app = await start_app(write_config(tmp_path, commands, timeout, database_url))
    session = await app.session_host.create(str(project))
    return Bench(project, app, session.id, await approved_plan(app, project, session.id))


async def no_work(worktree: Path) -> None:
    """The Agent's work when a test needs none."""


class Recorder:
    """Collects events."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def notices(self) -> list[Notice]:
        return [e for e in self.events if isinstance(e, Notice)]

    def finished_tools(self) -> list[tuple[str, str]]:
        return [(e.title, e.status) for e in self.events if isinstance(e, ToolProgress) and not e.started]
