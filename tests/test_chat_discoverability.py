"""What a person can find in Telegram: the command menu (underscore names), /start and /help, and links a phone opens."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.bridge_kit import OWNER, bridge_world
from waiting import PATIENCE

CHAT_SCOPE = json.dumps({"chat_id": OWNER, "type": "chat"}, sort_keys=True)


async def test_the_first_session_sets_the_chat_menu_with_names_telegram_can_show(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.exchange(OWNER, OWNER, "hello", "You said: hello")
        await world.fake.wait_until(lambda: CHAT_SCOPE in world.fake.commands, timeout=PATIENCE)
        names = [c["command"] for c in world.fake.commands[CHAT_SCOPE]]
        assert names[:5] == ["cancel", "new", "resume", "status", "help"]
        assert "load_plan" in names and "plan_review" in names, "dashed names appear under their underscore aliases"
        assert not [n for n in names if "-" in n]

        told = await world.exchange(OWNER, OWNER, "/load_plan", "no saved Plans")
        assert told["text"].startswith("There are no saved Plans for this project yet"), "the menu's name works when chosen"


async def test_start_greets_says_what_the_bot_does_and_lists_every_command(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.send(OWNER, OWNER, "/start")
        text = (await world.reply_containing(OWNER, "Hello"))["text"]
        for command in ("/cancel", "/new", "/resume", "/status", "/help", "/load-plan (also /load-plans, /load_plan)", "/plan-review"):
            assert command in text, command
        assert "Plans you review in your browser" in text and "Session:" in text


async def test_help_in_a_chat_lists_the_bridge_commands_as_working_here(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.send(OWNER, OWNER, "/help")
        text = (await world.reply_containing(OWNER, "Commands here:"))["text"]
        for line in ("/cancel — Stop the running turn", "/new — ", "/resume — ", "/status — ", "/model"):
            assert line in text, line
        assert "does not run" not in text


@pytest.mark.parametrize(("web", "warned"), [({"listen": "127.0.0.1:0"}, True), ({"listen": "127.0.0.1:0", "public_url": "https://wield.example.com"}, False)])
async def test_a_remote_channel_with_loopback_links_warns_once_naming_public_url(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, web: dict[str, str], warned: bool
) -> None:
    caplog.set_level(logging.WARNING)
    async with bridge_world(tmp_path=tmp_path, web=web) as world:
        await world.exchange(OWNER, OWNER, "hello", "You said: hello")
    warnings = [r.getMessage() for r in caplog.records if "web.public_url" in r.getMessage()]
    assert len(warnings) == (1 if warned else 0), warnings
    if warned:
        assert "http://127.0.0.1:0" in warnings[0] and "telegram" in warnings[0]
