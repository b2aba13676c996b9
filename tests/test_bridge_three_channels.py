"""One Bridge process, three platforms: Telegram, Discord and Slack at once, each conversation its own session on one agent connection."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.bridge_kit import OWNER, agent_calls, asking_agent, telegram_section
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import discord_section, events_url_ready, running_bridge, settled, slack_section
from waiting import PATIENCE


async def test_telegram_discord_and_slack_run_at_once_each_bound_to_its_own_session_on_one_agent_connection(tmp_path: Path) -> None:
    async with TelegramFake() as telegram, DiscordFake() as discord, SlackFake() as slack:
        channels = {
            "telegram": telegram_section(telegram, agent="asker"),
            "discord": discord_section(discord, agent="asker"),
            "slack": slack_section(slack, agent="asker"),
        }
        async with running_bridge(channels, agents={"asker": asking_agent(tmp_path)}) as (service, app):
            await telegram.wait_until(lambda: bool(telegram.calls_to("getUpdates")))
            await discord.wait_for_session()
            events_url = await events_url_ready(slack, service)

            telegram.push_message(OWNER, OWNER, "from telegram")
            mention = slack.app_mention_event("from slack")
            _, sent, _ = await asyncio.gather(
                slack.post_event(events_url, mention),
                discord.inject_message(f"<@{discord.bot_id}> from discord"),
                telegram.wait_for_call("getUpdates"),
            )
            thread = int(sent["id"])

            await settled(telegram, lambda: [m for m in telegram.bot_messages(OWNER) if "echo: from telegram" in (m.get("text") or "")], 15)
            await settled(discord, lambda: [m for m in discord.bot_messages(thread) if "echo: from discord" in m["content"]], 15)
            await settled(slack, lambda: [m for m in slack.bot_messages() if m.get("thread_ts") == mention["ts"] and "echo: from slack" in m["text"]], 15)

            keys = [f"telegram:{OWNER}", f"discord:{discord.channel_id}:{thread}", f"slack:{slack.channel_id}:{mention['ts']}"]
            bindings = [await app.store.bridge.get_binding(key) for key in keys]
            assert {b.agent for b in bindings} == {"asker"}
            assert len({b.acp_session_id for b in bindings}) == 3, "each conversation has its own session"
            assert len(agent_calls(tmp_path, "initialize")) == 1, "all three on one agent connection"
            prompted = {c["sessionId"]: c["texts"][-1] for c in agent_calls(tmp_path, "session/prompt")}
            assert prompted == {b.acp_session_id: text for b, text in zip(bindings, ["from telegram", "from discord", "from slack"], strict=True)}


async def test_a_question_asked_on_one_platform_cannot_be_answered_from_another(tmp_path: Path) -> None:
    async with TelegramFake() as telegram, DiscordFake() as discord:
        channels = {"telegram": telegram_section(telegram, agent="asker"), "discord": discord_section(discord, agent="asker")}
        async with running_bridge(channels, agents={"asker": asking_agent(tmp_path)}):
            await telegram.wait_until(lambda: bool(telegram.calls_to("getUpdates")), timeout=PATIENCE)
            await discord.wait_for_session(timeout=PATIENCE)
            telegram.push_message(OWNER, OWNER, "permission please")
            question = await settled(telegram, lambda: [m for m in telegram.bot_messages(OWNER) if "Permission needed" in m["text"] and m.get("reply_markup")], 15)
            allow, reject = (b["callback_data"] for b in question["reply_markup"]["inline_keyboard"][0])
            thread = int((await discord.inject_message(f"<@{discord.bot_id}> hello"))["id"])
            reply = await settled(discord, lambda: [m for m in discord.bot_messages(thread) if "echo: hello" in m["content"]], 15)

            click = await discord.inject_component_click(allow, message_id=int(reply["id"]))
            await discord.wait_until(lambda: bool(click.responses))
            assert click.responses[0]["data"]["content"] == "This question is no longer open."
            assert "reply_markup" in telegram.messages[(OWNER, question["message_id"])], "the Telegram question is still open"

            telegram.push_callback_query(OWNER, OWNER, reject, message_id=question["message_id"])
            await settled(telegram, lambda: [m for m in telegram.bot_messages(OWNER) if "permission: selected reject" in m["text"]], 15)
