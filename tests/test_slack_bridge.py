"""The Bridge end to end on Slack: the real slack-bolt app on the bridge's web server, signed events from the Slack fake."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import WSMsgType, web

from runwield_bridge.config import ConfigError
from tests.bridge_kit import agent_calls, asking_agent
from tests.fakes.base import CALL_KEY, RecordedCall, http_post, json_response, raw_post
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
        binding = await world.app.store.bridge.get_binding(f"slack:{fake.channel_id}:{thread}")
        [session] = await world.app.store.sessions.list_sessions()
        assert binding.acp_session_id == session.id
        prompts = [e.text for e in await world.app.store.sessions.transcript(session.id) if e.kind == "user"]
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
        assert fake.calls[mark:] == [] and await world.app.store.sessions.list_sessions() == []


def signed(fake: SlackFake, body: bytes, content_type: str = "application/json", timestamp: str | None = None) -> dict[str, str]:
    """Slack's headers with a valid signature over the raw bytes (any timestamp, even one that is not a number)."""
    ts = timestamp or str(int(time.time()))
    digest = hmac.new(fake.signing_secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def form(payload: object) -> bytes:
    return urlencode({"payload": payload if isinstance(payload, str) else json.dumps(payload)}).encode()


async def test_malformed_requests_get_4xx_without_a_traceback_and_reach_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with slack_world() as world:
        fake, url = world.fake, world.events_url
        mention = fake.event_envelope(fake.app_mention_event("should not arrive"))
        click = fake.block_actions_payload("wld:00000000:0", value="wld:00000000:0")
        now, body = str(int(time.time())), json.dumps(mention).encode()
        unsigned: dict[str, dict[str, str]] = {
            "a timestamp that is not a number": {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00"},
            "a timestamp that is not a number, signed": signed(fake, body, timestamp="soon"),
            "no signature": {"X-Slack-Request-Timestamp": now},
            "no headers at all": {},
            "a signature that is not hex": {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": "garbage"},
        }
        for name, headers in unsigned.items():
            result = await http_post(url, data=body, headers={"Content-Type": "application/json", **headers})
            assert result.status == 401, f"{name}: {result.status} {result.text}"
        for odd in ("v0=é".encode(), b"\xff"):  # signatures no client library sends: not ASCII, not UTF-8
            header_lines = f"X-Slack-Request-Timestamp: {now}\r\nX-Slack-Signature: ".encode() + odd + b"\r\n"
            assert await raw_post(url, header_lines=header_lines, data=body) == 401, odd

        def event(**changes: object) -> dict[str, object]:
            return {**mention, "event": {**mention["event"], **changes}}

        misshapen: dict[str, tuple[bytes, str]] = {
            "empty": (b"", "application/json"),
            "not JSON": (b"not json", "application/json"),
            "not UTF-8": (b'{"type": "\xff"}', "application/json"),
            "nested too deep for a JSON parser": (b"[" * 100_000 + b"]" * 100_000, "application/json"),
            "a list": (b"[1]", "application/json"),
            "null": (b"null", "application/json"),
            "an object without a type": (b"{}", "application/json"),
            "an event that is a list": (json.dumps({**mention, "event": [1]}).encode(), "application/json"),
            "an event without a channel": (json.dumps(event(channel=None)).encode(), "application/json"),
            "a ts that is not a timestamp": (json.dumps(event(ts="soon")).encode(), "application/json"),
            "text that is a number": (json.dumps(event(text=5)).encode(), "application/json"),
            "a payload that is not JSON": (form("{oops"), "application/x-www-form-urlencoded"),
            "a payload that is a list": (form([click]), "application/x-www-form-urlencoded"),
            "a click without actions": (form({**click, "actions": []}), "application/x-www-form-urlencoded"),
            "a click without a user": (form({k: v for k, v in click.items() if k != "user"}), "application/x-www-form-urlencoded"),
            "a click without a channel": (form({k: v for k, v in click.items() if k not in ("channel", "container")}), "application/x-www-form-urlencoded"),
            "a form without a payload": (b"a=b", "application/x-www-form-urlencoded"),
        }
        for name, (data, content_type) in misshapen.items():
            result = await http_post(url, data=data, headers=signed(fake, data, content_type))
            assert result.status == 400, f"{name}: {result.status} {result.text}"

        thread = await world.mention("marker")
        await world.reply_containing(thread, "You said: marker", final=True)
        [session] = await world.app.store.sessions.list_sessions()
        assert session.title == "marker" and len(fake.bot_messages()) == 1, "nothing else reached an agent or a chat"
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "no traceback in the log"


USERS_INFO_FAILURES = {
    "U0HTML": lambda: web.Response(status=500, text="<html>down</html>", content_type="text/html"),
    "U0SLOW": lambda: web.Response(status=429, text="slow down", headers={"Retry-After": "30"}),
    "U0EMPTY": lambda: web.Response(status=502, body=b""),
    "U0ERROR": lambda: json_response({"ok": False, "error": {"odd": "shape"}}),
    "U0LIST": lambda: json_response([1, 2]),
    "U0NOUSER": lambda: json_response({"ok": True}),
    "U0ODD": lambda: json_response({"ok": True, "user": {"name": 5, "profile": "none"}}),
}


async def test_a_failing_users_info_never_loses_the_message_and_the_bare_id_stands_in(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    section = {"agent": "asker", "sender_context": "always", "allowed_users": list(USERS_INFO_FAILURES)}
    async with slack_world(section=section, agents={"asker": asking_agent(tmp_path)}) as world:
        for user, failure in USERS_INFO_FAILURES.items():
            world.fake.inject_response("users.info", failure)
            thread = await world.mention(f"hello from {user}", user=user)
            await world.reply_containing(thread, f"echo: hello from {user}")
        contexts = [json.loads(c["texts"][0].split("\n")[1]) for c in agent_calls(tmp_path, "session/prompt")]
        assert [(c["sender_id"], c["sender_name"]) for c in contexts] == [(user, user) for user in USERS_INFO_FAILURES]
        assert len(world.fake.calls_to("users.info")) == len(USERS_INFO_FAILURES)
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "no traceback in the log"


async def test_a_stranger_never_reaches_the_agent(tmp_path: Path) -> None:
    async with slack_world() as world:
        stranger = world.fake.add_user("U0MALLORY", "mallory")["id"]
        thread = await world.mention("let me in", user=stranger)
        notice = await world.reply_containing(thread, stranger)
        assert "not on this bot's allowlist" in notice["text"] and "channels.slack.allowed_users" in notice["text"]
        await world.say(thread, "please?", user=stranger)
        await asyncio.sleep(0.2)
        assert len(world.texts(thread)) == 1, "at most one notice per hour"
        assert await world.app.store.sessions.list_sessions() == []


async def test_a_question_becomes_block_kit_buttons_and_only_an_allowed_click_answers(tmp_path: Path) -> None:
    async with slack_world(section={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        thread = await world.mention("please choose")
        message, buttons = await world.buttons(thread, "Pick a colour")
        assert [b["text"]["text"] for b in buttons] == ["red", "green", "blue", "Cancel"]
        stranger = world.fake.add_user("U0MALLORY", "mallory")["id"]
        await world.click(message, buttons[0], user=stranger)
        told = await world.fake.wait_for_call("chat.postEphemeral")
        assert told["user"] == stranger and "allowlist" in told["text"] and told["thread_ts"] == thread
        await world.click(message, buttons[1])
        await world.reply_containing(thread, 'form: accept {"colour": "green"}')
        settled = world.fake.messages[(world.fake.channel_id, message["ts"])]
        assert "→ green" in settled["text"] and settled["blocks"] == [], "the buttons are gone once answered"


async def test_a_click_counts_only_in_the_thread_that_owns_the_question_and_only_from_someone_allowed_there(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        open_channel = fake.add_channel("C0OPEN", "open")["id"]
        section = {"agent": "asker", "allowed_channels": [open_channel]}
        async with slack_world(fake=fake, section=section, agents={"asker": asking_agent(tmp_path)}) as world:
            thread = await world.mention("permission please")
            question, (allow, reject) = await world.buttons(thread, "Permission needed")
            mallory = fake.add_user("U0MALLORY", "mallory")["id"]
            elsewhere = await world.mention("hello", user=mallory, channel=open_channel)
            reply = await world.reply_containing(elsewhere, "echo: hello", final=True)
            ahead = await world.mention("another thread", channel=open_channel)
            ahead_reply = await world.reply_containing(ahead, "echo: another thread", final=True)

            neutral = "This question is no longer open."
            assert await world.pressed(reply, allow, user=mallory) == neutral, "the question's button value sent from another channel"
            assert await world.pressed(ahead_reply, allow) == neutral, "even by someone allowed in the question's thread"
            assert "allowlist" in await world.pressed(question, allow, user=mallory), "on the question itself, by someone not allowed there"
            assert world.fake.messages[(fake.channel_id, question["ts"])]["blocks"] == question["blocks"], "still open"
            assert not any("permission:" in text for text in world.texts(thread))

            assert await world.pressed(question, reject) == "Answer recorded."
            await world.reply_containing(thread, "permission: selected reject")
            assert await world.pressed(question, allow) == neutral, "a click after the question settled"
            assert not any("selected allow" in text for text in world.texts(thread))


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
