"""Secrets stay secret: tokens, signing secrets, API keys and URL passwords appear in no log, output, database or message."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from acp_session import say, text_since, wld_session
from test_acp_plans import review_link

from runwield_bridge.redaction import HOLD, REDACTED, RedactingFormatter, install, keep_secret, redact
from tests.bridge_kit import OWNER, bridge_world, telegram_section
from tests.fakes.discord_api import DiscordFake
from tests.fakes.openai_api import OpenAIFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import answering_url_check, discord_section, settled, slack_section
from tests.wld_process import WldProcess, free_port, write_config

TELEGRAM_TOKEN = "987654321:SECRET-telegram_abcdefghijklmnopqrs"
DISCORD_TOKEN = "SECRET-discord-token-0123456789"
SLACK_TOKEN = "xoxb-SECRET-slack-bot-token"
SIGNING_SECRET = "SECRET-slack-signing-secret"
API_KEY = "sk-SECRET-api-key-0123456789"
URL_PASSWORD = "SECRET-url-password"
SECRETS = (TELEGRAM_TOKEN, DISCORD_TOKEN, SLACK_TOKEN, SIGNING_SECRET, API_KEY, URL_PASSWORD)
PROVIDER_FAILED = "answered HTTP 401"


def leaks(where: str, text: str) -> list[str]:
    return [f"{secret!r} in {where}" for secret in SECRETS if secret in text]


def stored_bytes(home: Path) -> str:
    """Every byte of the state directory's database files (the WAL included), as text."""
    return "".join(path.read_bytes().decode("latin-1") for path in sorted(home.glob("wld.db*")))


@pytest.mark.parametrize("log_level", ["WARNING", "INFO", "DEBUG"])
async def test_no_secret_reaches_logs_output_database_or_chat_on_any_channel_at_any_log_level(
    tmp_path: Path, wld_home: Path, log_level: str
) -> None:
    async with (
        TelegramFake(TELEGRAM_TOKEN) as telegram,
        DiscordFake(DISCORD_TOKEN, install=False) as discord,
        SlackFake(token=SLACK_TOKEN, signing_secret=SIGNING_SECRET) as slack,
        OpenAIFake(api_key="the-key-the-server-expects") as provider,
    ):
        port = free_port()
        base_url = provider.base_url.replace("://", f"://wld:{URL_PASSWORD}@")
        config: dict[str, Any] = {
            "log_level": log_level,
            "web": {"listen": f"127.0.0.1:{port}"},
            "sessions": {"model": "remote"},
            "models": {"remote": {"provider": "openai", "model": "fake-model", "base_url": base_url, "api_key": API_KEY}},
            "channels": {
                "telegram": telegram_section(telegram),
                "discord": discord_section(discord, edit_interval=0.05),
                "slack": slack_section(slack, edit_interval=0.05),
            },
        }
        bridge = await WldProcess.start("bridge", "--config", str(write_config(tmp_path / "wld.toml", config)))
        try:
            await telegram.wait_for_call("getUpdates", timeout=60)
            await discord.wait_for_session(timeout=60)
            await slack.wait_for_call("auth.test", timeout=60)
            events_url = await answering_url_check(slack, f"http://127.0.0.1:{port}/slack/events")

            telegram.push_message(OWNER, OWNER, "hello from telegram")
            thread = int((await discord.inject_message(f"<@{discord.bot_id}> hello from discord"))["id"])
            mention = slack.app_mention_event("hello from slack")
            assert (await slack.post_event(events_url, mention)).status == 200

            said = [
                await settled(telegram, lambda: [m for m in telegram.bot_messages(OWNER) if PROVIDER_FAILED in (m.get("text") or "")], 60),
                await settled(discord, lambda: [m for m in discord.bot_messages(thread) if PROVIDER_FAILED in m["content"]], 60),
                await settled(slack, lambda: [m for m in slack.bot_messages() if m.get("thread_ts") == mention["ts"] and PROVIDER_FAILED in m["text"]], 60),
            ]
        finally:
            finished = await bridge.stop()

    sent = [m.get("text") or m.get("content") or "" for m in said]
    assert all("wld:[redacted]@127.0.0.1" in text for text in sent), sent  # the server is named, its password is not
    problems = leaks("stderr", finished.stderr) + leaks("stdout", finished.stdout) + leaks("the database", stored_bytes(wld_home))
    for platform, messages in (("telegram", telegram.bot_messages()), ("discord", discord.bot_messages()), ("slack", slack.bot_messages())):
        problems += leaks(f"a {platform} message", repr(messages))
    assert not problems, problems
    database_lines = [line for line in finished.stderr.splitlines() if " sqlalchemy." in line or " aiosqlite" in line]
    assert not [line for line in database_lines if "hello from" in line], "SQL parameters (prompts) are never logged"
    if log_level != "WARNING":
        assert "HTTP" in finished.stderr, "the level's logging ran (the test saw what it would leak)"


