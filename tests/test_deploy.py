"""The deployment: compose.yaml's PostgreSQL, two bridge instances and one web address, the Dockerfile they run,
and the systemd unit.

No test here has Docker: the bridge containers' command (the Dockerfile's CMD), environment (its ENV and compose's)
and wld.toml (deploy/wld.toml) run as two real `wld` processes on a fresh PostgreSQL database, with the database
host, the ports and the state volume mapped to this machine and the platform fakes standing in for Telegram and
Slack, and Caddy runs deploy/Caddyfile in front of them. `docker compose config` checks compose.yaml where the
compose plugin is installed."""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import json
import shutil
import subprocess
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
from tests.deploy_kit import (
    BRIDGES, ROOT, Bridge, bridges, config_references, proxy, read_compose, read_dockerfile, read_env_file, started, variables_in,
    volume_mounts,
)
from tests.fakes.base import http_post
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.wld_process import free_port
from waiting import PATIENCE, POLL, until

WEBHOOK_SECRET = "deploy-test-webhook-secret"
MIGRATED = "Running upgrade"  # what Alembic logs (at INFO, deploy/wld.toml's log_level) for each migration it runs


def test_compose_runs_postgres_two_identical_bridges_and_one_web_address() -> None:
    compose, image = read_compose(), read_dockerfile()
    services = compose["services"]
    assert set(services) == {"db", *BRIDGES, "web"}
    db = services["db"]
    assert db["image"].startswith("postgres:") and "pg_isready" in db["healthcheck"]["test"]
    assert volume_mounts(db)["/var/lib/postgresql/data"] in compose["volumes"], "the database lives in a named volume"

    first, second = (services[name] for name in BRIDGES)
    assert first == second, "both instances run the same image with the same configuration"
    assert "command" not in first and "entrypoint" not in first, "they run the image's CMD, which the last test runs"
    assert image.cmd == ["wld", "bridge"] and image.workdir == image.env["WLD_HOME"] and image.user != "root"
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


def test_the_systemd_unit_runs_the_image_s_command_as_its_own_user_with_the_same_state_directory() -> None:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd's keys are case-sensitive
    unit.read(ROOT / "deploy/wld-bridge.service", encoding="utf-8")
    service, image = unit["Service"], read_dockerfile()
    program, *arguments = service["ExecStart"].split()
    assert Path(program).name == image.cmd[0] and arguments == image.cmd[1:], "the same command as the container's"
    assert service["Restart"] == "on-failure" and service["EnvironmentFile"]
    assert service["User"] == image.user != "root", "a dedicated user, the image's"
    env = dict(pair.split("=", 1) for pair in service["Environment"].split())
    assert env["WLD_HOME"] == f"/var/lib/{service['StateDirectory']}" == service["WorkingDirectory"] == image.env["WLD_HOME"]
    assert env["WLD_CONFIG"] == image.env["WLD_CONFIG"]


