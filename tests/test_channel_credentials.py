"""A rejected channel credential is a configuration error: that channel stops once, naming the key; the others keep running."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from runwield_bridge.redaction import install
from tests.bridge_kit import OWNER, telegram_section
from tests.fakes.base import json_response
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import discord_section, discord_urls_restored, events_url_ready, running_bridge, settled, slack_section, stopped
from tests.wld_process import free_port, run_wld, write_config

WRONG = {  # case: (channel, key, a value the platform rejects, the call that checks it)
    "telegram": ("telegram", "token", "111111:WRONG-telegram_abcdefghijklmnopq", "getMe"),
    "discord": ("discord", "token", "WRONG-discord-token-0123456789", "get_me"),
    "slack": ("slack", "bot_token", "xoxb-WRONG-slack-token", "auth.test"),
    "slack socket mode": ("slack", "app_token", "xapp-WRONG-slack-app-token", "apps.connections.open"),
    "slack user token": ("slack", "user_token", "xoxp-WRONG-slack-user-token", "auth.test"),
}


@pytest.mark.parametrize("case", sorted(WRONG))
async def test_a_rejected_token_stops_only_its_channel_once_naming_the_key_without_showing_it(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    platform, key, wrong, auth_call = WRONG[case]
    caplog.set_level(logging.INFO)
    async with TelegramFake() as telegram, DiscordFake(install=False) as discord, SlackFake() as slack:
        fakes = {"telegram": telegram, "discord": discord, "slack": slack}
        sections = {"telegram": telegram_section(telegram), "discord": discord_section(discord), "slack": slack_section(slack)}
        sections[platform] |= {key: wrong, "socket_mode": True} if key == "app_token" else {key: wrong}
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
    checks = [c for c in fakes[platform].calls_to(auth_call) if wrong in c.path + c.headers.get("Authorization", "") + str(c.params)]
    assert len(checks) == 1, "a rejected token is not tried again"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("runwield_bridge")]
    assert errors == [f"channel {platform} stopped: channels.{platform}.{key}: {platform.capitalize()} rejected this credential; "
                      "put the right value there (it is not shown here)"], errors
    assert wrong not in caplog.text


def channel_sections(telegram: TelegramFake, discord: DiscordFake, slack: SlackFake) -> dict[str, Any]:
    return {"telegram": telegram_section(telegram), "discord": discord_section(discord), "slack": slack_section(slack)}


def doctor_lines(output: str) -> dict[str, str]:
    """``wld doctor``'s lines by subject: ``{"[channels.slack]": "ok       ..."}``."""
    return {line[9:].split(": ", 1)[0]: line for line in output.splitlines() if line[:8].strip() in ("ok", "problem", "unknown")}


async def test_wld_doctor_says_ok_for_each_channel_whose_token_the_platform_accepts(tmp_path: Path) -> None:
    async with TelegramFake() as telegram, DiscordFake(install=False) as discord, SlackFake() as slack:
        config = {"web": {"listen": f"127.0.0.1:{free_port()}"}, "channels": channel_sections(telegram, discord, slack)}
        done = await run_wld("doctor", "--config", str(write_config(tmp_path / "wld.toml", config)))
    lines = doctor_lines(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    for subject in ("[channels.telegram]", "[channels.discord]", "[channels.slack]"):
        assert lines[subject].startswith("ok ") and "credentials accepted" in lines[subject], done.stdout
    assert lines["[web] listen"].startswith("ok "), done.stdout
    assert "no problems found" in done.stdout


async def test_wld_doctor_names_a_rejected_token_a_missing_extra_a_taken_port_and_an_unreachable_platform(tmp_path: Path) -> None:
    site = tmp_path / "site"  # a Python where slack-bolt is not installed
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['slack_bolt'] = None\n")
    async with TelegramFake() as telegram, DiscordFake(install=False) as discord, SlackFake() as slack:
        sections = channel_sections(telegram, discord, slack)
        sections["discord"]["token"] = WRONG["discord"][2]
        sections["telegram"]["api_base_url"] = f"http://127.0.0.1:{free_port()}/bot"  # nothing listens there
        with socket.create_server(("127.0.0.1", 0)) as taken:
            config = {"web": {"listen": f"127.0.0.1:{taken.getsockname()[1]}"}, "channels": sections}
            done = await run_wld("doctor", "--config", str(write_config(tmp_path / "wld.toml", config)), env={"PYTHONPATH": str(site)})
    lines = doctor_lines(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines["[channels.discord]"].startswith("problem") and "channels.discord.token: Discord rejected this credential" in done.stdout
    assert lines["[channels.slack]"].startswith("problem") and "pip install 'runwield-bridge[slack]'" in lines["[channels.slack]"]
    assert lines["[web] listen"].startswith("problem") and "cannot listen on" in lines["[web] listen"]
    assert lines["[channels.telegram]"].startswith("unknown") and "not checked" in lines["[channels.telegram]"]
    assert "3 problem(s) found" in done.stdout
    assert WRONG["discord"][2] not in done.stdout + done.stderr


async def test_wld_doctor_names_a_refusal_that_is_not_about_the_token_as_a_problem(tmp_path: Path) -> None:
    async with SlackFake() as slack:
        slack.inject_response("auth.test", lambda: json_response({"ok": False, "error": "missing_scope", "needed": "users:read"}))
        config = {"web": {"listen": f"127.0.0.1:{free_port()}"}, "channels": {"slack": slack_section(slack)}}
        done = await run_wld("doctor", "--config", str(write_config(tmp_path / "wld.toml", config)))
    line = doctor_lines(done.stdout)["[channels.slack]"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert line.startswith("problem") and "channels.slack.bot_token: Slack refused it (missing_scope; the app needs the scope users:read)" in line


async def test_wld_bridge_exits_naming_the_key_once_when_its_only_channel_token_is_rejected(tmp_path: Path) -> None:
    _, key, wrong, auth_call = WRONG["telegram"]
    async with TelegramFake() as telegram:
        section = telegram_section(telegram) | {key: wrong}
        config = {"log_level": "INFO", "web": {"listen": "127.0.0.1:0"}, "channels": {"telegram": section}}
        done = await run_wld("bridge", "--config", str(write_config(tmp_path / "wld.toml", config)))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("channels.telegram.token: Telegram rejected this credential") == 1, done.stderr
    assert "every channel stopped on a configuration error" in done.stderr
    assert wrong not in done.stderr + done.stdout
    assert len(telegram.calls_to(auth_call)) == 1
