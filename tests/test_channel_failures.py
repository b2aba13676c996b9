"""When a channel's listener fails: the platform's final refusal stops that channel with one line saying what to fix,
while the other channels keep answering; a failure that may pass (network, 5xx) is retried with backoff, one line each."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from runwield_bridge.app import App
from runwield_bridge.bridge.runner import BridgeService
from runwield_bridge.supervision import Supervisor
from tests.bridge_kit import OWNER, telegram_section
from tests.fakes.base import json_response
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import DiscordWorld, discord_section, discord_urls_restored, events_url_ready, running_bridge, settled, slack_section, stopped
from tests.wld_process import free_port
from waiting import until


@dataclass
class Fakes:
    telegram: TelegramFake
    discord: DiscordFake
    slack: SlackFake

    def __getitem__(self, platform: str) -> Any:
        return getattr(self, platform)


@dataclass(frozen=True)
class Failure:
    """How one platform fails the bridge: ``before`` arranges it on the fakes, ``during`` (once the bridge runs) too."""

    platform: str
    call: str
    """The platform call that fails."""
    before: Callable[[Fakes], object] = lambda fakes: None
    during: Callable[[Fakes], Awaitable[object]] | None = None
    section: dict[str, Any] = field(default_factory=dict)


def missing_scope() -> Any:
    return json_response({"ok": False, "error": "missing_scope", "needed": "users:read", "provided": "chat:write"})


def wrong_token_type() -> Any:
    return json_response({"ok": False, "error": "not_allowed_token_type"})


async def intents_refused(fakes: Fakes) -> None:
    await fakes.discord.wait_for_session()
    await fakes.discord.disconnect_clients(4014)  # Discord's close code for privileged intents not turned on


REFUSALS: dict[str, tuple[Failure, str]] = {  # case: (the failure, the one line the bridge logs)
    "telegram getMe 403": (
        Failure("telegram", "getMe", lambda f: f.telegram.inject_error("getMe", 403, "Forbidden: bot was deactivated")),
        "channels.telegram.token: Telegram refused it (Forbidden: bot was deactivated); fix this setting and start again",
    ),
    "telegram getUpdates 403": (
        Failure("telegram", "getUpdates", lambda f: f.telegram.inject_error("getUpdates", 403, "Forbidden: bot was deactivated")),
        "channels.telegram.token: Telegram refused it (Forbidden: bot was deactivated); fix this setting and start again",
    ),
    "telegram getUpdates 401": (  # the token revoked while the bridge runs
        Failure("telegram", "getUpdates", lambda f: f.telegram.inject_error("getUpdates", 401, "Unauthorized")),
        "channels.telegram.token: Telegram rejected this credential; put the right value there (it is not shown here)",
    ),
    "telegram setWebhook 400": (
        Failure(
            "telegram", "setWebhook", lambda f: f.telegram.inject_error("setWebhook", 400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"),
            section={"mode": "webhook"},
        ),
        "web.public_url: Telegram refused it (Bad webhook: an https url must be provided for webhook); fix this setting and start again",
    ),
    "discord get_me 403": (
        Failure("discord", "get_me", lambda f: f.discord.inject_error("get_me", 403, "Missing Access")),
        "channels.discord.token: Discord refused it (HTTP 403: Missing Access); fix this setting and start again",
    ),
    "discord privileged intents": (
        Failure("discord", "get_me", during=intents_refused),
        "the bot's Message Content intent (Discord Developer Portal, Bot page): Discord refused it "
        "(it is not turned on for this bot, and the bridge reads messages); fix this setting and start again",
    ),
    "slack missing_scope": (
        Failure("slack", "auth.test", lambda f: f.slack.inject_response("auth.test", missing_scope)),
        "channels.slack.bot_token: Slack refused it (missing_scope; the app needs the scope users:read); fix this setting and start again",
    ),
    "slack not_allowed_token_type": (
        Failure("slack", "apps.connections.open", lambda f: f.slack.inject_response("apps.connections.open", wrong_token_type),
                section={"socket_mode": True, "app_token": "xapp-1-A0-0-abc"}),
        "channels.slack.app_token: Slack refused it (not_allowed_token_type); fix this setting and start again",
    ),
}


@contextlib.asynccontextmanager
async def bridge_failing(failure: Failure) -> AsyncIterator[tuple[BridgeService, App, Fakes, Supervisor]]:
    """The three channels on their fakes, ``failure`` arranged; yields the bridge and the failing channel's supervisor."""
    async with TelegramFake() as telegram, DiscordFake(install=False) as discord, SlackFake() as slack:
        fakes = Fakes(telegram, discord, slack)
        sections = {"telegram": telegram_section(telegram), "discord": discord_section(discord), "slack": slack_section(slack)}
        sections[failure.platform] |= failure.section
        failure.before(fakes)
        with discord_urls_restored():
            async with running_bridge(sections) as (service, app):
                if failure.during is not None:
                    await failure.during(fakes)
                [supervisor] = [s for s in service.supervisors if s.name == f"channel {failure.platform}"]
                yield service, app, fakes, supervisor


