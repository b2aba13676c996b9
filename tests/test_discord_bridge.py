"""The Bridge end to end on Discord: real discord.py (REST and gateway) against the local Discord fake."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runwield_bridge.bridge.inbox import ChannelInbox
from runwield_bridge.channels.discord import channel as discord_channel
from runwield_bridge.channels.discord.components import MODEL_SELECT
from runwield_bridge.channels.types import ButtonPress
from tests.bridge_kit import asking_agent
from tests.fakes.discord_api import FLAG_EPHEMERAL, DiscordFake
from tests.platform_kit import DEFERRED, discord_world, told


async def test_a_mention_opens_a_thread_where_the_answer_streams_and_no_mention_is_needed_after(tmp_path: Path) -> None:
    async with discord_world() as world:
        fake = world.fake
        thread = await world.mention("hello bridge")
        await world.reply_containing(thread, "You said: hello bridge", final=True)
        assert fake.channels[thread]["parent_id"] == str(fake.channel_id) and fake.channels[thread]["name"] == "hello bridge"
        first = fake.calls_to("send_message")[0]
        assert first.path_params["channel_id"] == str(thread) and first["content"].endswith(" …"), "a placeholder, then edits"
        assert fake.calls_to("edit_message") and fake.calls_to("send_typing")
        assert first["allowed_mentions"]["parse"] == [], "the agent cannot ping anyone"
        await world.say(fake.channel_id, "chatter without a mention")
        await world.say(thread, "and more")
        await world.reply_containing(thread, "You said: and more")
        assert world.texts(fake.channel_id) == [], "nothing is said in the channel itself"
        binding = await world.app.store.bridge.get_binding(f"discord:{fake.channel_id}:{thread}")
        [session] = await world.app.store.sessions.list_sessions()
        assert binding.acp_session_id == session.id


async def test_a_stranger_never_reaches_the_agent_and_opens_no_thread(tmp_path: Path) -> None:
    async with discord_world() as world:
        fake = world.fake
        stranger = int(fake.add_user("mallory")["id"])
        await world.mention("let me in", user=stranger)
        notice = await world.reply_containing(fake.channel_id, str(stranger))
        assert "not on this bot's allowlist" in notice["content"] and "channels.discord.allowed_users" in notice["content"]
        await world.mention("please?", user=stranger)
        command = await world.slash("status", fake.channel_id, user=stranger)
        assert command["data"]["flags"] == 64 and "allowlist" in command["data"]["content"], "told privately"
        await asyncio.sleep(0.2)
        assert len(world.texts(fake.channel_id)) == 1, "at most one notice per hour"
        assert not fake.calls_to("start_thread_with_message")
        assert await world.app.store.sessions.list_sessions() == []


async def test_roles_and_channels_let_people_in_and_bots_and_dms_need_switching_on(tmp_path: Path) -> None:
    async with DiscordFake() as fake:
        role = int(fake.add_role(fake.guild_id, "agents")["id"])
        member = int(fake.add_user("bob")["id"])
        fake.add_member(fake.guild_id, member, roles=[role])
        open_channel = int(fake.add_text_channel(fake.guild_id, "open")["id"])
        robot = int(fake.add_user("other-bot", bot=True)["id"])
        settings = {"allowed_users": [fake.user_id, robot], "allowed_roles": [role], "allowed_channels": [open_channel]}
        async with discord_world(fake=fake, section=settings) as world:
            await world.reply_containing(await world.mention("by role", user=member), "You said: by role")
            stranger = int(fake.add_user("carol")["id"])
            await world.reply_containing(await world.mention("by channel", user=stranger, channel=open_channel), "You said: by channel")
            await world.mention("beep", user=robot)
            dm = int(fake.dm_channel(fake.user_id)["id"])
            await world.say(dm, "a direct message")
            await asyncio.sleep(0.3)
            assert world.texts(dm) == [] and len(await world.app.store.sessions.list_sessions()) == 2
        async with discord_world(fake=fake, section={**settings, "allow_bots": True, "allow_dms": True}) as world:
            await world.reply_containing(await world.mention("beep again", user=robot), "You said: beep again")
            await world.say(dm, "a direct message")
            await world.reply_containing(dm, "You said: a direct message")


async def test_a_question_becomes_buttons_and_only_an_allowed_click_answers(tmp_path: Path) -> None:
    async with discord_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("please choose")
        message, buttons = await world.buttons(thread, "Pick a colour")
        assert [b["label"] for b in buttons] == ["red", "green", "blue", "Cancel"]
        stranger = int(world.fake.add_user("mallory")["id"])
        assert "allowlist" in await world.click(message, buttons[0], user=stranger)
        assert await world.click(message, buttons[1]) == "Answer recorded."
        await world.reply_containing(thread, 'form: accept {"colour": "green"}')
        settled = world.fake.messages[int(message["id"])]
        assert "→ green" in settled["content"] and settled["components"] == []


async def test_a_press_whose_notice_is_slow_is_acknowledged_at_once_and_its_notice_follows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    released = asyncio.Event()
    receive_press = ChannelInbox.receive_press

    async def slow(inbox: ChannelInbox, press: ButtonPress) -> str:  # as a press handed to a slow owner instance
        await released.wait()
        return await receive_press(inbox, press)

    monkeypatch.setattr(ChannelInbox, "receive_press", slow)
    monkeypatch.setattr(discord_channel, "ACK_SECONDS", 0.05)
    async with discord_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("please choose")
        message, buttons = await world.buttons(thread, "Pick a colour")
        click = await world.fake.inject_component_click(buttons[1]["custom_id"], message_id=int(message["id"]))
        deferred = await world.answer(click)
        assert deferred["type"] == DEFERRED and deferred["data"]["flags"] == FLAG_EPHEMERAL, "acknowledged privately, within Discord's 3 s"
        released.set()
        assert await told(world.fake, click) == "Answer recorded."
        assert world.fake.calls_to("create_followup")[-1]["flags"] == FLAG_EPHEMERAL
        await world.reply_containing(thread, 'form: accept {"colour": "green"}')


async def test_a_click_counts_only_in_the_thread_that_owns_the_question_and_only_from_someone_allowed_there(tmp_path: Path) -> None:
    async with DiscordFake() as fake:
        open_channel = int(fake.add_text_channel(fake.guild_id, "open")["id"])
        section = {"agent": "asker", "allowed_channels": [open_channel]}
        async with discord_world(fake=fake, section=section, agents={"asker": asking_agent(tmp_path)}) as world:
            thread = await world.mention("permission please")
            question, (allow, reject) = await world.buttons(thread, "Permission needed")
            carol = int(fake.add_user("carol")["id"])
            elsewhere = await world.mention("hello", user=carol, channel=open_channel)
            reply = await world.reply_containing(elsewhere, "echo: hello", final=True)

            neutral = "This question is no longer open."
            assert await world.click(reply, allow, user=carol) == neutral, "the question's button data sent from another thread"
            assert await world.click(reply, allow) == neutral, "even by someone allowed in the question's thread"
            assert "allowlist" in await world.click(question, allow, user=carol), "on the question itself, by someone not allowed there"
            assert world.current(question) == question["content"] and fake.messages[int(question["id"])]["components"], "still open"
            assert not any("permission:" in text for text in world.texts(thread))

            assert await world.click(question, reject) == "Answer recorded."
            await world.reply_containing(thread, "permission: selected reject")
            assert await world.click(question, allow) == neutral, "a click after the question settled"
            assert not any("selected allow" in text for text in world.texts(thread))


async def test_slash_cancel_settles_a_running_turn(tmp_path: Path) -> None:
    async with discord_world() as world:
        thread = await world.mention("something slow please")
        await world.reply_containing(thread, "You said:")
        echo = await world.slash("cancel", thread)
        assert echo["data"]["content"] == "/cancel"
        cancelled = await world.reply_containing(thread, "⏹ Cancelled.")
        assert " 15" not in cancelled["content"], "the turn stopped before it finished streaming"
        await world.slash("cancel", thread)
        await world.reply_containing(thread, "Nothing is running.")
        await world.slash("status", thread)
        await world.reply_containing(thread, "State: idle")


async def test_models_is_a_select_menu_of_the_agents_models_or_else_its_own_model_command(tmp_path: Path) -> None:
    async with discord_world(agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("hello")
        await world.reply_containing(thread, "You said: hello", final=True)
        await world.slash("models", thread)
        menu = await world.fake.wait_for_call("create_followup")
        assert menu["flags"] == 64, "only the person who asked sees the menu"
        [select] = menu["components"][0]["components"]
        values = [option["value"] for option in select["options"]]
        assert "scripted-fast" in values and select["custom_id"] == MODEL_SELECT
        [message] = [m for m in world.fake.bot_messages(thread) if m.get("components")]
        choice = await world.fake.inject_component_click(MODEL_SELECT, message_id=int(message["id"]), component_type=3, values=["scripted-fast"])
        await world.fake.wait_until(lambda: "Model: Scripted (fast)" in world.fake.messages[int(message["id"])]["content"])
        assert choice.responses[0]["type"] == 6
        await world.slash("status", thread)
        await world.reply_containing(thread, "Model: Scripted (fast)")

        await world.slash("new", thread, agent="asker")
        await world.reply_containing(thread, "on asker")
        await world.slash("models", thread)
        await world.reply_containing(thread, "echo: /model")


async def test_images_reach_agents_that_take_them_and_long_replies_are_split_within_2000(tmp_path: Path) -> None:
    async with discord_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        png = world.fake.add_attachment("pixel.png", b"\x89PNG" + bytes(60), content_type="image/png")
        thread = await world.mention("what is this", attachments=[png])
        await world.reply_containing(thread, "got 1 image(s), 64 bytes, image/png")
    async with discord_world() as world:
        world.fake.inject_rate_limit("edit_message", retry_after=0.05)
        words = " ".join(f"word{i}" for i in range(500))
        thread = await world.mention(words)
        await world.fake.wait_until(lambda: "".join(world.texts(thread)).endswith("word499"))
        assert len(world.texts(thread)) == 2 and all(len(text) <= 2000 for text in world.texts(thread))
        assert 429 in [c.status for c in world.fake.calls_to("edit_message")], "a 429 was waited out, nothing lost"


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"token": "t", "allowed_chats": [1]}, "channels.discord.allowed_chats: unknown key"),
        ({"token": "t", "allowed_roles": "admins"}, "channels.discord.allowed_roles:"),
        ({"allowed_users": [1]}, "channels.discord.token: Field required"),
    ],
)
def test_configuration_errors_name_the_key(section: dict, error: str) -> None:
    from runwield_bridge.channels.discord import build
    from runwield_bridge.config import ConfigError

    with pytest.raises(ConfigError, match=error):
        build(section, None)  # type: ignore[arg-type]


async def test_slash_queue_shows_and_sets_the_queue_mode(tmp_path: Path) -> None:
    async with discord_world() as world:
        await world.fake.wait_until(lambda: any(c["name"] == "queue" for c in world.fake.global_commands))
        [queue] = [c for c in world.fake.global_commands if c["name"] == "queue"]
        [mode] = queue["options"]
        assert [c["value"] for c in mode["choices"]] == ["steer", "collect", "followup", "interrupt", "clear"] and not mode["required"]
        thread = await world.mention("hello")
        await world.reply_containing(thread, "You said: hello")
        echo = await world.slash("queue", thread, mode="collect")
        assert echo["data"]["content"] == "/queue collect"
        await world.reply_containing(thread, "Queue mode: collect")
        await world.slash("queue", thread)
        shown = await world.reply_containing(thread, "Nothing is waiting.")
        assert shown["content"].startswith("Queue mode: collect:")
        await world.slash("status", thread)
        await world.reply_containing(thread, "Queue: collect")
