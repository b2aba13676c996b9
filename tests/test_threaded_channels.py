"""What Discord and Slack share, proven on both: permissions asked in a thread, and a bridge restart continuing its session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bridge_kit import asking_agent
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.platform_kit import discord_world, slack_world

PLATFORMS = {"discord": (DiscordFake, discord_world), "slack": (SlackFake, slack_world)}


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_a_permission_is_denied_on_timeout_and_approved_only_by_a_click(platform: str, tmp_path: Path) -> None:
    _, world_on = PLATFORMS[platform]
    async with world_on(section={"agent": "asker", "permission_timeout": 0.5}, agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("permission please")
        message, buttons = await world.buttons(thread, "Permission needed: Write notes.txt")
        assert [world.label(b) for b in buttons] == ["Allow once", "Reject"]
        await world.reply_containing(thread, "permission: cancelled", final=True)
        assert "not approved" in world.current(message)

        await world.say(thread, "permission again")
        message, buttons = await world.buttons(thread, "Permission needed")
        await world.say(thread, "1")
        await world.reply_containing(thread, "answer the question above with its buttons")
        await world.click(message, buttons[0])
        await world.reply_containing(thread, "permission: selected allow")


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_a_bridge_restart_continues_the_same_session(platform: str, tmp_path: Path) -> None:
    fake_class, world_on = PLATFORMS[platform]
    async with fake_class() as fake:
        async with world_on(fake=fake) as world:
            thread = await world.mention("remember this")
            await world.reply_containing(thread, "You said: remember this", final=True)
            binding = await world.app.store.bridge.get_binding(world.key(thread))
        async with world_on(fake=fake) as world:
            await world.say(thread, "and this")
            await world.reply_containing(thread, "You said: and this")
            transcript = await world.app.store.sessions.transcript(binding.acp_session_id)
            assert [e.text for e in transcript if e.kind == "user"] == ["remember this", "and this"]
            assert len(await world.app.store.sessions.list_sessions()) == 1, "no new session was started"
