"""The Bridge end to end: real python-telegram-bot against the local Bot API fake, polling and webhook."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from runwield_bridge.config import ConfigError, Settings
from runwield_bridge.app import agent_endpoints
from runwield_bridge.plugin_host import load_plugins
from runwield_bridge.plugins.scripted import SLOW_CHUNKS
from runwield_bridge.bridge.runner import BridgeService
from runwield_bridge.channels.telegram.channel import SECRET_HEADER
from runwield_bridge.bridge.asking.pending import NOT_OPEN
from runwield_bridge.channels.unfinished import EXPIRED
from tests.bridge_kit import OWNER, SECRET, STRANGER, agent_calls, asking_agent, bridge_world
from tests.fakes.base import http_post, raw_post
from tests.fakes.telegram_api import TelegramFake
from waiting import PATIENCE

SLOW_TAIL = "".join(f" {n}" for n in range(1, SLOW_CHUNKS + 1))
"""What the scripted model adds, a piece a second, to a reply to a prompt with the word ``slow``."""

MODES = ["polling", "webhook"]


def with_asker(tmp_path: Path, **telegram: object) -> dict[str, object]:
    """Settings for a Telegram channel whose agent is the SDK test agent."""
    return {"telegram": {"agent": "asker", **telegram}, "agents": {"asker": asking_agent(tmp_path)}}


@pytest.mark.parametrize("mode", MODES)
async def test_an_allowed_user_gets_the_streamed_answer(mode: str, tmp_path: Path) -> None:
    async with bridge_world(mode, tmp_path=tmp_path) as world:
        final = await world.exchange(OWNER, OWNER, "hello slow bridge", "You said: hello slow bridge")  # slow: streamed for seconds
        assert final["text"] == "You said: hello slow bridge" + SLOW_TAIL
        first = world.fake.calls_to("sendMessage")[0]
        assert first["text"].endswith(" …"), "the reply starts as a placeholder that is then edited"
        assert world.fake.calls_to("editMessageText")
        assert first["link_preview_options"] == {"is_disabled": True}
        assert any(c["action"] == "typing" for c in world.fake.calls_to("sendChatAction")), "thinking shows as typing"
        assert not any("Thinking" in text for text in world.texts(OWNER)), "thoughts are never sent as text"


@pytest.mark.parametrize("mode", MODES)
async def test_a_stranger_never_reaches_the_agent_and_is_told_their_id_once(mode: str, tmp_path: Path) -> None:
    async with bridge_world(mode, tmp_path=tmp_path) as world:
        await world.send(STRANGER, STRANGER, "let me in")
        notice = await world.reply_containing(STRANGER, str(STRANGER))
        assert "not on this bot's allowlist" in notice["text"] and "channels.telegram.allowed_users" in notice["text"]
        await world.send(STRANGER, STRANGER, "please?")
        await world.exchange(OWNER, OWNER, "marker", "You said: marker")
        assert len(world.texts(STRANGER)) == 1, "at most one notice per hour"
        sessions = await world.app.store.sessions.list_sessions()
        assert len(sessions) == 1 and sessions[0].title == "marker", "the stranger's messages reached no agent"


async def test_the_webhook_checks_its_secret_and_handles_a_redelivery_once(tmp_path: Path) -> None:
    async with bridge_world("webhook", tmp_path=tmp_path) as world:
        update = {"update_id": 9001, "message": world.fake.build_message(OWNER, OWNER, "only once")}
        assert (await world.post(update, secret="wrong")).status == 403
        assert (await world.post(update, secret=None)).status == 403
        assert await raw_post(world.fake.webhook["url"], header_lines=f"{SECRET_HEADER}: \xff\r\n".encode("latin-1")) == 403
        assert await world.app.store.sessions.list_sessions() == [], "a rejected delivery reaches nothing"
        assert (await world.post(update)).status == 200
        assert (await world.post(update)).status == 200
        await world.reply_containing(OWNER, "You said: only once")
        [session] = await world.app.store.sessions.list_sessions()
        await asyncio.sleep(0.2)
        prompts = [e for e in await world.app.store.sessions.transcript(session.id) if e.kind == "user"]
        assert len(prompts) == 1
        assert len(world.texts(OWNER)) == 1


async def test_a_webhook_body_that_is_not_an_update_gets_400_without_a_traceback_and_changes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with bridge_world("webhook", tmp_path=tmp_path) as world:
        fake, url = world.fake, world.fake.webhook["url"]
        message = fake.build_message(OWNER, OWNER, "should not arrive")
        press = {"id": "1", "from": fake.user(OWNER), "chat_instance": "1", "message": message, "data": "wld:00000000:0"}
        bodies: dict[str, bytes | object] = {
            "empty": b"",
            "not JSON": b"not json",
            "not UTF-8": b'{"update_id": 1, "x": "\xff"}',
            "nested too deep for a JSON parser": b"[" * 100_000 + b"]" * 100_000,
            "a list": [message],
            "null": None,
            "a string": "update",
            "no update_id": {"message": message},
            "update_id a string": {"update_id": "1", "message": message},
            "message a list": {"update_id": 1, "message": [message]},
            "message without chat": {"update_id": 2, "message": {k: v for k, v in message.items() if k != "chat"}},
            "chat id a string": {"update_id": 3, "message": {**message, "chat": {"id": "abc", "type": "private"}}},
            "sender id a string": {"update_id": 4, "message": {**message, "from": {"id": "abc", "is_bot": False, "first_name": "A"}}},
            "text a number": {"update_id": 5, "message": {**message, "text": 5}},
            "topic id a string": {"update_id": 6, "message": {**message, "message_thread_id": "abc", "is_topic_message": True}},
            "press data a number": {"update_id": 7, "callback_query": {**press, "data": 5}},
            "press without sender": {"update_id": 8, "callback_query": {k: v for k, v in press.items() if k != "from"}},
        }
        for name, body in bodies.items():
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            result = await http_post(url, data=data, headers={"Content-Type": "application/json", SECRET_HEADER: SECRET})
            assert result.status == 400, f"{name}: {result.status} {result.text}"
        await world.exchange(OWNER, OWNER, "marker", "You said: marker")
        [session] = await world.app.store.sessions.list_sessions()
        assert session.title == "marker" and world.texts(OWNER) == ["You said: marker"], "nothing else reached an agent or a chat"
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "no traceback in the log"


@pytest.mark.parametrize("mode", MODES)
async def test_a_form_becomes_an_inline_keyboard_and_only_an_allowed_click_answers(mode: str, tmp_path: Path) -> None:
    async with bridge_world(mode, tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        await world.send(OWNER, OWNER, "please choose")
        message_id, buttons = await world.keyboard(OWNER, "Pick a colour")
        assert [b["text"] for b in buttons] == ["red", "green", "blue", "Cancel"]
        [initialize] = agent_calls(tmp_path, "initialize")
        assert initialize["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}
        await world.press(OWNER, STRANGER, buttons[0]["callback_data"], message_id)
        toast = await world.fake.wait_for_call("answerCallbackQuery")
        assert "allowlist" in toast["text"]
        await world.press(OWNER, OWNER, buttons[1]["callback_data"], message_id)
        await world.reply_containing(OWNER, 'form: accept {"colour": "green"}')
        settled = world.fake.messages[(OWNER, message_id)]
        assert "→ green" in settled["text"] and "reply_markup" not in settled


async def test_a_longer_form_is_one_message_whose_fields_take_the_next_messages(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        asked = await world.exchange(OWNER, OWNER, "a survey please", "1/2. Your name")
        assert "2/2. Age" in asked["text"]
        await world.exchange(OWNER, OWNER, "A", "at least 2 characters")
        await world.exchange(OWNER, OWNER, "Ann", "Noted. Next: 2. Age")
        await world.exchange(OWNER, OWNER, "forty", "whole number")
        await world.exchange(OWNER, OWNER, "41", 'form: accept {"age": 41, "name": "Ann"}')
        assert len(agent_calls(tmp_path, "session/prompt")) == 1, "answers went to the form, not to the agent"


async def test_a_permission_request_that_times_out_or_is_cancelled_is_not_approved(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path, permission_timeout=1.0)) as world:
        await world.send(OWNER, OWNER, "permission please")
        message_id, buttons = await world.keyboard(OWNER, "Permission needed: Write notes.txt")
        assert "Kind: edit" in world.fake.messages[(OWNER, message_id)]["text"]
        assert [b["text"] for b in buttons] == ["Allow once", "Reject"]
        await world.reply_containing(OWNER, "permission: cancelled")
        assert "not approved" in world.fake.messages[(OWNER, message_id)]["text"]
        await world.send(OWNER, OWNER, "permission again")
        message_id, _ = await world.keyboard(OWNER, "Permission needed")
        await world.send(OWNER, OWNER, "/cancel")
        await world.fake.wait_until(lambda: "Cancelled; not approved" in world.fake.messages[(OWNER, message_id)]["text"])
        await world.fake.wait_until(lambda: bool(agent_calls(tmp_path, "session/cancel")))  # the agent logs it in its own time
        assert len(agent_calls(tmp_path, "session/cancel")) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_permission_is_approved_only_by_an_allowed_click(mode: str, tmp_path: Path) -> None:
    async with bridge_world(mode, tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        await world.send(OWNER, OWNER, "permission please")
        message_id, buttons = await world.keyboard(OWNER, "Permission needed")
        await world.exchange(OWNER, OWNER, "1", "answer the question above with its buttons")
        await world.press(OWNER, STRANGER, buttons[0]["callback_data"], message_id)
        await world.fake.wait_for_call("answerCallbackQuery")
        assert "reply_markup" in world.fake.messages[(OWNER, message_id)], "a stranger's click answers nothing"
        await world.press(OWNER, OWNER, buttons[0]["callback_data"], message_id)
        await world.reply_containing(OWNER, "permission: selected allow")


@pytest.mark.parametrize("mode", MODES)
async def test_a_press_counts_only_in_the_conversation_that_owns_the_question_and_only_from_someone_allowed_there(mode: str, tmp_path: Path) -> None:
    group = -1005
    async with bridge_world(mode, tmp_path=tmp_path, **with_asker(tmp_path, allowed_chats=[group])) as world:
        world.fake.add_chat(group, "supergroup", title="B", is_forum=True)
        await world.send(OWNER, OWNER, "permission please")
        owner_question, buttons = await world.keyboard(OWNER, "Permission needed")
        allow, reject = (b["callback_data"] for b in buttons)
        await world.send(group, STRANGER, "@bridge_test_bot permission please", message_thread_id=77)
        topic_question, topic_buttons = await world.keyboard(group, "Permission needed")
        await world.send(group, STRANGER, "/status", message_thread_id=78)
        elsewhere = (await world.reply_containing(group, "none yet"))["message_id"]

        neutral = "This question is no longer open."
        assert await world.pressed(group, STRANGER, allow, elsewhere) == neutral, "data of chat A pressed in group B"
        assert await world.pressed(group, OWNER, allow, elsewhere) == neutral, "even by someone allowed in A"
        assert await world.pressed(group, STRANGER, topic_buttons[0]["callback_data"], elsewhere) == neutral, "another topic"
        assert "allowlist" in await world.pressed(OWNER, STRANGER, allow, owner_question), "on A's own message, by someone not allowed in A"
        for chat, message_id in ((OWNER, owner_question), (group, topic_question)):
            assert "reply_markup" in world.fake.messages[(chat, message_id)], "both questions are still open"
        assert not any("permission:" in text for text in world.texts(OWNER) + world.texts(group)), "the agent got no answer"

        assert await world.pressed(OWNER, OWNER, reject, owner_question) == "Answer recorded."
        await world.reply_containing(OWNER, "permission: selected reject")
        assert await world.pressed(OWNER, OWNER, allow, owner_question) == neutral, "a press after the question settled"
        assert await world.pressed(group, STRANGER, topic_buttons[1]["callback_data"], topic_question) == "Answer recorded."
        await world.reply_containing(group, "permission: selected reject")
        assert not any("selected allow" in text for text in world.texts(OWNER) + world.texts(group))


async def test_a_typed_answer_counts_only_in_the_topic_that_owns_the_question(tmp_path: Path) -> None:
    group = -1007
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path, allowed_chats=[group], require_mention=False)) as world:
        world.fake.add_chat(group, "supergroup", title="B", is_forum=True)
        await world.send(group, STRANGER, "a survey please", message_thread_id=77)
        await world.reply_containing(group, "1/2. Your name")
        await world.send(group, STRANGER, "Bob", message_thread_id=78)
        await world.reply_containing(group, "echo: Bob")
        await world.send(OWNER, OWNER, "Carol")
        await world.reply_containing(OWNER, "echo: Carol")
        assert not any("Next: 2. Age" in text for text in world.texts(group)), "neither answered the question in topic 77"
        await world.send(group, STRANGER, "Ann", message_thread_id=77)
        await world.reply_containing(group, "Noted. Next: 2. Age")


async def test_a_session_resumed_in_another_chat_still_asks_the_chat_whose_turn_it_is(tmp_path: Path) -> None:
    group = -1006
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path, allowed_chats=[group])) as world:
        world.fake.add_chat(group, "supergroup", title="B")
        await world.exchange(OWNER, OWNER, "hello", "echo: hello")
        session = (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id
        await world.send(OWNER, OWNER, "permission please")
        question, buttons = await world.keyboard(OWNER, "Permission needed")
        await world.exchange(group, STRANGER, f"/resume {session}", "busy with a turn in another conversation")
        assert await world.pressed(OWNER, OWNER, buttons[1]["callback_data"], question) == "Answer recorded."
        await world.reply_containing(OWNER, "permission: selected reject")

        await world.exchange(group, STRANGER, f"/resume {session}", f"Resumed session {session}")
        await world.send(OWNER, OWNER, "permission again")
        question, buttons = await world.keyboard(OWNER, "Permission needed", timeout=PATIENCE)
        assert not [m for m in world.fake.bot_messages(group) if m.get("reply_markup")], "the question is asked where the turn is"
        assert await world.pressed(OWNER, OWNER, buttons[1]["callback_data"], question) == "Answer recorded."
        await world.reply_containing(OWNER, "permission: selected reject")
        assert not any("selected allow" in text for text in world.texts(OWNER) + world.texts(group))


async def test_cancel_settles_a_running_turn(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.send(OWNER, OWNER, "something slow please")
        await world.fake.wait_until(lambda: any(text.endswith(" …") for text in world.texts(OWNER)))
        cancelled = await world.exchange(OWNER, OWNER, "/cancel", "⏹ Cancelled.")
        assert " 15" not in cancelled["text"], "the turn stopped before it finished streaming"
        await world.exchange(OWNER, OWNER, "/cancel", "Nothing is running.")
        await world.exchange(OWNER, OWNER, "after the cancel", "You said: after the cancel")


async def test_a_bridge_restart_continues_the_same_session_with_its_history(tmp_path: Path) -> None:
    async with TelegramFake() as fake:
        async with bridge_world(tmp_path=tmp_path, fake=fake) as world:
            await world.exchange(OWNER, OWNER, "remember this", "You said: remember this")
            binding = await world.app.store.bridge.get_binding(f"telegram:{OWNER}")
        async with bridge_world(tmp_path=tmp_path, fake=fake) as world:
            await world.exchange(OWNER, OWNER, "and this", "You said: and this")
            again = await world.app.store.bridge.get_binding(f"telegram:{OWNER}")
            assert again.acp_session_id == binding.acp_session_id
            transcript = await world.app.store.sessions.transcript(binding.acp_session_id)
            assert [e.text for e in transcript if e.kind == "user"] == ["remember this", "and this"]
            assert len(await world.app.store.sessions.list_sessions()) == 1, "no new session was started"


async def test_a_dead_agent_is_restarted_and_the_conversation_told_what_was_lost(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        await world.exchange(OWNER, OWNER, "hello", "echo: hello")
        told = await world.exchange(OWNER, OWNER, "crash now", "stopped during this turn")
        assert "exit code 3" in told["text"] and "was lost" in told["text"]
        await world.exchange(OWNER, OWNER, "are you back", "echo: are you back")
        [session] = {c["sessionId"] for c in agent_calls(tmp_path, "session/prompt")}
        assert [c["sessionId"] for c in agent_calls(tmp_path, "session/load")] == [session]
        assert len(agent_calls(tmp_path, "initialize")) == 2


async def test_an_unknown_session_is_told_plainly_and_nothing_new_is_started(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.exchange(OWNER, OWNER, "/status", "none yet")
        await world.exchange(OWNER, OWNER, "first", "You said: first")
        binding = await world.app.store.bridge.get_binding(f"telegram:{OWNER}")
        told = await world.exchange(OWNER, OWNER, "/resume ses_nobody", "could not reopen session ses_nobody")
        assert "no new session was started" in told["text"]
        assert (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id == binding.acp_session_id
        status = await world.exchange(OWNER, OWNER, "/status", f"Session: {binding.acp_session_id}")
        assert "Agent: runwield (connected)" in status["text"] and "Model: Scripted\n" in status["text"]


async def test_status_names_the_model_as_its_menu_does_not_by_its_internal_value(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.exchange(OWNER, OWNER, "/model scripted-fast", "Model: scripted-fast.")
        status = await world.exchange(OWNER, OWNER, "/status", "Agent: runwield")
        assert "Model: Scripted (fast)" in status["text"] and "scripted-fast" not in status["text"]


async def test_a_tool_named_only_in_its_permission_request_keeps_that_title_and_one_ellipsis(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        await world.send(OWNER, OWNER, "permission please")
        message_id, buttons = await world.keyboard(OWNER, "Permission needed: Write notes.txt")
        await world.fake.wait_until(lambda: "⚙️ Write notes.txt …" in world.texts(OWNER))
        await world.press(OWNER, OWNER, buttons[0]["callback_data"], message_id)
        final = await world.reply_containing(OWNER, "permission: selected allow")
        assert final["text"] == "✅ Write notes.txt\npermission: selected allow"
        shown = [call["text"] for call in world.fake.calls_to("sendMessage") + world.fake.calls_to("editMessageText")]
        assert not any(text.endswith("… …") for text in shown), "a running tool's line ends in one ellipsis"


async def test_new_and_resume_move_a_conversation_between_sessions_and_agents(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, agents={"asker": asking_agent(tmp_path)}) as world:
        await world.exchange(OWNER, OWNER, "on the host", "You said: on the host")
        first = (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id
        await world.exchange(OWNER, OWNER, "/new nosuch", "There is no agent named 'nosuch'")
        await world.exchange(OWNER, OWNER, "/new asker", "on asker")
        await world.exchange(OWNER, OWNER, "hi asker", "echo: hi asker")
        await world.fake.wait_until(lambda: any("review" in json.dumps(v) for v in world.fake.commands.values()))
        [menu] = [v for k, v in world.fake.commands.items() if str(OWNER) in k]
        assert [c["command"] for c in menu] == ["cancel", "new", "resume", "status", "help", "queue", "spawn", "sessions", "review"]
        await world.exchange(OWNER, OWNER, "/new", "New session ses_")
        resumed = await world.exchange(OWNER, OWNER, f"/resume {first}", f"Resumed session {first}")
        assert "2 earlier messages" in resumed["text"] and "You said: on the host" in resumed["text"]


async def test_group_prompts_carry_sender_context_and_forum_topics_are_threads(tmp_path: Path) -> None:
    group = -1001234
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path, allowed_chats=[group])) as world:
        world.fake.add_chat(group, "supergroup", title="Team", is_forum=True)
        await world.send(group, STRANGER, "chatter nobody addressed to the bot", message_thread_id=77)
        await world.send(group, STRANGER, "@bridge_test_bot hello team", message_thread_id=77)
        reply = await world.reply_containing(group, "echo: hello team")
        assert reply["message_thread_id"] == 77
        [prompt] = agent_calls(tmp_path, "session/prompt")
        head, text = prompt["texts"]
        assert text == "hello team"
        context = json.loads(head.removeprefix("<sender_context>\n").removesuffix("\n</sender_context>"))
        assert context["schema"] == "openab.sender.v1"
        assert (context["sender_id"], context["channel"], context["channel_id"], context["thread_id"]) == (str(STRANGER), "telegram", str(group), "77")
        assert context["is_bot"] is False and context["timestamp"].endswith("Z")
        await world.send(group, OWNER, "/status", message_thread_id=78)
        await world.reply_containing(group, "none yet")
        binding = await world.app.store.bridge.get_binding(f"telegram:{group}:77")
        assert binding is not None and binding.agent == "asker"


async def test_photos_reach_only_agents_that_take_images(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, agents={"asker": asking_agent(tmp_path)}) as world:
        world.fake.push_photo(OWNER, OWNER, caption="what is this")
        await world.reply_containing(OWNER, "does not accept images")
        await world.exchange(OWNER, OWNER, "/new asker", "on asker")
        world.fake.push_photo(OWNER, OWNER, caption="and now?")
        await world.reply_containing(OWNER, "got 1 image(s), 67 bytes, image/jpeg")


async def test_url_requests_show_the_literal_url_and_malformed_ones_are_declined_visibly(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, **with_asker(tmp_path)) as world:
        await world.send(OWNER, OWNER, "visit the page")
        message_id, buttons = await world.keyboard(OWNER, "https://auth.example.com/login?state=xyz")
        assert [b["text"] for b in buttons] == ["Continue", "Decline"]
        sent = [c for c in world.fake.calls_to("sendMessage") if "auth.example.com" in c["text"]][0]
        assert sent["link_preview_options"] == {"is_disabled": True}, "not even Telegram fetches it"
        await world.press(OWNER, OWNER, buttons[0]["callback_data"], message_id)
        await world.reply_containing(OWNER, "url: accept")
        explained = await world.exchange(OWNER, OWNER, "malformed request", "cannot show")
        assert "malformed" in explained["text"] and "declined" in explained["text"]
        await world.reply_containing(OWNER, "malformed: decline")


async def test_rate_limits_are_waited_out_without_losing_text(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        world.fake.inject_rate_limit("editMessageText", retry_after=1, count=1)
        await world.send(OWNER, OWNER, "keep every word of this slow reply")  # slow: streamed, so the reply is edited
        await world.reply_containing(OWNER, "You said: keep every word of this slow reply" + SLOW_TAIL)
        assert 429 in [c.status for c in world.fake.calls_to("editMessageText")]


async def test_a_binding_route_sends_a_chat_to_its_agent_without_a_command(tmp_path: Path) -> None:
    routes = [{"channel": "telegram", "chat": OWNER, "agent": "asker", "cwd": str(tmp_path)}]
    async with bridge_world(tmp_path=tmp_path, agents={"asker": asking_agent(tmp_path)}, bindings=routes) as world:
        await world.exchange(OWNER, OWNER, "routed", "echo: routed")
        [new] = agent_calls(tmp_path, "session/new")
        assert new["cwd"] == str(tmp_path)


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"channels": {"telegram": {"token": "t", "tokn": "x"}}}, "channels.telegram.tokn: unknown key"),
        ({"channels": {"telegram": {"token": "t", "mode": "push"}}}, "channels.telegram.mode:"),
        ({"channels": {"telegram": {"token": "t", "queue": "later"}}}, "channels.telegram.queue: Input should be 'steer', 'collect', 'followup' or 'interrupt'"),
        ({"channels": {"telegram": {"token": "t", "agent": "ghost"}}}, "channels.telegram.agent: no agent named 'ghost'"),
        ({"channels": {"telegram": {"token": "t"}}, "bindings": [{"channel": "telegram", "chat": 1, "agnt": "x"}]}, "bindings[0].agnt: unknown key"),
        ({"channels": {"smoke-signals": {}}}, "channels.smoke-signals: no plugin provides this channel"),
    ],
)
async def test_configuration_errors_name_the_key(config: dict, error: str) -> None:
    settings = Settings.model_validate(config)
    with pytest.raises(ConfigError, match=error.replace("[", r"\[").replace("]", r"\]")):
        service = BridgeService(settings, load_plugins(), SimpleNamespace(follow_ups=None), agent_endpoints(settings, None))  # type: ignore[arg-type]
        service.bridge.add_channel(service.channels[0])


@pytest.mark.parametrize("data", ["wld:deadbeef:0", "wld:step:deadbeef:1"])
async def test_a_button_left_from_before_a_restart_is_marked_expired_when_pressed(data: str, tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.send(OWNER, OWNER, "/status")
        old = dict(await world.reply_containing(OWNER, "Session:"))
        buttons = {"inline_keyboard": [[{"text": "Yes", "callback_data": data}, {"text": "No", "callback_data": "wld:deadbeef:1"}]]}
        world.fake.messages[(OWNER, old["message_id"])]["reply_markup"] = buttons  # as a bridge before the restart left it

        assert await world.pressed(OWNER, OWNER, data, old["message_id"]) == EXPIRED
        await world.fake.wait_until(lambda: world.fake.messages[(OWNER, old["message_id"])]["text"].endswith("(expired)"))
        stale = world.fake.messages[(OWNER, old["message_id"])]
        assert stale["text"] == old["text"] + "\n\n(expired)" and not stale.get("reply_markup", {}).get("inline_keyboard")
        assert await world.pressed(OWNER, OWNER, "wld:deadbeef:0", old["message_id"]) == NOT_OPEN, "no button on it any more"
