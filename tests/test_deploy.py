"""The deployment: compose.yaml's PostgreSQL, two bridge instances and one web address, and the Dockerfile they run.

No test here has Docker: the bridge containers' command (the Dockerfile's CMD), environment (its ENV and compose's)
and wld.toml (deploy/wld.toml) run as two real `wld` processes on a fresh PostgreSQL database, with the database
host, the ports and the state volume mapped to this machine and the platform fakes standing in for Telegram and
Slack. `docker compose config` checks compose.yaml where the compose plugin is installed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from sqlalchemy.engine import make_url

from runwield_bridge.app import App
from runwield_bridge.channels.telegram.channel import SECRET_HEADER
from runwield_bridge.config import Settings
from runwield_bridge.core.store.migrate import HEAD
from runwield_bridge.web.server import HEALTH_PATH
from tests.database_kit import postgres_database
from tests.deploy_kit import ROOT, config_references, interpolate, read_compose, read_dockerfile, read_env_file, variables_in, volume_mounts
from tests.fakes.base import http_post
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.wld_process import Finished, free_port
from waiting import PATIENCE, until

BRIDGES = ["bridge-1", "bridge-2"]
WEBHOOK_SECRET = "deploy-test-webhook-secret"
MIGRATED = "Running upgrade"  # what Alembic logs (at INFO, deploy/wld.toml's log_level) for each migration it runs


def bridge_environment(variables: dict[str, str], service: str = "bridge-1") -> dict[str, str]:
    """A bridge container's environment: the image's ENV, then compose's ``environment`` with ``variables`` (.env)."""
    compose_env = read_compose()["services"][service]["environment"]
    return {**read_dockerfile().env, **{name: interpolate(str(value), variables) for name, value in compose_env.items()}}


def test_compose_runs_postgres_two_identical_bridges_and_one_web_address() -> None:
    compose, image = read_compose(), read_dockerfile()
    services = compose["services"]
    assert set(services) == {"db", *BRIDGES, "web"}
    db = services["db"]
    assert db["image"].startswith("postgres:") and "pg_isready" in db["healthcheck"]["test"]
    assert volume_mounts(db)["/var/lib/postgresql/data"] in compose["volumes"], "the database lives in a named volume"

    first, second = (services[name] for name in BRIDGES)
    assert first == second, "both instances run the same image with the same configuration"
    assert "command" not in first and "entrypoint" not in first, "they run the image's CMD, which the next test runs"
    assert image.cmd == ["wld", "bridge"]
    assert first["depends_on"]["db"]["condition"] == "service_healthy"
    mounts = volume_mounts(first)
    assert mounts[image.env["WLD_CONFIG"]] == "./deploy/wld.toml"
    assert mounts[image.env["WLD_HOME"]] in compose["volumes"], "one named state volume, shared by the instances"
    assert config_references() <= set(first["environment"]) | set(image.env), "every ${NAME} in wld.toml is set in the container"

    required = {name for name, default in variables_in((ROOT / "compose.yaml").read_text(encoding="utf-8")).items() if default is None}
    example = read_env_file()
    assert required <= set(example), ".env.example names every variable compose.yaml requires"
    assert all("replace-me" in value or "change-me" in value or "example" in value for value in example.values()), "no real secret"

    web = services["web"]
    assert web["image"].startswith("caddy:") and volume_mounts(web)["/etc/caddy/Caddyfile"] == "./deploy/Caddyfile"
    port = first["environment"]["WLD_LISTEN"].rpartition(":")[2]
    assert web["environment"]["WLD_UPSTREAMS"].split() == [f"{name}:{port}" for name in BRIDGES], "the proxy reaches every instance"
    assert "{$WLD_UPSTREAMS}" in (ROOT / "deploy/Caddyfile").read_text(encoding="utf-8")


