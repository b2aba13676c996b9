"""A rejected channel credential is a configuration error: that channel stops once, naming the key; the others keep running."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from runwield_bridge.redaction import install
from tests.bridge_kit import OWNER, telegram_section
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import discord_section, discord_urls_restored, events_url_ready, running_bridge, settled, slack_section

WRONG = {
    "telegram": ("token", "111111:WRONG-telegram_abcdefghijklmnopq", "getMe"),
    "discord": ("token", "WRONG-discord-token-0123456789", "get_me"),
    "slack": ("bot_token", "xoxb-WRONG-slack-token", "auth.test"),
}


async def stopped(supervisor: Any, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while supervisor.running:
        assert asyncio.get_running_loop().time() < deadline, f"{supervisor.name} is still retrying"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("platform", sorted(WRONG))
async def test_a_rejected_token_stops_only_its_channel_once_naming_the_key_without_showing_it(
    platform: str, caplog: pytest.LogCaptureFixture
) -> None:
    key, wrong, auth_call = WRONG[platform]
    caplog.set_level(logging.INFO)
    async with TelegramFake() as telegram, DiscordFake(install=False) as discord, SlackFake() as slack:
        fakes = {"telegram": telegram, "discord": discord, "slack": slack}
        sections = {"telegram": telegram_section(telegram), "discord": discord_section(discord), "slack": slack_section(slack)}
        sections[platform][key] = wrong
        install({"channels": sections}, [caplog.handler])  # as `wld` does on its log handler
        with discord_urls_restored():
            async with running_bridge(sections) as (service, _):
                [supervisor] = [s for s in service.supervisors if s.name == f"channel {platform}"]
                await stopped(supervisor)
                if platform == "telegram":  # the others still answer
                    url = await events_url_ready(slack, service)
                    mention = slack.app_mention_event("/status")
                    assert (await slack.post_event(url, mention)).status == 200
                    await settled(slack, lambda: [m for m in slack.bot_messages() if m.get("thread_ts") == mention["ts"] and "Agent:" in m["text"]], 15)
                else:
                    telegram.push_message(OWNER, OWNER, "/status")
                    await settled(telegram, lambda: [m for m in telegram.bot_messages(OWNER) if "Agent:" in (m.get("text") or "")], 15)
                assert [s.name for s in service.supervisors if s.running] == [s.name for s in service.supervisors if s is not supervisor]
    assert len(fakes[platform].calls_to(auth_call)) == 1, "a rejected token is not tried again"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"channel {platform} stopped: channels.{platform}.{key}: {platform.capitalize()} rejected this credential; "
                      "put the right value there (it is not shown here)"], errors
    assert wrong not in caplog.text
