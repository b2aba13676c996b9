"""The Bridge end to end on Slack: the real slack-bolt app on the bridge's web server, signed events from the Slack fake."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from runwield_bridge.config import ConfigError
from tests.bridge_kit import asking_agent
from tests.fakes.base import CALL_KEY, RecordedCall, json_response
from tests.fakes.slack_api import SlackFake
from tests.platform_kit import running_bridge, slack_section, slack_world


async def test_a_mention_starts_a_thread_where_the_answer_streams_and_no_mention_is_needed_after(tmp_path: Path) -> None:
    async with slack_world() as world:
        fake = world.fake
        event = fake.app_mention_event("hello bridge")
        thread = event["ts"]
        await fake.post_event(world.events_url, event)
        await fake.post_event(world.events_url, {**event, "type": "message"})  # Slack sends a mention twice: app_mention and message
        await world.reply_containing(thread, "You said: hello bridge", final=True)
        first = fake.calls_to("chat.postMessage")[0]
        assert first["thread_ts"] == thread and first["text"].endswith(" …"), "a placeholder in the thread, then edits"
        assert first["unfurl_links"] is False and fake.calls_to("chat.update")
        await world.say(None, "chatter without a mention")
        await world.say(thread, "and more")
        await world.reply_containing(thread, "You said: and more")
        assert world.texts(None) == [], "nothing is said in the channel itself"
        binding = await world.app.store.get_binding(f"slack:{fake.channel_id}:{thread}")
        [session] = await world.app.store.list_sessions()
        assert binding.acp_session_id == session.id
        prompts = [e.text for e in await world.app.store.transcript(session.id) if e.kind == "user"]
        assert prompts == ["hello bridge", "and more"], "the duplicate delivery was handled once"


async def test_a_bad_signature_gets_401_and_reaches_nothing(tmp_path: Path) -> None:
    async with slack_world() as world:
        fake = world.fake
        mark = fake.mark()
        assert (await fake.post_app_mention(world.events_url, "forged", bad_signature=True)).status == 401
        assert (await fake.post_app_mention(world.events_url, "stale", timestamp=int(time.time()) - 3600)).status == 401
        click = fake.block_actions_payload("wld:00000000:0", value="wld:00000000:0")
        assert (await fake.post_interactive(world.events_url, click, bad_signature=True)).status == 401
        await asyncio.sleep(0.2)
        assert fake.calls[mark:] == [] and await world.app.store.list_sessions() == []


async def test_a_stranger_never_reaches_the_agent(tmp_path: Path) -> None:
    async with slack_world() as world:
        stranger = world.fake.add_user("U0MALLORY", "mallory")["id"]
        thread = await world.mention("let me in", user=stranger)
        notice = await world.reply_containing(thread, stranger)
        assert "not on this bot's allowlist" in notice["text"] and "channels.slack.allowed_users" in notice["text"]
        await world.say(thread, "please?", user=stranger)
        await asyncio.sleep(0.2)
        assert len(world.texts(thread)) == 1, "at most one notice per hour"
        assert await world.app.store.list_sessions() == []


async def test_a_question_becomes_block_kit_buttons_and_only_an_allowed_click_answers(tmp_path: Path) -> None:
    async with slack_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("please choose")
        message, buttons = await world.buttons(thread, "Pick a colour")
        assert [b["text"]["text"] for b in buttons] == ["red", "green", "blue", "Decline"]
        stranger = world.fake.add_user("U0MALLORY", "mallory")["id"]
        await world.click(message, buttons[0], user=stranger)
        told = await world.fake.wait_for_call("chat.postEphemeral")
        assert told["user"] == stranger and "allowlist" in told["text"] and told["thread_ts"] == thread
        await world.click(message, buttons[1])
        await world.reply_containing(thread, 'form: accept {"colour": "green"}')
        settled = world.fake.messages[(world.fake.channel_id, message["ts"])]
        assert "→ green" in settled["text"] and settled["blocks"] == [], "the buttons are gone once answered"


async def test_cancel_new_and_status_are_message_commands_in_a_thread(tmp_path: Path) -> None:
    async with slack_world() as world:
        thread = await world.mention("something slow please")
        await world.reply_containing(thread, "You said:")
        await world.say(thread, f"<@{world.fake.bot_user_id}> /cancel")
        cancelled = await world.reply_containing(thread, "⏹ Cancelled.")
        assert " 15" not in cancelled["text"], "the turn stopped before it finished streaming"
        await world.say(thread, "/cancel")
        await world.reply_containing(thread, "Nothing is running.")
        await world.say(thread, "/new")
        await world.reply_containing(thread, "New session")
        await world.say(thread, "/status")
        await world.reply_containing(thread, "State: idle")


async def test_updates_stay_within_4000_bytes_and_a_429_is_waited_out(tmp_path: Path) -> None:
    async with slack_world() as world:
        world.fake.inject_rate_limit("chat.update", retry_after=1)
        words = " ".join(f"<wörd{i}>" for i in range(700))
        thread = await world.mention(words)
        await world.fake.wait_until(lambda: world.texts(thread) and world.texts(thread)[-1].endswith("wörd699&gt;"))
        sent = world.fake.calls_to("chat.postMessage") + world.fake.calls_to("chat.update")
        assert len(world.texts(thread)) >= 2 and all(len(c["text"].encode()) <= 4000 for c in sent)
        assert 429 in [c.status for c in world.fake.calls_to("chat.update")]
        said = "".join(world.texts(thread)).replace("&lt;", "<").replace("&gt;", ">")
        assert all(f"<wörd{i}>" in said for i in range(700)), "no text was lost"


async def test_direct_messages_need_no_mention_and_images_reach_agents_that_take_them(tmp_path: Path) -> None:
    async with slack_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        dm = world.fake.add_channel("D0ALICE", world.fake.user_id, is_im=True)["id"]
        await world.say(None, "hi there", channel=dm)
        reply = await world.reply_containing(None, "echo: hi there", final=True)  # the turn is over: the next message is a prompt
        assert reply["channel"] == dm
        image = world.fake.add_file("pixel.png", b"\x89PNG" + bytes(60))
        await world.say(None, "what is this", channel=dm, files=[image])
        await world.reply_containing(None, "got 1 image(s), 64 bytes, image/png")


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"bot_token": "xoxb-1"}, "signing_secret is required"),
        ({"bot_token": "xoxb-1", "socket_mode": True}, "socket_mode = true needs app_token"),
        ({"bot_token": "xoxb-1", "socket_mode": True, "app_token": "xoxb-not-an-app-token"}, "channels.slack.app_token:"),
        ({"bot_token": "xoxb-1", "signing_secret": "s", "allowed_chats": ["C1"]}, "channels.slack.allowed_chats: unknown key"),
    ],
)
def test_configuration_errors_name_the_key(section: dict, error: str) -> None:
    from runwield_bridge.channels.slack import build

    with pytest.raises(ConfigError, match=error):
        build(section, None)  # type: ignore[arg-type]


class SocketModeSlack(SlackFake):
    """The Slack fake plus a Socket Mode endpoint: ``apps.connections.open`` (app token) and a WebSocket that pushes events."""

    app_token = "xapp-fake-app-token"

    def __init__(self) -> None:
        super().__init__()
        self.sockets: list[web.WebSocketResponse] = []
        self.acks: list[str] = []

    def _setup_routes(self, app: web.Application) -> None:
        super()._setup_routes(app)
        app.router.add_get("/socket-mode", self._socket)

    async def _handle_method(self, request: web.Request) -> web.StreamResponse:
        call: RecordedCall = request[CALL_KEY]
        if call.method == "apps.connections.open" and request.headers.get("Authorization") == f"Bearer {self.app_token}":
            return json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket-mode"})
        return await super()._handle_method(request)

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": self.app_id}})
        self.sockets.append(ws)
        async for frame in ws:
            if frame.type is WSMsgType.TEXT:
                self.acks.append(json.loads(frame.data).get("envelope_id", ""))
                self._notify()
        return ws

    async def push(self, event: dict[str, Any]) -> str:
        """Send an ``events_api`` envelope over the socket; returns its id (acknowledged into ``acks``)."""
        envelope_id = str(uuid.uuid4())
        envelope = {"envelope_id": envelope_id, "type": "events_api", "payload": self.event_envelope(event), "accepts_response_payload": False}
        await self.wait_until(lambda: bool(self.sockets))
        await self.sockets[-1].send_json(envelope)
        return envelope_id


async def test_socket_mode_receives_over_the_websocket_and_serves_no_events_route(tmp_path: Path) -> None:
    async with SocketModeSlack() as fake:
        section = slack_section(fake, socket_mode=True, app_token=fake.app_token, signing_secret=None)
        async with running_bridge({"slack": section}) as (service, _):
            assert not service.web.has_routes, "no HTTP route: events come over the socket"
            event = fake.app_mention_event("over the socket")
            envelope = await fake.push(event)
            await fake.wait_until(lambda: envelope in fake.acks)
            await fake.wait_until(lambda: any("You said: over the socket" in m["text"] for m in fake.bot_messages()))
            assert fake.bot_messages()[-1]["thread_ts"] == event["ts"]