def test_docker_compose_accepts_compose_yaml() -> None:
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("no `docker compose` here (CI has no Docker): test_compose_runs_postgres_... checks compose.yaml's structure")
    checked = subprocess.run([docker, "compose", "--env-file", ".env.example", "config", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


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


async def schema_versions(database_url: str) -> list[str]:
    connection = await asyncpg.connect(make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return [row["version_num"] for row in await connection.fetch("SELECT version_num FROM alembic_version")]
    finally:
        await connection.close()


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def answering(url: str, timeout: float = PATIENCE) -> None:
    """Return once ``url`` answers 200; AssertionError after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        with contextlib.suppress(aiohttp.ClientError):
            if (await get(url))[0] == 200:
                return
        assert asyncio.get_running_loop().time() < deadline, f"{url} did not answer within {timeout}s"
        await asyncio.sleep(POLL)


async def telegram_message(telegram: TelegramFake, url: str, user: int, *, redeliver: bool = False) -> None:
    """A message from ``user`` (a stranger) posted to a Telegram webhook URL, as Telegram posts it; ``redeliver``:
    posted again after a 502, as Telegram does, until it is taken (bounded by PATIENCE)."""
    update = {"update_id": user, "message": telegram.build_message(user, user, "hello")}
    headers = {"Content-Type": "application/json", SECRET_HEADER: WEBHOOK_SECRET}
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while (result := await http_post(url, data=json.dumps(update), headers=headers)).status == 502 and redeliver:
        assert asyncio.get_running_loop().time() < deadline, f"{url} answered 502 for {PATIENCE}s"
        await asyncio.sleep(POLL)
    assert result.status == 200, f"{url}: {result.status} {result.text}"


async def told_their_id(telegram: TelegramFake, *users: int) -> None:
    """Wait until each stranger got the allowlist notice naming their id (a reply from the bridge that took the message)."""

    def told(user: int) -> bool:
        said = telegram.bot_messages(user)
        return bool(said) and str(user) in said[0]["text"]

    await until(lambda: all(told(user) for user in users), f"the allowlist notices to {users}")


async def test_the_bridge_containers_run_two_instances_on_one_database_behind_one_address(tmp_path: Path) -> None:
    state, project, caddy_home = tmp_path / "state", tmp_path / "project", tmp_path / "caddy"  # state: the compose volume
    for directory in (state, project, caddy_home):
        directory.mkdir()
    public_url = f"http://127.0.0.1:{free_port()}"
    async with TelegramFake() as telegram, SlackFake() as slack, postgres_database() as database_url:
        variables = read_env_file() | {
            "WLD_PUBLIC_URL": public_url,
            "TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_BASE_URL": telegram.base_url, "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "SLACK_BOT_TOKEN": slack.token, "SLACK_SIGNING_SECRET": slack.signing_secret, "SLACK_API_BASE_URL": slack.api_url,
        }  # fmt: skip
        running = bridges(database_url, state, variables)
        web = proxy(variables, running, caddy_home)
        async with started(*running, web):
            await until(lambda: len(telegram.calls_to("setWebhook")) == 2 or not all(b.running for b in running), "both webhooks")
            assert all(b.running for b in running), [(await b.stop()).stderr[-2000:] for b in running]
            webhook = f"{public_url}/telegram/webhook"
            assert {call["url"] for call in telegram.calls_to("setWebhook")} == {webhook}, "Telegram is given the one address"

            for bridge in running:
                assert await get(bridge.url + HEALTH_PATH) == (200, "ok\n")
                assert await bridge.healthcheck() == 0, f"{bridge.name}: the image's HEALTHCHECK passes"
                verified = await slack.post_url_verification(f"{bridge.url}/slack/events", challenge=bridge.name)
                assert (verified.status, verified.json()) == (200, {"challenge": bridge.name}), "Slack's events reach either instance"
            nothing_there = Bridge("none", {**running[0].env, "WLD_LISTEN": f"127.0.0.1:{free_port()}"})
            assert await nothing_there.healthcheck() != 0, "the HEALTHCHECK fails where nothing answers"

            title, token = await review_link(database_url, state, project)
            for bridge in running:
                status, page = await get(f"{bridge.url}/review/{token}")
                assert status == 200 and title in page, f"{bridge.name} shows a review opened elsewhere"

            await answering(public_url + HEALTH_PATH)
            for stranger in (7001, 7002):  # Telegram posts to the one address it was given
                await telegram_message(telegram, webhook, stranger)
            await told_their_id(telegram, 7001, 7002)

            first = await running[0].stop()
            for _ in running:  # whichever instance the proxy tries first, the one still running answers
                status, page = await get(f"{public_url}/review/{token}")
                assert status == 200 and title in page, "with bridge-1 stopped, the review link still works through the proxy"
            await telegram_message(telegram, webhook, 7003, redeliver=True)  # Caddy 2.6 may answer 502 before its health check
            await told_their_id(telegram, 7003)
            second = await running[1].stop()
        versions = await schema_versions(database_url)
    assert versions == [HEAD]
    assert [first.returncode, second.returncode] == [0, 0], [first.stderr[-2000:], second.stderr[-2000:]]
    migrated = sorted(f.stderr.count(MIGRATED) for f in (first, second))
    assert migrated == [0, int(HEAD)], f"one instance ran every migration, the other none: {migrated}"
