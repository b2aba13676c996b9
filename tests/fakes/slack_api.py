"""A fake Slack Web API plus helpers that send correctly signed Events API / interactivity requests."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import math
import time
import uuid
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from .base import CALL_KEY, FakeServer, HttpResult, http_post, json_response


def slack_signature(signing_secret: str, timestamp: int | str, body: str) -> str:
    """The ``X-Slack-Signature`` value (``v0=`` + HMAC-SHA256 of ``v0:{ts}:{body}``)."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()


USER_TOKEN = "xoxp-fake-user-token"
"""The user token the fake takes by default: a workspace admin's."""


class SlackFake(FakeServer):
    """Fake Slack: use ``AsyncWebClient(token=fake.token, base_url=fake.api_url)``. ``user_token`` is a workspace
    admin's (``U0ADMIN``), who may delete anyone's message unless ``admin_may_delete`` is turned off."""

    def __init__(
        self,
        *,
        token: str = "xoxb-fake-token",
        user_token: str = USER_TOKEN,
        signing_secret: str = "fake-signing-secret",
        team_id: str = "T0FAKE",
        bot_user_id: str = "U0BOT",
        bot_id: str = "B0BOT",
        app_id: str = "A0FAKE",
    ) -> None:
        super().__init__()
        self.token = token
        self.user_token = user_token
        self.admin_may_delete = True
        self.signing_secret = signing_secret
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.app_id = app_id
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.reactions: list[dict[str, str]] = []
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self._ts_base = int(time.time())
        self._ts_counter = itertools.count(1)
        self._ids = itertools.count(1)
        self.add_user(bot_user_id, "bridgebot", is_bot=True)
        self.user_id = self.add_user("U0ALICE", "alice", real_name="Alice Example")["id"]
        self.admin_id = self.add_user("U0ADMIN", "admin", real_name="Workspace Admin")["id"]
        self.channel_id = self.add_channel("C0GENERAL", "general")["id"]

    # -- URLs and clients ------------------------------------------------

    @property
    def api_url(self) -> str:
        """Value for ``AsyncWebClient(base_url=...)`` (trailing slash included)."""
        return f"{self.url}/api/"

    def client(self, **kwargs: Any) -> AsyncWebClient:
        """An ``AsyncWebClient`` bound to this fake with the bot token."""
        return AsyncWebClient(token=self.token, base_url=self.api_url, **kwargs)

    # -- world state -----------------------------------------------------

    def add_user(
        self,
        user_id: str,
        name: str,
        *,
        real_name: str | None = None,
        display_name: str | None = None,
        is_bot: bool = False,
    ) -> dict[str, Any]:
        """Register a user returned by users.info."""
        real = real_name or name.title()
        user = {
            "id": user_id,
            "team_id": self.team_id,
            "name": name,
            "real_name": real,
            "is_bot": is_bot,
            "deleted": False,
            "tz": "UTC",
            "profile": {"real_name": real, "display_name": display_name or name, "image_72": None},
        }
        self.users[user_id] = user
        return user

    def add_channel(
        self, channel_id: str, name: str, *, is_im: bool = False, is_private: bool = False
    ) -> dict[str, Any]:
        """Register a conversation returned by conversations.info."""
        channel: dict[str, Any] = {
            "id": channel_id,
            "name": name,
            "is_channel": not is_im and not is_private,
            "is_group": is_private,
            "is_im": is_im,
            "is_private": is_private or is_im,
            "is_member": True,
            "is_archived": False,
            "created": self._ts_base,
        }
        if is_im:
            channel["user"] = name
        self.channels[channel_id] = channel
        return channel

    def add_file(self, name: str, data: bytes, *, mimetype: str = "image/png", filetype: str = "png") -> dict[str, Any]:
        """Store bytes and return a Slack file object whose ``url_private`` is served by the fake (auth required)."""
        file_id = f"F{next(self._ids):07d}"
        url = f"{self.url}/files-pri/{self.team_id}-{file_id}/{name}"
        obj = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": filetype,
            "size": len(data),
            "url_private": url,
            "url_private_download": url + "?download=1",
        }
        self.files[file_id] = (obj, data)
        return obj

    def next_ts(self) -> str:
        """A fresh, increasing message timestamp."""
        return f"{self._ts_base}.{next(self._ts_counter):06d}"

    def bot_messages(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Current messages posted by the bot (optionally in one channel), oldest first."""
        return [
            {**m, "channel": c}
            for (c, _), m in sorted(self.messages.items(), key=lambda kv: kv[0][1])
            if m.get("bot_id") == self.bot_id and (channel is None or c == channel)
        ]

    # -- building events -------------------------------------------------

    def event_envelope(self, event: dict[str, Any]) -> dict[str, Any]:
        """Wrap an event in an Events API ``event_callback`` envelope."""
        return {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [
                {"enterprise_id": None, "team_id": self.team_id, "user_id": self.bot_user_id,
                 "is_bot": True, "is_enterprise_install": False}
            ],  # fmt: skip
            "is_ext_shared_channel": False,
        }

    def message_event(
        self,
        text: str,
        *,
        channel: str | None = None,
        user: str | None = None,
        ts: str | None = None,
        thread_ts: str | None = None,
        channel_type: str | None = None,
        files: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A ``message`` event from a user (default alice in #general)."""
        channel = channel or self.channel_id
        ts = ts or self.next_ts()
        conv = self.channels.get(channel, {})
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user or self.user_id,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            "channel_type": channel_type or ("im" if conv.get("is_im") else "channel"),
            "team": self.team_id,
            "client_msg_id": str(uuid.uuid4()),
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        if files:
            event.update(subtype="file_share", files=files, upload=False)
        event.update(extra)
        self.messages[(channel, ts)] = {k: v for k, v in event.items() if k not in ("channel", "event_ts")}
        return event

    def app_mention_event(
        self,
        text: str,
        *,
        channel: str | None = None,
        user: str | None = None,
        ts: str | None = None,
        thread_ts: str | None = None,
    ) -> dict[str, Any]:
        """An ``app_mention`` event; ``<@BOT>`` is prepended unless the text already mentions the bot."""
        if f"<@{self.bot_user_id}>" not in text:
            text = f"<@{self.bot_user_id}> {text}"
        event = self.message_event(text, channel=channel, user=user, ts=ts, thread_ts=thread_ts)
        event["type"] = "app_mention"
        event.pop("channel_type")
        return event

    def block_actions_payload(
        self,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str = "actions",
        user: str | None = None,
        channel: str | None = None,
        message_ts: str | None = None,
        action_type: str = "button",
    ) -> dict[str, Any]:
        """A ``block_actions`` payload for a click on a message (default: the bot's latest message)."""
        if message_ts is None:
            posted = self.bot_messages(channel)
            message = posted[-1] if posted else {"ts": self.next_ts(), "channel": channel or self.channel_id}
        else:
            message = {**self.messages.get((channel or self.channel_id, message_ts), {"ts": message_ts})}
            message.setdefault("channel", channel or self.channel_id)
        channel = str(message.pop("channel"))
        user_obj = self.users.get(user or self.user_id, {"id": user, "name": user})
        action: dict[str, Any] = {
            "type": action_type,
            "action_id": action_id,
            "block_id": block_id,
            "action_ts": f"{time.time():.6f}",
        }
        if value is not None:
            action["value"] = value
        container: dict[str, Any] = {"type": "message", "message_ts": message["ts"], "channel_id": channel,
                                     "is_ephemeral": False}  # fmt: skip
        if "thread_ts" in message:
            container["thread_ts"] = message["thread_ts"]
        return {
            "type": "block_actions",
            "user": {"id": user_obj["id"], "username": user_obj["name"], "name": user_obj["name"],
                     "team_id": self.team_id},  # fmt: skip
            "api_app_id": self.app_id,
            "token": "fake-verification-token",
            "container": container,
            "trigger_id": f"{next(self._ids)}.{self.team_id}.fake",
            "team": {"id": self.team_id, "domain": "fake"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": self.channels.get(channel, {}).get("name", channel)},
            "message": {"type": "message", **message},
            "response_url": f"{self.url}/response_url/{next(self._ids)}",
            "actions": [action],
            "state": {"values": {}},
        }

    # -- signed requests ---------------------------------------------------

    def signed_headers(
        self, body: str, content_type: str, *, timestamp: int | None = None, bad_signature: bool = False
    ) -> dict[str, str]:
        """Headers Slack sends: content type, request timestamp and v0 signature (or a wrong one)."""
        ts = int(time.time()) if timestamp is None else timestamp
        secret = self.signing_secret + ("-wrong" if bad_signature else "")
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": slack_signature(secret, ts, body),
        }

    async def post_signed(
        self, url: str, body: str, content_type: str, *, timestamp: int | None = None, bad_signature: bool = False
    ) -> HttpResult:
        """POST a body to ``url`` with Slack's signature headers."""
        headers = self.signed_headers(body, content_type, timestamp=timestamp, bad_signature=bad_signature)
        return await http_post(url, data=body.encode(), headers=headers)

    async def post_event(
        self, url: str, event: dict[str, Any], *, timestamp: int | None = None, bad_signature: bool = False
    ) -> HttpResult:
        """POST an event (wrapped in an ``event_callback`` envelope) as JSON."""
        body = json.dumps(self.event_envelope(event))
        return await self.post_signed(url, body, "application/json", timestamp=timestamp, bad_signature=bad_signature)

    async def post_message(
        self, url: str, text: str, *, timestamp: int | None = None, bad_signature: bool = False, **kwargs: Any
    ) -> HttpResult:
        """POST a signed ``message`` event (see ``message_event`` for kwargs)."""
        event = self.message_event(text, **kwargs)
        return await self.post_event(url, event, timestamp=timestamp, bad_signature=bad_signature)

    async def post_app_mention(
        self, url: str, text: str, *, timestamp: int | None = None, bad_signature: bool = False, **kwargs: Any
    ) -> HttpResult:
        """POST a signed ``app_mention`` event (see ``app_mention_event`` for kwargs)."""
        event = self.app_mention_event(text, **kwargs)
        return await self.post_event(url, event, timestamp=timestamp, bad_signature=bad_signature)

    async def post_interactive(
        self, url: str, payload: dict[str, Any], *, timestamp: int | None = None, bad_signature: bool = False
    ) -> HttpResult:
        """POST an interactivity payload form-encoded as ``payload=<json>``."""
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post_signed(
            url, body, "application/x-www-form-urlencoded", timestamp=timestamp, bad_signature=bad_signature
        )

    async def post_block_action(
        self, url: str, action_id: str, *, timestamp: int | None = None, bad_signature: bool = False, **kwargs: Any
    ) -> HttpResult:
        """POST a signed ``block_actions`` click (see ``block_actions_payload`` for kwargs)."""
        payload = self.block_actions_payload(action_id, **kwargs)
        return await self.post_interactive(url, payload, timestamp=timestamp, bad_signature=bad_signature)

    async def post_slash_command(
        self,
        url: str,
        command: str,
        text: str = "",
        *,
        user: str | None = None,
        channel: str | None = None,
        timestamp: int | None = None,
        bad_signature: bool = False,
    ) -> HttpResult:
        """POST a signed slash command (form-encoded, like Slack)."""
        channel = channel or self.channel_id
        user_id = user or self.user_id
        form = {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": self.channels.get(channel, {}).get("name", channel),
            "user_id": user_id,
            "user_name": self.users.get(user_id, {}).get("name", user_id),
            "command": command,
            "text": text,
            "api_app_id": self.app_id,
            "response_url": f"{self.url}/response_url/{next(self._ids)}",
            "trigger_id": f"{next(self._ids)}.{self.team_id}.fake",
        }
        return await self.post_signed(
            url, urlencode(form), "application/x-www-form-urlencoded", timestamp=timestamp, bad_signature=bad_signature
        )

    async def post_url_verification(self, url: str, challenge: str = "fake-challenge") -> HttpResult:
        """POST the Events API ``url_verification`` handshake."""
        body = json.dumps({"token": "fake-verification-token", "challenge": challenge, "type": "url_verification"})
        return await self.post_signed(url, body, "application/json")

    # -- HTTP plumbing -----------------------------------------------------

    def _method_name(self, request: web.Request) -> str | None:
        if "method" in request.match_info:
            return request.match_info["method"]
        return request.match_info.route.name

    def _decode_params(self, method: str, params: dict[str, Any], content_type: str) -> dict[str, Any]:
        """Form-encoded structured fields (blocks, attachments) arrive as JSON strings."""
        decoded = dict(params)
        for key in ("blocks", "attachments", "metadata"):
            value = decoded.get(key)
            if isinstance(value, str) and value[:1] in "[{":
                decoded[key] = json.loads(value)
        return decoded

    def _rate_limit_response(self, retry_after: float) -> web.StreamResponse:
        headers = {"Retry-After": str(max(1, math.ceil(retry_after)))}
        return json_response({"ok": False, "error": "ratelimited"}, status=429, headers=headers)

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        return json_response({"ok": False, "error": message}, status=status)

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/{method}", self._handle_method)
        app.router.add_get("/files-pri/{team_file}/{name}", self._download_file, name="file_download")
        app.router.add_post("/response_url/{id}", self._response_url, name="response_url")

    async def _handle_method(self, request: web.Request) -> web.StreamResponse:
        """Dispatch one Web API method call."""
        call = request[CALL_KEY]
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else call.params.get("token")
        if not token:
            return _fail("not_authed")
        if token == self.user_token:
            return self._as_admin(call.method, call.params)
        if token != self.token:
            return _fail("invalid_auth")
        handler = getattr(self, "_api_" + call.method.replace(".", "_"), None)
        if handler is None:
            return _fail("unknown_method")
        return handler(call.params)

    async def _download_file(self, request: web.Request) -> web.StreamResponse:
        """Serve ``url_private``; without the bot token Slack answers 200 with an HTML login page."""
        file_id = request.match_info["team_file"].split("-", 1)[-1]
        stored = self.files.get(file_id)
        if stored is None:
            raise web.HTTPNotFound()
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(text="<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
                                content_type="text/html")  # fmt: skip
        obj, data = stored
        return web.Response(body=data, content_type=obj["mimetype"])

    async def _response_url(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    # -- Web API methods -----------------------------------------------------

    def _api_auth_test(self, params: dict[str, Any]) -> web.StreamResponse:
        return _ok(
            url="https://fake.slack.com/",
            team="Fake Team",
            user=self.users[self.bot_user_id]["name"],
            team_id=self.team_id,
            user_id=self.bot_user_id,
            bot_id=self.bot_id,
            is_enterprise_install=False,
        )

    def _api_users_info(self, params: dict[str, Any]) -> web.StreamResponse:
        user = self.users.get(str(params.get("user")))
        return _ok(user=user) if user else _fail("user_not_found")

    def _api_conversations_info(self, params: dict[str, Any]) -> web.StreamResponse:
        channel = self.channels.get(str(params.get("channel")))
        return _ok(channel=channel) if channel else _fail("channel_not_found")

    def _api_chat_postMessage(self, params: dict[str, Any]) -> web.StreamResponse:
        channel = params.get("channel")
        if not channel:
            return _fail("channel_not_found")
        if not (params.get("text") or params.get("blocks") or params.get("attachments")):
            return _fail("no_text")
        ts = self.next_ts()
        message: dict[str, Any] = {
            "type": "message",
            "text": params.get("text") or "",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
            "ts": ts,
        }
        for key in ("blocks", "attachments", "metadata"):
            if params.get(key):
                message[key] = params[key]
        if params.get("thread_ts"):
            message["thread_ts"] = str(params["thread_ts"])
        self.messages[(str(channel), ts)] = message
        return _ok(channel=channel, ts=ts, message=message)

    def _api_chat_postEphemeral(self, params: dict[str, Any]) -> web.StreamResponse:
        if not params.get("channel") or not params.get("user"):
            return _fail("channel_not_found")
        return _ok(message_ts=self.next_ts())

    def _api_chat_update(self, params: dict[str, Any]) -> web.StreamResponse:
        channel, ts = str(params.get("channel")), str(params.get("ts"))
        message = self.messages.get((channel, ts))
        if message is None:
            return _fail("message_not_found")
        if message.get("bot_id") != self.bot_id:
            return _fail("cant_update_message")
        if "text" in params:
            message["text"] = params["text"]
        for key in ("blocks", "attachments", "metadata"):
            if key in params:
                message[key] = params[key]
        message["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
        return _ok(channel=channel, ts=ts, text=message["text"], message=message)

    def _api_chat_delete(self, params: dict[str, Any]) -> web.StreamResponse:
        channel, ts = str(params.get("channel")), str(params.get("ts"))
        message = self.messages.get((channel, ts))
        if message is None:
            return _fail("message_not_found")
        if message.get("bot_id") != self.bot_id:  # a bot token deletes only the bot's own messages
            return _fail("cant_delete_message")
        del self.messages[(channel, ts)]
        return _ok(channel=channel, ts=ts)

    def _as_admin(self, method: str, params: dict[str, Any]) -> web.StreamResponse:
        """A call with the user token: who it is (auth.test), or chat.delete of any message as the workspace admin."""
        if method == "auth.test":
            return _ok(team_id=self.team_id, user_id=self.admin_id, user=self.users[self.admin_id]["name"])
        if method != "chat.delete":
            return _fail("not_allowed_token_type")
        channel, ts = str(params.get("channel")), str(params.get("ts"))
        if (channel, ts) not in self.messages:
            return _fail("message_not_found")
        if not self.admin_may_delete:
            return _fail("cant_delete_message")
        del self.messages[(channel, ts)]
        return _ok(channel=channel, ts=ts)

    def _api_reactions_add(self, params: dict[str, Any]) -> web.StreamResponse:
        reaction = {"channel": str(params.get("channel")), "timestamp": str(params.get("timestamp")),
                    "name": str(params.get("name"))}  # fmt: skip
        if (reaction["channel"], reaction["timestamp"]) not in self.messages:
            return _fail("message_not_found")
        if reaction in self.reactions:
            return _fail("already_reacted")
        self.reactions.append(reaction)
        return _ok()

    def _api_reactions_remove(self, params: dict[str, Any]) -> web.StreamResponse:
        reaction = {"channel": str(params.get("channel")), "timestamp": str(params.get("timestamp")),
                    "name": str(params.get("name"))}  # fmt: skip
        if reaction not in self.reactions:
            return _fail("no_reaction")
        self.reactions.remove(reaction)
        return _ok()


def _ok(**fields: Any) -> web.StreamResponse:
    return json_response({"ok": True, **fields})


def _fail(error: str) -> web.StreamResponse:
    return json_response({"ok": False, "error": error})