def test_docker_compose_accepts_compose_yaml() -> None:
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("no `docker compose` here (CI has no Docker): the previous test checks compose.yaml's structure")
    checked = subprocess.run([docker, "compose", "--env-file", ".env.example", "config", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


class Instance:
    """One bridge container, run here: the image's CMD with the container's environment."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.env = env
        self.url = f"http://{env['WLD_LISTEN']}"
        self.proc: asyncio.subprocess.Process | None = None
        self.finished: Finished | None = None

    async def start(self) -> None:
        image = read_dockerfile()
        self.proc = await asyncio.create_subprocess_exec(
            *image.cmd, cwd=self.env["WLD_HOME"], env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def stop(self) -> Finished:
        """``docker stop``: SIGTERM, then the exit status and what it printed (once; later calls return the same)."""
        assert self.proc is not None
        if self.finished is None:
            if self.proc.returncode is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                out, err = await asyncio.wait_for(self.proc.communicate(), PATIENCE)
            except TimeoutError:
                self.proc.kill()
                out, err = await self.proc.communicate()
            assert self.proc.returncode is not None
            self.finished = Finished(self.proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))
        return self.finished

    async def healthcheck(self) -> int:
        """The image's HEALTHCHECK command, run with this container's environment: its exit status."""
        command = [sys.executable if part == "python" else part for part in read_dockerfile().healthcheck]
        check = await asyncio.create_subprocess_exec(*command, env=self.env, stderr=asyncio.subprocess.DEVNULL)
        return await asyncio.wait_for(check.wait(), PATIENCE)


@contextlib.asynccontextmanager
async def instances(database_url: str, state: Path, variables: dict[str, str]) -> AsyncIterator[list[Instance]]:
    """bridge-1 and bridge-2 started at the same moment on one database and one state directory."""
    venv_bin = str(Path(sys.executable).parent)  # where `wld` is installed, as on the image's PATH
    running = []
    for name in BRIDGES:
        env = bridge_environment(variables, name)
        assert make_url(env["WLD_DATABASE_URL"]).host == "db", "the containers reach the compose service `db`"
        env |= {"WLD_DATABASE_URL": database_url, "WLD_LISTEN": f"127.0.0.1:{free_port()}", "WLD_HOME": str(state)}
        env |= {"WLD_CONFIG": str(ROOT / "deploy/wld.toml"), "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}"}
        running.append(Instance(name, env))
    await asyncio.gather(*(instance.start() for instance in running))
    try:
        yield running
    finally:
        for instance in running:
            await instance.stop()


async def review_link(database_url: str, state: Path, project: Path) -> tuple[str, str]:
    """A Plan's review opened by another process on the instances' database and state directory: title and token."""
    settings = Settings.model_validate({"database_url": database_url, "home": str(state), "web": {"listen": "127.0.0.1:0"}})
    app = await App.start(settings)
    try:
        plan = await app.plans.write(cwd=project, title="Check the deployment", body="1. Open this link on each instance")
        link = await app.reviews.start(plan.id)
        return plan.title, link.url.rsplit("/", 1)[1]
    finally:
        await app.close()


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_the_bridge_containers_run_two_instances_on_one_database_behind_one_address(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "project"  # state: the compose volume, mounted in both containers
    state.mkdir()
    project.mkdir()
    async with TelegramFake() as telegram, SlackFake() as slack, postgres_database() as database_url:
        variables = read_env_file() | {
            "WLD_PUBLIC_URL": "https://wield.example.test",
            "TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_BASE_URL": telegram.base_url, "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": slack.signing_secret, "SLACK_API_BASE_URL": slack.api_url,
        }  # fmt: skip
        async with instances(database_url, state, variables) as running:
            await until(
                lambda: len(telegram.calls_to("setWebhook")) == 2 or not all(i.running for i in running),
                "both instances to register the Telegram webhook",
            )
            assert all(i.running for i in running), [(await i.stop()).stderr[-2000:] for i in running]
            assert {c["url"] for c in telegram.calls_to("setWebhook")} == {"https://wield.example.test/telegram/webhook"}

            for instance in running:
                assert await get(instance.url + HEALTH_PATH) == (200, "ok\n")
                assert await instance.healthcheck() == 0, f"{instance.name}: the image's HEALTHCHECK passes"
                verified = await slack.post_url_verification(f"{instance.url}/slack/events", challenge=instance.name)
                assert (verified.status, verified.json()) == (200, {"challenge": instance.name}), "Slack's events reach either instance"
            stopped_port = Instance("nothing", {**running[0].env, "WLD_LISTEN": f"127.0.0.1:{free_port()}"})
            assert await stopped_port.healthcheck() != 0, "the HEALTHCHECK fails where nothing answers"

            for stranger, instance in zip((7001, 7002), running):
                update = {"update_id": stranger, "message": telegram.build_message(stranger, stranger, "hello")}
                headers = {"Content-Type": "application/json", SECRET_HEADER: WEBHOOK_SECRET}
                result = await http_post(f"{instance.url}/telegram/webhook", data=json.dumps(update), headers=headers)
                assert result.status == 200, f"{instance.name} takes Telegram's webhook with the shared secret"
            await until(lambda: all(telegram.bot_messages(s) for s in (7001, 7002)), "each stranger's allowlist notice")
            assert all(str(s) in telegram.bot_messages(s)[0]["text"] for s in (7001, 7002))

            title, token = await review_link(database_url, state, project)
            for instance in running:
                status, page = await get(f"{instance.url}/review/{token}")
                assert status == 200 and title in page, f"{instance.name} shows a review opened elsewhere"

            finished = [await instance.stop() for instance in running]
        versions = await (await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(False))).fetch(
            "SELECT version_num FROM alembic_version"
        )
    assert [row["version_num"] for row in versions] == [HEAD]
    assert [f.returncode for f in finished] == [0, 0], [f.stderr[-2000:] for f in finished]
    migrated = sorted(f.stderr.count(MIGRATED) for f in finished)
    assert migrated == [0, int(HEAD)], f"one instance ran every migration, the other none: {migrated}"