def test_redact_hides_configured_secrets_and_secret_shaped_tokens_in_text() -> None:
    install({"channels": {"x": {"signing_secret": "a-configured-secret"}}}, [])
    text = (
        "a-configured-secret; https://api.telegram.org/bot123456:ABCdefGHIjklMNOpqrSTUvwxYZ/getMe; "
        "postgresql://wld:hunter22@db/wld; xoxb-1234-5678-abcdefgh; https://w.example/review/AbCdEfGhIjKlMnOpQrStUv; "
        "https://w.example/artifact/AbCdEfGhIjKlMnOpQrStUv/file/a.png"
    )
    assert redact(text) == (
        f"{REDACTED}; https://api.telegram.org/bot{REDACTED}/getMe; postgresql://wld:{REDACTED}@db/wld; {REDACTED}; "
        f"https://w.example/review/{REDACTED}; https://w.example/artifact/{REDACTED}/file/a.png"
    )


def test_the_log_formatter_redacts_arguments_and_tracebacks() -> None:
    formatter = RedactingFormatter(logging.Formatter("%(message)s"))
    try:
        raise RuntimeError("failed at http://u:pa55word@host/x")
    except RuntimeError as exc:
        record = logging.LogRecord("t", logging.ERROR, __file__, 1, "token %s", ("xapp-1-A0-123456789",), (type(exc), exc, exc.__traceback__))
    line = formatter.format(record)
    assert "pa55word" not in line and "xapp-1-A0-123456789" not in line and "RuntimeError" in line


async def test_a_review_link_token_is_in_no_stored_byte_and_no_debug_log_and_a_replay_says_how_to_get_a_new_one(
    tmp_path: Path, wld_home: Path
) -> None:
    config = 'log_level = "DEBUG"\n\n[web]\nlisten = "127.0.0.1:0"\n'
    async with wld_session(tmp_path, config=config) as (client, sid):
        await say(client, sid, "make a plan to add a README")
        await say(client, sid, "/load-plan")
        await say(client, sid, "1")
        start = len(client.messages)
        await say(client, sid, "Review")
        url = review_link(text_since(client, start, sid))
        token = url.rsplit("/", 1)[1]
        async with aiohttp.ClientSession() as http, http.get(url) as page:
            assert page.status == 200, "the live client got a link that works"
        start = len(client.messages)
        await say(client, sid, "/plan-review")
        assert review_link(text_since(client, start, sid)) == url, "the process that opened the review can show its link again"
        stored, logged = stored_bytes(wld_home), client.stderr
    assert "DEBUG" in logged
    assert token not in stored, "the database keeps no review token"
    assert token not in logged, "no log line shows a review token"

    async with wld_session(tmp_path, config=config) as (client, _):
        start = len(client.messages)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = text_since(client, start, sid)
    assert token not in replayed
    assert "Review revision 1 of “Add a README”" in replayed and "/plan-review" in replayed, replayed


async def test_the_webhook_secret_telegram_channel_makes_up_is_not_logged_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    install({}, [caplog.handler])  # as `wld` does on its log handler
    async with bridge_world("webhook", tmp_path=tmp_path, telegram={"webhook_secret": None}) as world:
        [call] = world.fake.calls_to("setWebhook")
        secret = call.params["secret_token"]
    assert "setWebhook" in caplog.text, "the Bot API call was logged"
    assert secret not in caplog.text


def test_a_code_review_link_is_redacted_like_a_plan_review_link() -> None:
    install({}, [])
    assert redact("open https://w.example/code-review/AbCdEfGhIjKlMnOpQrStUv now") == f"open https://w.example/code-review/{REDACTED} now"


def test_debug_lines_wait_while_a_secret_answer_is_awaited_and_come_out_without_it() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    install({}, [handler])
    logger = logging.getLogger("tests.secret_hold")
    logger.addHandler(handler)
    try:
        HOLD.hold()
        logger.setLevel(logging.DEBUG)
        logger.debug("update %s", {"text": "tok-3f9a-answer"})  # a library logs the update before the bridge reads it
        assert out.getvalue() == "", "no debug line is written while the answer is awaited"
        logger.warning("the operator's log goes on")
        assert out.getvalue() == "the operator's log goes on\n", "lines at INFO and above are not held back"
        keep_secret("tok-3f9a-answer")  # the bridge read it
        HOLD.release()
    finally:
        logger.removeHandler(handler)
    assert out.getvalue() == f"the operator's log goes on\nupdate {{'text': '{REDACTED}'}}\n"