async def answers(platform: str, fakes: Fakes, service: BridgeService, app: App) -> None:
    """The channel answers ``/status`` from its allowed person."""
    if platform == "telegram":
        fakes.telegram.push_message(OWNER, OWNER, "/status")
        await settled(fakes.telegram, lambda: [m for m in fakes.telegram.bot_messages(OWNER) if "Agent:" in (m.get("text") or "")], 30)
    elif platform == "slack":
        url = await events_url_ready(fakes.slack, service)
        mention = fakes.slack.app_mention_event("/status")
        assert (await fakes.slack.post_event(url, mention)).status == 200
        await settled(fakes.slack, lambda: [m for m in fakes.slack.bot_messages() if m.get("thread_ts") == mention["ts"] and "Agent:" in m["text"]], 30)
    else:
        await fakes.discord.wait_for_session()
        world = DiscordWorld(fakes.discord, app)
        await world.reply_containing(await world.mention("/status"), "Agent:", 30)


def attempts(fakes: Fakes, failure: Failure) -> list[Any]:
    """The calls that failed and those that tried again (python-telegram-bot's last getUpdates on stopping, with
    timeout 0, only confirms what was read)."""
    return [c for c in fakes[failure.platform].calls_to(failure.call) if c.params.get("timeout") != 0]


def project_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.name.startswith("runwield_bridge")]


@pytest.mark.parametrize("case", sorted(REFUSALS))
async def test_a_refusal_for_good_stops_only_its_channel_with_one_line_naming_what_to_fix(case: str, caplog: pytest.LogCaptureFixture) -> None:
    failure, said = REFUSALS[case]
    caplog.set_level(logging.INFO)
    async with bridge_failing(failure) as (service, app, fakes, supervisor):
        await stopped(supervisor)
        other = "slack" if failure.platform == "telegram" else "telegram"
        await answers(other, fakes, service, app)
        assert [s.name for s in service.supervisors if s.running] == [s.name for s in service.supervisors if s is not supervisor]
    assert len(attempts(fakes, failure)) == 1, "a refusal for good is not tried again"
    errors = project_lines(caplog, logging.ERROR)
    assert errors == [f"channel {failure.platform} stopped: {said}"], errors
    assert not [r for r in caplog.records if r.exc_info], "no traceback for a configuration error"


PASSING: dict[str, tuple[Failure, str]] = {  # case: (two failures that pass, what the bridge logs for each)
    "telegram getMe 502": (
        Failure("telegram", "getMe", lambda f: f.telegram.inject_error("getMe", 502, "Bad Gateway", count=2)),
        "channel telegram: Telegram could not be reached or failed (NetworkError: Bad Gateway); retrying in ",
    ),
    "telegram getUpdates 502": (
        Failure("telegram", "getUpdates", lambda f: f.telegram.inject_error("getUpdates", 502, "Bad Gateway", count=2)),
        "channel telegram: Telegram could not be reached or failed (NetworkError: Bad Gateway); polling again",
    ),
    "discord get_me 503": (
        Failure("discord", "get_me", lambda f: f.discord.inject_error("get_me", 503, "Service Unavailable", count=2)),
        "channel discord: Discord could not be reached or failed (DiscordServerError: 503 Service Unavailable (error code: 0): "
        "Service Unavailable); retrying in ",
    ),
    "slack auth.test 503": (
        Failure("slack", "auth.test", lambda f: f.slack.inject_error("auth.test", 503, "service_unavailable", count=2)),
        "channel slack: Slack could not be reached or failed (HTTP 503, service_unavailable); retrying in ",
    ),
}


@pytest.mark.parametrize("case", sorted(PASSING))
async def test_a_failure_that_passes_is_retried_with_one_warning_each_time_and_the_channel_then_answers(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    failure, said = PASSING[case]
    caplog.set_level(logging.INFO)
    async with bridge_failing(failure) as (service, app, fakes, supervisor):
        await answers(failure.platform, fakes, service, app)
        assert supervisor.running and supervisor.config_error is None
    assert len(attempts(fakes, failure)) >= 3, "tried again after each failure"
    warnings = [line for line in project_lines(caplog, logging.WARNING) if line.startswith(f"channel {failure.platform}:")]
    assert len(warnings) == 2 and all(line.startswith(said) for line in warnings), warnings
    assert project_lines(caplog, logging.ERROR) == []
    assert not [r for r in caplog.records if r.exc_info], "no traceback for a failure that passes"


async def test_an_unreachable_platform_is_retried_with_growing_delays_while_the_other_channels_answer(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    closed = f"http://127.0.0.1:{free_port()}/bot"  # nothing listens there
    async with bridge_failing(Failure("telegram", "getMe", section={"api_base_url": closed})) as (service, app, fakes, supervisor):
        await until(lambda: supervisor.failures >= 3, "three attempts to reach Telegram")
        assert supervisor.running
        await answers("slack", fakes, service, app)
    warnings = [line for line in project_lines(caplog, logging.WARNING) if line.startswith("channel telegram:")]
    assert len(warnings) >= 3 and all("Telegram could not be reached or failed (NetworkError" in line for line in warnings), warnings
    delays = [float(line.rsplit("retrying in ", 1)[1].rstrip("s")) for line in warnings[:3]]
    assert delays == sorted(delays) and delays[0] < delays[2], delays
    assert project_lines(caplog, logging.ERROR) == []
