"""A fake Discord (REST + gateway WebSocket) that real discord.py connects to on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import json
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import discord
import yarl
from aiohttp import WSMsgType, web
from discord.gateway import DiscordWebSocket
from discord.http import Route

from waiting import PATIENCE

from .base import CALL_KEY, FakeServer, RecordedCall, json_response

API_VERSION = 10
DISCORD_EPOCH_MS = 1420070400000

INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15

OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_PRESENCE = 0, 1, 2, 3
OP_RESUME, OP_RECONNECT, OP_REQUEST_MEMBERS, OP_INVALID_SESSION = 6, 7, 8, 9
OP_HELLO, OP_HEARTBEAT_ACK = 10, 11
_OP_NAMES = {
    1: "HEARTBEAT", 2: "IDENTIFY", 3: "PRESENCE_UPDATE", 4: "VOICE_STATE_UPDATE", 6: "RESUME", 8: "REQUEST_MEMBERS"
}  # fmt: skip

CHANNEL_TEXT, CHANNEL_DM, CHANNEL_PUBLIC_THREAD, CHANNEL_PRIVATE_THREAD = 0, 1, 11, 12
THREAD_TYPES = (10, CHANNEL_PUBLIC_THREAD, CHANNEL_PRIVATE_THREAD)

FLAG_EPHEMERAL, FLAG_LOADING = 1 << 6, 1 << 7
MAX_CONTENT = 2000

_BOT_PERMISSIONS = str(discord.Permissions.all_channel().value)
_MENTION_RE = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION_RE = re.compile(r"<@&(\d+)>")


def now_iso() -> str:
    """Current time in Discord's ISO-8601 format."""
    return dt.datetime.now(dt.timezone.utc).isoformat()


class SnowflakeFactory:
    """Monotonic, realistic Discord snowflakes."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def __call__(self) -> int:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._counter) & 0x3FFFFF)


@dataclass
class GatewaySession:
    """One connected discord.py client."""

    ws: web.WebSocketResponse
    session_id: str = field(default_factory=lambda: secrets.token_hex(16))
    seq: int = 0
    intents: int = 0
    ready: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, op: int, d: Any = None, t: str | None = None) -> None:
        """Send one gateway frame (DISPATCH frames get the next sequence number)."""
        async with self.lock:
            frame: dict[str, Any] = {"op": op, "d": d, "s": None, "t": t}
            if op == OP_DISPATCH:
                self.seq += 1
                frame["s"] = self.seq
            if not self.ws.closed:
                await self.ws.send_str(json.dumps(frame))


@dataclass
class FakeInteraction:
    """An interaction the fake sent and what the bot answered."""

    payload: dict[str, Any]
    responses: list[dict[str, Any]] = field(default_factory=list)
    original_message_id: int | None = None

    @property
    def id(self) -> int:
        """Interaction id."""
        return int(self.payload["id"])

    @property
    def token(self) -> str:
        """Interaction token."""
        return str(self.payload["token"])

    @property
    def channel_id(self) -> int:
        """Channel the interaction happened in."""
        return int(self.payload["channel_id"])


class DiscordFake(FakeServer):
    """Fake Discord. ``start()`` patches discord.py's ``Route.BASE`` and gateway URL; ``stop()`` restores them."""

    def __init__(
        self,
        token: str = "fake-discord-token",
        *,
        install: bool = True,
        heartbeat_interval_ms: int = 41250,
        echo_own_messages: bool = True,
        enforce_intents: bool = True,
    ) -> None:
        super().__init__()
        self.token = token
        self.auto_install = install
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.echo_own_messages = echo_own_messages
        self.enforce_intents = enforce_intents
        self.snowflake = SnowflakeFactory()
        self.users: dict[int, dict[str, Any]] = {}
        self.guilds: dict[int, dict[str, Any]] = {}
        self.members: dict[int, dict[int, dict[str, Any]]] = {}
        self.channels: dict[int, dict[str, Any]] = {}
        self.messages: dict[int, dict[str, Any]] = {}
        self.attachment_data: dict[int, bytes] = {}
        self.interactions: dict[int, FakeInteraction] = {}
        self.global_commands: list[dict[str, Any]] = []
        self.guild_commands: dict[int, list[dict[str, Any]]] = {}
        self.reactions: list[dict[str, Any]] = []
        self.manage_messages = True
        """Whether the bot has Manage Messages in the guilds, so it may delete people's messages there (never in a DM)."""
        self.sessions: list[GatewaySession] = []
        self._saved_urls: tuple[str, yarl.URL] | None = None
        self._identified: dict[str, int] = {}
        self._sessions_changed = asyncio.Event()

        self.application_id = self.snowflake()
        self.bot_user = self.add_user("bridge-bot", bot=True)
        self.bot_id = int(self.bot_user["id"])
        self.user = self.add_user("alice")
        self.user_id = int(self.user["id"])
        self.guild_id = int(self.add_guild("Test Guild", owner_id=self.user_id)["id"])
        self.channel_id = int(self.add_text_channel(self.guild_id, "general")["id"])

    # -- URLs and patching -------------------------------------------------

    @property
    def api_base(self) -> str:
        """Value for ``discord.http.Route.BASE``."""
        return f"{self.url}/api/v{API_VERSION}"

    @property
    def gateway_url(self) -> str:
        """WebSocket URL for ``DiscordWebSocket.DEFAULT_GATEWAY``."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    def install(self) -> None:
        """Point discord.py (REST, webhooks/interactions and gateway) at this fake."""
        if self._saved_urls is None:
            self._saved_urls = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
        Route.BASE = self.api_base
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)

    def uninstall(self) -> None:
        """Restore discord.py's real URLs."""
        if self._saved_urls is not None:
            Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = self._saved_urls
            self._saved_urls = None

    async def start(self) -> DiscordFake:
        """Start the server and (by default) patch discord.py."""
        await super().start()
        if self.auto_install:
            self.install()
        return self

    async def stop(self) -> None:
        """Stop the server and restore discord.py's URLs."""
        await super().stop()
        self.uninstall()

    # -- world state -------------------------------------------------------

    def add_user(self, username: str, *, bot: bool = False, user_id: int | None = None) -> dict[str, Any]:
        """Register a user; returns the user payload."""
        uid = user_id or self.snowflake()
        user = {
            "id": str(uid),
            "username": username,
            "discriminator": "0",
            "global_name": username.title(),
            "avatar": None,
            "bot": bot,
            "public_flags": 0,
        }
        self.users[uid] = user
        for guild_id in self.guilds:
            self.add_member(guild_id, uid)
        return user

    def add_guild(self, name: str, *, guild_id: int | None = None, owner_id: int | None = None) -> dict[str, Any]:
        """Register a guild with an @everyone role and every known user as a member."""
        gid = guild_id or self.snowflake()
        everyone = {"id": str(gid), "name": "@everyone", "permissions": _BOT_PERMISSIONS, "position": 0,
                    "color": 0, "hoist": False, "managed": False, "mentionable": False, "flags": 0}  # fmt: skip
        self.guilds[gid] = {
            "id": str(gid),
            "name": name,
            "icon": None,
            "owner_id": str(owner_id or self.snowflake()),
            "roles": [everyone],
            "emojis": [],
            "stickers": [],
            "features": [],
            "preferred_locale": "en-US",
        }
        self.members[gid] = {}
        for uid in self.users:
            self.add_member(gid, uid)
        return self.guilds[gid]

    def add_member(self, guild_id: int, user_id: int, *, roles: list[int] | None = None) -> dict[str, Any]:
        """Make ``user_id`` a member of ``guild_id``."""
        member = {
            "user": self.users[user_id],
            "roles": [str(r) for r in roles or []],
            "joined_at": now_iso(),
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
        }
        self.members[guild_id][user_id] = member
        return member

    def add_role(self, guild_id: int, name: str, *, permissions: int = 0, role_id: int | None = None) -> dict[str, Any]:
        """Add a role to a guild."""
        role = {"id": str(role_id or self.snowflake()), "name": name, "permissions": str(permissions),
                "position": len(self.guilds[guild_id]["roles"]), "color": 0, "hoist": False,
                "managed": False, "mentionable": True, "flags": 0}  # fmt: skip
        self.guilds[guild_id]["roles"].append(role)
        return role

    def add_text_channel(
        self, guild_id: int, name: str, *, channel_id: int | None = None, parent_id: int | None = None
    ) -> dict[str, Any]:
        """Register a guild text channel (send CHANNEL_CREATE with ``announce_channel`` if already connected)."""
        cid = channel_id or self.snowflake()
        channel = {
            "id": str(cid),
            "type": CHANNEL_TEXT,
            "guild_id": str(guild_id),
            "name": name,
            "position": len(self.channels),
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": str(parent_id) if parent_id else None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
        }
        self.channels[cid] = channel
        return channel

    def add_thread(
        self,
        parent_id: int,
        name: str,
        *,
        thread_id: int | None = None,
        owner_id: int | None = None,
        private: bool = False,
    ) -> dict[str, Any]:
        """Register a thread under a text channel (announce it with ``announce_channel`` if connected)."""
        parent = self.channels[parent_id]
        tid = thread_id or self.snowflake()
        thread = {
            "id": str(tid),
            "type": CHANNEL_PRIVATE_THREAD if private else CHANNEL_PUBLIC_THREAD,
            "guild_id": parent["guild_id"],
            "parent_id": str(parent_id),
            "owner_id": str(owner_id or self.bot_id),
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": now_iso(),
                "locked": False,
                "create_timestamp": now_iso(),
            },
        }
        self.channels[tid] = thread
        return thread

    def dm_channel(self, user_id: int) -> dict[str, Any]:
        """The DM channel between the bot and ``user_id`` (created on first use)."""
        for channel in self.channels.values():
            if channel["type"] == CHANNEL_DM and channel["recipients"][0]["id"] == str(user_id):
                return channel
        cid = self.snowflake()
        channel = {"id": str(cid), "type": CHANNEL_DM, "recipients": [self.users[user_id]], "last_message_id": None}
        self.channels[cid] = channel
        return channel

    def add_attachment(
        self, filename: str, data: bytes, *, content_type: str = "application/octet-stream", channel_id: int = 0
    ) -> dict[str, Any]:
        """Store bytes and return an attachment payload whose ``url`` downloads them from the fake."""
        aid = self.snowflake()
        self.attachment_data[aid] = data
        url = f"{self.url}/attachments/{channel_id or self.channel_id}/{aid}/{filename}"
        return {
            "id": str(aid),
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }

    def channel_messages(self, channel_id: int) -> list[dict[str, Any]]:
        """Current messages of a channel, oldest first."""
        return [m for m in self.messages.values() if m["channel_id"] == str(channel_id)]

    def bot_messages(self, channel_id: int | None = None) -> list[dict[str, Any]]:
        """Current messages authored by the bot (optionally in one channel), oldest first."""
        return [
            m
            for m in self.messages.values()
            if m["author"]["id"] == str(self.bot_id) and (channel_id is None or m["channel_id"] == str(channel_id))
        ]

    # -- gateway injection ---------------------------------------------------

    async def wait_for_session(self, timeout: float = PATIENCE) -> GatewaySession:
        """Wait until a client has identified and received READY."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            ready = [s for s in self.sessions if s.ready and not s.ws.closed]
            if ready:
                return ready[-1]
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError("no discord.py client identified with the fake gateway")
            event = self._sessions_changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    async def dispatch(self, event: str, data: dict[str, Any], *, wait_for_client: bool = True, to: GatewaySession | None = None) -> None:
        """Send a DISPATCH event to every ready client, or only ``to`` (honouring their intents for MESSAGE_CREATE)."""
        if wait_for_client:
            await self.wait_for_session()
        for session in [s for s in self.sessions if s.ready and not s.ws.closed and (to is None or s is to)]:
            payload = self._filter_for_intents(session, event, data)
            if payload is not None:
                await session.send(OP_DISPATCH, payload, event)

    async def announce_channel(self, channel_id: int) -> None:
        """Send CHANNEL_CREATE / THREAD_CREATE for a channel added after the client connected."""
        channel = self.channels[channel_id]
        if channel["type"] in THREAD_TYPES:
            await self.dispatch("THREAD_CREATE", {**channel, "newly_created": True})
        else:
            await self.dispatch("CHANNEL_CREATE", channel)

    async def inject_message(
        self,
        content: str = "",
        *,
        channel_id: int | None = None,
        author_id: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
        mentions: list[int] | None = None,
        reference_id: int | None = None,
        to: GatewaySession | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Dispatch MESSAGE_CREATE from a user (default alice in #general) to every client or ``to``; mentions are parsed from content."""
        cid = channel_id or self.channel_id
        author = self.users[author_id or self.user_id]
        if cid not in self.channels:
            self.channels[cid] = {"id": str(cid), "type": CHANNEL_DM, "recipients": [author], "last_message_id": None}
        mention_ids = list(mentions or []) + [int(m) for m in _MENTION_RE.findall(content)]
        message = self._new_message(
            cid,
            author,
            content,
            attachments=attachments or [],
            mentions=[self.users[u] for u in dict.fromkeys(mention_ids) if u in self.users],
            mention_roles=_ROLE_MENTION_RE.findall(content),
            reference_id=reference_id,
            **extra,
        )
        await self.dispatch("MESSAGE_CREATE", self._gateway_message(message), to=to)
        return message

    async def replay_message(self, message: dict[str, Any]) -> None:
        """Dispatch MESSAGE_CREATE again for a stored message, as a resumed gateway session replays what it missed."""
        await self.dispatch("MESSAGE_CREATE", self._gateway_message(message))

    async def inject_interaction(
        self,
        interaction_type: int,
        data: dict[str, Any],
        *,
        channel_id: int | None = None,
        user_id: int | None = None,
        message: dict[str, Any] | None = None,
        to: GatewaySession | None = None,
    ) -> FakeInteraction:
        """Dispatch a raw INTERACTION_CREATE of any type (to every client, or only ``to``)."""
        cid = channel_id or self.channel_id
        channel = self.channels[cid]
        user = self.users[user_id or self.user_id]
        guild_id = channel.get("guild_id")
        payload: dict[str, Any] = {
            "id": str(self.snowflake()),
            "application_id": str(self.application_id),
            "type": interaction_type,
            "token": secrets.token_urlsafe(24),
            "version": 1,
            "data": data,
            "channel_id": str(cid),
            "channel": channel,
            "app_permissions": _BOT_PERMISSIONS,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": 26214400,
        }
        if guild_id:
            member = dict(self.members[int(guild_id)][int(user["id"])])
            payload.update(
                guild_id=guild_id,
                guild={"id": guild_id, "locale": "en-US", "features": []},
                guild_locale="en-US",
                member={**member, "permissions": _BOT_PERMISSIONS},
                authorizing_integration_owners={"0": guild_id},
                context=0,
            )
        else:
            payload.update(user=user, authorizing_integration_owners={"1": user["id"]}, context=1)
        if message is not None:
            payload["message"] = message
        interaction = FakeInteraction(payload)
        self.interactions[interaction.id] = interaction
        await self.dispatch("INTERACTION_CREATE", payload, to=to)
        return interaction

    async def inject_component_click(
        self,
        custom_id: str,
        *,
        message_id: int | None = None,
        user_id: int | None = None,
        component_type: int = 2,
        values: list[str] | None = None,
        to: GatewaySession | None = None,
    ) -> FakeInteraction:
        """Dispatch a button/select click on a stored message (default: the bot's latest message)."""
        if message_id is None:
            message = self.bot_messages()[-1]
        else:
            message = self.messages[message_id]
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component_type}
        if values is not None:
            data["values"] = values
        return await self.inject_interaction(
            3, data, channel_id=int(message["channel_id"]), user_id=user_id, message=message, to=to
        )

    async def inject_slash_command(
        self,
        name: str,
        options: dict[str, Any] | list[dict[str, Any]] | None = None,
        *,
        channel_id: int | None = None,
        user_id: int | None = None,
        command_guild_id: int | None = None,
        resolved: dict[str, Any] | None = None,
        to: GatewaySession | None = None,
    ) -> FakeInteraction:
        """Dispatch an application (slash) command invocation; dict options get their types inferred."""
        cid = channel_id or self.channel_id
        guild_id = self.channels[cid].get("guild_id")
        command = None
        if guild_id:
            command = next((c for c in self.guild_commands.get(int(guild_id), []) if c["name"] == name), None)
            if command is not None:
                command_guild_id = command_guild_id or int(guild_id)
        command = command or next((c for c in self.global_commands if c["name"] == name), None)
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self.snowflake()),
            "name": name,
            "type": 1,
            "options": _command_options(options),
        }
        if command_guild_id:
            data["guild_id"] = str(command_guild_id)
        if resolved:
            data["resolved"] = resolved
        return await self.inject_interaction(2, data, channel_id=cid, user_id=user_id, to=to)

    async def disconnect_clients(self, code: int = 4000) -> None:
        """Close every gateway connection (discord.py will reconnect and RESUME)."""
        for session in list(self.sessions):
            await session.ws.close(code=code)

    # -- internals: messages ------------------------------------------------

    def _new_message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        reference_id: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
        mentions: list[dict[str, Any]] | None = None,
        mention_roles: list[str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Create and store a message payload as the REST API returns it."""
        message: dict[str, Any] = {
            "id": str(self.snowflake()),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": mentions or [],
            "mention_roles": mention_roles or [],
            "attachments": attachments or [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
        }
        if reference_id is not None:
            ref = self.messages.get(reference_id)
            message["type"] = 19
            message["message_reference"] = {"message_id": str(reference_id), "channel_id": str(channel_id)}
            if ref is not None:
                message["referenced_message"] = {k: v for k, v in ref.items() if k != "referenced_message"}
        message.update(extra)
        self.messages[int(message["id"])] = message
        channel = self.channels.get(channel_id)
        if channel is not None:
            channel["last_message_id"] = message["id"]
            if channel["type"] in THREAD_TYPES:
                channel["message_count"] += 1
        return message

    def _gateway_message(self, message: dict[str, Any]) -> dict[str, Any]:
        """Add the gateway-only ``guild_id`` and ``member`` fields to a message."""
        channel = self.channels.get(int(message["channel_id"])) or {}
        guild_id = channel.get("guild_id")
        if not guild_id:
            return message
        member = self.members[int(guild_id)].get(int(message["author"]["id"]))
        payload = {**message, "guild_id": guild_id}
        if member is not None:
            payload["member"] = {k: v for k, v in member.items() if k != "user"}
        return payload

    def _filter_for_intents(self, session: GatewaySession, event: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Drop or blank MESSAGE_CREATE the way Discord does for missing intents."""
        if not self.enforce_intents or event != "MESSAGE_CREATE":
            return data
        in_guild = "guild_id" in data
        if not session.intents & (INTENT_GUILD_MESSAGES if in_guild else INTENT_DIRECT_MESSAGES):
            return None
        exempt = (
            not in_guild
            or data["author"]["id"] == str(self.bot_id)
            or any(m["id"] == str(self.bot_id) for m in data.get("mentions", []))
        )
        if session.intents & INTENT_MESSAGE_CONTENT or exempt:
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

    def _message_fields(self, params: dict[str, Any], files: dict[str, Any], channel_id: int) -> dict[str, Any]:
        """Message fields from a create/edit body (JSON or multipart with payload_json)."""
        fields: dict[str, Any] = {}
        for key in ("content", "embeds", "components", "flags", "tts", "sticker_ids", "poll", "allowed_mentions"):
            if key in params and params[key] is not None:
                fields[key] = params[key]
        uploaded = [
            self.add_attachment(f.filename or name, f.data, content_type=f.content_type or "application/octet-stream",
                                channel_id=channel_id)
            for name, f in sorted(files.items())
        ]  # fmt: skip
        if "attachments" in params or uploaded:
            kept = [a for a in params.get("attachments") or [] if "url" in a]
            fields["attachments"] = kept + uploaded
        return fields

    def _validate_content(self, fields: dict[str, Any], *, creating: bool) -> web.StreamResponse | None:
        content = fields.get("content") or ""
        if len(content) > MAX_CONTENT:
            return self._error_response(400, "Invalid Form Body", code=50035, errors={
                "content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                                         "message": f"Must be {MAX_CONTENT} or fewer in length."}]}})  # fmt: skip
        has_body = any(fields.get(k) for k in ("content", "embeds", "attachments", "components", "sticker_ids", "poll"))
        if creating and not has_body:
            return self._error_response(400, "Cannot send an empty message", code=50006)
        return None

    def _create_bot_message(self, channel_id: int, fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
        fields = {k: v for k, v in fields.items() if k != "allowed_mentions"}
        content = fields.pop("content", "")
        reference = fields.pop("message_reference", None) or {}
        ref_id = reference.get("message_id")
        fields["flags"] = int(fields.get("flags") or 0)
        return self._new_message(
            channel_id,
            self.bot_user,
            content,
            reference_id=int(ref_id) if ref_id else None,
            **fields,
            **extra,
        )

    def _edit_message(self, message: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in fields.items() if k not in ("allowed_mentions", "tts", "sticker_ids")}
        message.update(fields)
        message["edited_timestamp"] = now_iso()
        return message

    async def _echo(self, message: dict[str, Any]) -> None:
        """Deliver the bot's own non-ephemeral message over the gateway, like Discord does."""
        if self.echo_own_messages and not int(message.get("flags") or 0) & FLAG_EPHEMERAL:
            await self.dispatch("MESSAGE_CREATE", self._gateway_message(message), wait_for_client=False)

    # -- HTTP plumbing -----------------------------------------------------

    def _error_response(self, status: int, message: str, *, code: int = 0, **extra: Any) -> web.StreamResponse:
        return json_response({"message": message, "code": code, **extra}, status=status)

    def _rate_limit_response(self, retry_after: float) -> web.StreamResponse:
        # discord.py treats a 429 without a "Via" header as a Cloudflare ban and raises instead of retrying.
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(math.ceil(retry_after)),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
            "X-RateLimit-Reset-After": f"{retry_after:.3f}",
            "X-RateLimit-Bucket": "fake-bucket",
            "X-RateLimit-Scope": "user",
        }
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
        return json_response(body, status=429, headers=headers)

    def _decode_params(self, method: str, params: dict[str, Any], content_type: str) -> dict[str, Any]:
        """Merge multipart ``payload_json`` into the parameters."""
        if isinstance(params.get("payload_json"), str):
            params = {**params, **json.loads(params.pop("payload_json"))}
        return params

    def _setup_routes(self, app: web.Application) -> None:
        api = f"/api/v{API_VERSION}"
        routes: list[tuple[str, str, str, Any]] = [
            ("GET", "/gateway", "get_gateway", self._get_gateway),
            ("GET", "/gateway/bot", "get_bot_gateway", self._get_gateway),
            ("GET", "/users/@me", "get_me", self._get_me),
            ("POST", "/users/@me/channels", "start_private_message", self._create_dm),
            ("GET", "/users/{user_id}", "get_user", self._get_user),
            ("GET", "/oauth2/applications/@me", "application_info", self._application_info),
            ("GET", "/channels/{channel_id}", "get_channel", self._get_channel),
            ("POST", "/channels/{channel_id}/messages", "send_message", self._send_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", "get_message", self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", "edit_message", self._patch_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", "delete_message", self._delete_message),
            ("POST", "/channels/{channel_id}/typing", "send_typing", self._no_content),
            ("POST", "/channels/{channel_id}/messages/{message_id}/threads", "start_thread_with_message",
             self._thread_from_message),
            ("POST", "/channels/{channel_id}/threads", "start_thread_without_message", self._thread_without_message),
            ("PUT", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me", "add_reaction",
             self._add_reaction),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me", "remove_own_reaction",
             self._no_content),
            ("PUT", "/applications/{application_id}/commands", "bulk_upsert_global_commands", self._put_commands),
            ("GET", "/applications/{application_id}/commands", "get_global_commands", self._get_commands),
            ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", "bulk_upsert_guild_commands",
             self._put_commands),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", "get_guild_commands",
             self._get_commands),
            ("POST", "/interactions/{interaction_id}/{token}/callback", "create_interaction_response",
             self._interaction_callback),
            ("POST", "/webhooks/{application_id}/{token}", "create_followup", self._create_followup),
            ("GET", "/webhooks/{application_id}/{token}/messages/{message_id}", "get_webhook_message",
             self._webhook_message),
            ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", "edit_webhook_message",
             self._webhook_message),
            ("DELETE", "/webhooks/{application_id}/{token}/messages/{message_id}", "delete_webhook_message",
             self._webhook_message),
        ]  # fmt: skip
        for http_method, path, name, handler in routes:
            app.router.add_route(http_method, api + path, handler, name=name)
        app.router.add_route("*", api + "/{tail:.*}", self._unknown_route, name="unknown_route")
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._download_attachment,
                           name="download_attachment")  # fmt: skip
        app.router.add_get("/gateway", self._gateway)

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bot {self.token}"

    def _call(self, request: web.Request) -> RecordedCall:
        return request[CALL_KEY]

    # -- REST handlers -----------------------------------------------------

    async def _get_gateway(self, request: web.Request) -> web.StreamResponse:
        limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
        return json_response({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _get_me(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return self._error_response(401, "401: Unauthorized")
        return json_response({**self.bot_user, "verified": True, "mfa_enabled": False, "flags": 0})

    async def _get_user(self, request: web.Request) -> web.StreamResponse:
        user = self.users.get(int(request.match_info["user_id"]))
        if user is None:
            return self._error_response(404, "Unknown User", code=10013)
        return json_response(user)

    async def _create_dm(self, request: web.Request) -> web.StreamResponse:
        user_id = int(self._call(request).params["recipient_id"])
        if user_id not in self.users:
            return self._error_response(404, "Unknown User", code=10013)
        return json_response(self.dm_channel(user_id))

    async def _application_info(self, request: web.Request) -> web.StreamResponse:
        return json_response(
            {
                "id": str(self.application_id),
                "name": "Bridge Test App",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": self.user,
                "verify_key": "0" * 64,
                "flags": 0,
                "bot": self.bot_user,
            }
        )

    async def _get_channel(self, request: web.Request) -> web.StreamResponse:
        channel = self.channels.get(int(request.match_info["channel_id"]))
        if channel is None:
            return self._error_response(404, "Unknown Channel", code=10003)
        return json_response(channel)

    async def _send_message(self, request: web.Request) -> web.StreamResponse:
        call = self._call(request)
        channel_id = int(request.match_info["channel_id"])
        if channel_id not in self.channels:
            return self._error_response(404, "Unknown Channel", code=10003)
        fields = self._message_fields(call.params, call.files, channel_id)
        if error := self._validate_content(fields, creating=True):
            return error
        if call.params.get("message_reference"):
            fields["message_reference"] = call.params["message_reference"]
        message = self._create_bot_message(channel_id, fields)
        await self._echo(message)
        return json_response(message)

    def _find_message(self, request: web.Request) -> dict[str, Any] | None:
        message = self.messages.get(int(request.match_info["message_id"]))
        if message is None or message["channel_id"] != request.match_info["channel_id"]:
            return None
        return message

    async def _get_message(self, request: web.Request) -> web.StreamResponse:
        message = self._find_message(request)
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        return json_response(message)

    async def _patch_message(self, request: web.Request) -> web.StreamResponse:
        call = self._call(request)
        message = self._find_message(request)
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        if message["author"]["id"] != str(self.bot_id) and set(call.params) - {"flags"}:
            return self._error_response(403, "Cannot edit a message authored by another user", code=50005)
        fields = self._message_fields(call.params, call.files, int(message["channel_id"]))
        if error := self._validate_content(fields, creating=False):
            return error
        edited = self._edit_message(message, fields)
        await self.dispatch("MESSAGE_UPDATE", self._gateway_message(edited), wait_for_client=False)
        return json_response(edited)

    async def _delete_message(self, request: web.Request) -> web.StreamResponse:
        message = self._find_message(request)
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        if message["author"]["id"] != str(self.bot_id):  # someone else's message, as Discord decides it
            if self.channels.get(int(message["channel_id"]), {}).get("type") == CHANNEL_DM:
                return self._error_response(403, "Cannot execute action on a DM channel", code=50003)
            if not self.manage_messages:
                return self._error_response(403, "Missing Permissions", code=50013)
        del self.messages[int(message["id"])]
        return web.Response(status=204)

    async def _no_content(self, request: web.Request) -> web.StreamResponse:
        return web.Response(status=204)

    async def _add_reaction(self, request: web.Request) -> web.StreamResponse:
        message = self._find_message(request)
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        self.reactions.append({"message_id": message["id"], "emoji": request.match_info["emoji"]})
        return web.Response(status=204)

    async def _create_thread(self, parent_id: int, params: dict[str, Any], thread_id: int | None) -> dict[str, Any]:
        private = int(params.get("type") or CHANNEL_PUBLIC_THREAD) == CHANNEL_PRIVATE_THREAD
        thread = self.add_thread(parent_id, str(params.get("name") or "thread"), thread_id=thread_id, private=private)
        if params.get("auto_archive_duration"):
            thread["thread_metadata"]["auto_archive_duration"] = int(params["auto_archive_duration"])
        await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True}, wait_for_client=False)
        return thread

    async def _thread_from_message(self, request: web.Request) -> web.StreamResponse:
        message = self._find_message(request)
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        if int(message["id"]) in self.channels:
            return self._error_response(400, "A thread has already been created for this message", code=160004)
        parent_id = int(request.match_info["channel_id"])
        thread = await self._create_thread(parent_id, self._call(request).params, int(message["id"]))
        message["thread"] = thread
        return json_response(thread)

    async def _thread_without_message(self, request: web.Request) -> web.StreamResponse:
        parent_id = int(request.match_info["channel_id"])
        if parent_id not in self.channels:
            return self._error_response(404, "Unknown Channel", code=10003)
        return json_response(await self._create_thread(parent_id, self._call(request).params, None))

    def _command_list(self, request: web.Request) -> list[dict[str, Any]]:
        guild_id = request.match_info.get("guild_id")
        if guild_id is None:
            return self.global_commands
        return self.guild_commands.setdefault(int(guild_id), [])

    async def _put_commands(self, request: web.Request) -> web.StreamResponse:
        body = self._call(request).params.get("_json") or []
        existing = {c["name"]: c for c in self._command_list(request)}
        guild_id = request.match_info.get("guild_id")
        commands = []
        for spec in body:
            old = existing.get(spec["name"], {})
            command = {
                "type": 1,
                "description": "",
                "options": [],
                "default_member_permissions": None,
                "dm_permission": True,
                "nsfw": False,
                **spec,
                "id": old.get("id", str(self.snowflake())),
                "application_id": str(self.application_id),
                "version": str(self.snowflake()),
            }
            if guild_id:
                command["guild_id"] = guild_id
            commands.append(command)
        self._command_list(request)[:] = commands
        return json_response(commands)

    async def _get_commands(self, request: web.Request) -> web.StreamResponse:
        return json_response(self._command_list(request))

    async def _interaction_callback(self, request: web.Request) -> web.StreamResponse:
        call = self._call(request)
        interaction = self.interactions.get(int(request.match_info["interaction_id"]))
        if interaction is None or interaction.token != request.match_info["token"]:
            return self._error_response(404, "Unknown interaction", code=10062)
        if interaction.responses:
            return self._error_response(400, "Interaction has already been acknowledged.", code=40060)
        kind = int(call.params["type"])
        data = call.params.get("data") or {}
        interaction.responses.append({"type": kind, "data": data})
        message = await self._apply_callback(interaction, kind, data, call)
        if call.params.get("with_response") not in ("1", "true", "True"):
            return web.Response(status=204)
        flags = int((message or {}).get("flags") or 0)
        body: dict[str, Any] = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.payload["type"],
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(flags & FLAG_EPHEMERAL),
            }
        }
        if message is not None:
            body["interaction"]["response_message_id"] = message["id"]
            body["resource"] = {"type": kind, "message": message}
        return json_response(body)

    async def _apply_callback(
        self, interaction: FakeInteraction, kind: int, data: dict[str, Any], call: RecordedCall
    ) -> dict[str, Any] | None:
        """Create or edit the message an interaction response implies."""
        source = interaction.payload.get("message")
        metadata = {
            "id": str(interaction.id),
            "type": interaction.payload["type"],
            "user": interaction.payload.get("member", {}).get("user") or interaction.payload.get("user"),
            "authorizing_integration_owners": interaction.payload.get("authorizing_integration_owners", {}),
        }
        if kind in (4, 5):
            fields = self._message_fields(data, call.files, interaction.channel_id)
            if kind == 5:
                fields = {"flags": int(data.get("flags") or 0) | FLAG_LOADING}
            message = self._create_bot_message(
                interaction.channel_id, fields, interaction_metadata=metadata, webhook_id=str(self.application_id)
            )
            interaction.original_message_id = int(message["id"])
            await self._echo(message)
            return message
        if kind in (6, 7) and source is not None:
            stored = self.messages.get(int(source["id"]), source)
            interaction.original_message_id = int(stored["id"])
            if kind == 7:
                return self._edit_message(stored, self._message_fields(data, call.files, interaction.channel_id))
            return stored
        return None

    def _interaction_by_token(self, token: str) -> FakeInteraction | None:
        return next((i for i in self.interactions.values() if i.token == token), None)

    async def _create_followup(self, request: web.Request) -> web.StreamResponse:
        call = self._call(request)
        interaction = self._interaction_by_token(request.match_info["token"])
        if interaction is None:
            return self._error_response(404, "Unknown Webhook", code=10015)
        fields = self._message_fields(call.params, call.files, interaction.channel_id)
        if error := self._validate_content(fields, creating=True):
            return error
        message = self._create_bot_message(interaction.channel_id, fields, webhook_id=str(self.application_id))
        await self._echo(message)
        if call.params.get("wait") in ("1", "true", "True"):
            return json_response(message)
        return web.Response(status=204)

    async def _webhook_message(self, request: web.Request) -> web.StreamResponse:
        call = self._call(request)
        interaction = self._interaction_by_token(request.match_info["token"])
        if interaction is None:
            return self._error_response(404, "Unknown Webhook", code=10015)
        raw_id = request.match_info["message_id"]
        message_id = interaction.original_message_id if raw_id == "@original" else int(raw_id)
        message = self.messages.get(message_id) if message_id else None
        if message is None:
            return self._error_response(404, "Unknown Message", code=10008)
        if request.method == "DELETE":
            del self.messages[message_id]
            return web.Response(status=204)
        if request.method == "PATCH":
            fields = self._message_fields(call.params, call.files, int(message["channel_id"]))
            if error := self._validate_content(fields, creating=False):
                return error
            message = self._edit_message(message, fields)
            message["flags"] = int(message.get("flags") or 0) & ~FLAG_LOADING
        return json_response(message)

    async def _unknown_route(self, request: web.Request) -> web.StreamResponse:
        return self._error_response(404, "404: Not Found")

    async def _download_attachment(self, request: web.Request) -> web.StreamResponse:
        data = self.attachment_data.get(int(request.match_info["attachment_id"]))
        if data is None:
            raise web.HTTPNotFound()
        return web.Response(body=data, content_type="application/octet-stream")

    # -- gateway -------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        """Serve one gateway connection: HELLO, IDENTIFY/RESUME, heartbeats, member requests."""
        ws = web.WebSocketResponse(timeout=1.0, max_msg_size=0)
        await ws.prepare(request)
        session = GatewaySession(ws)
        self.sessions.append(session)
        try:
            await session.send(OP_HELLO, {"heartbeat_interval": self.heartbeat_interval_ms})
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    await self._on_gateway_frame(session, json.loads(msg.data))
        finally:
            session.ready = False
            self.sessions.remove(session)
            self._notify_sessions()
        return ws

    async def _on_gateway_frame(self, session: GatewaySession, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d")
        self.record(RecordedCall(method=f"gateway.{_OP_NAMES.get(op, op)}", params={"d": data}, http_method="WS",
                                 path="/gateway"))  # fmt: skip
        if op == OP_HEARTBEAT:
            await session.send(OP_HEARTBEAT_ACK)
        elif op == OP_IDENTIFY:
            if data.get("token") != self.token:
                await session.ws.close(code=4004, message=b"Authentication failed.")
                return
            session.intents = int(data.get("intents") or 0)
            self._identified[session.session_id] = session.intents
            await self._send_ready(session, data.get("shard") or [0, 1])
        elif op == OP_RESUME:
            if data.get("session_id") not in self._identified or data.get("token") != self.token:
                await session.send(OP_INVALID_SESSION, False)
                return
            session.session_id = data["session_id"]
            session.intents = self._identified[session.session_id]
            session.seq = int(data.get("seq") or 0)
            session.ready = True
            self._notify_sessions()
            await session.send(OP_DISPATCH, {}, "RESUMED")
        elif op == OP_REQUEST_MEMBERS:
            guild_id = int(data["guild_id"])
            chunk = {"guild_id": str(guild_id), "members": list(self.members.get(guild_id, {}).values()),
                     "chunk_index": 0, "chunk_count": 1, "not_found": [], "nonce": data.get("nonce")}  # fmt: skip
            await session.send(OP_DISPATCH, chunk, "GUILD_MEMBERS_CHUNK")

    async def _send_ready(self, session: GatewaySession, shard: list[int]) -> None:
        ready = {
            "v": API_VERSION,
            "user": {**self.bot_user, "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": g["id"], "unavailable": True} for g in self.guilds.values()],
            "session_id": session.session_id,
            "resume_gateway_url": self.gateway_url,
            "shard": shard,
            "application": {"id": str(self.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
        }
        await session.send(OP_DISPATCH, ready, "READY")
        for guild_id in self.guilds:
            await session.send(OP_DISPATCH, self._guild_create(guild_id), "GUILD_CREATE")
        session.ready = True
        self._notify_sessions()

    def _guild_create(self, guild_id: int) -> dict[str, Any]:
        in_guild = [c for c in self.channels.values() if c.get("guild_id") == str(guild_id)]
        members = list(self.members[guild_id].values())
        return {
            **self.guilds[guild_id],
            "unavailable": False,
            "large": False,
            "member_count": len(members),
            "members": members,
            "channels": [c for c in in_guild if c["type"] not in THREAD_TYPES],
            "threads": [c for c in in_guild if c["type"] in THREAD_TYPES],
            "presences": [],
            "voice_states": [],
            "joined_at": now_iso(),
        }

    def _notify_sessions(self) -> None:
        self._sessions_changed.set()
        self._sessions_changed = asyncio.Event()

    async def _before_stop(self) -> None:
        for session in list(self.sessions):
            with contextlib.suppress(Exception):
                await session.ws.close(code=1001)


def _command_options(options: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Turn ``{"name": value}`` into typed application-command options (str 3, int 4, bool 5, float 10)."""
    if options is None:
        return []
    if isinstance(options, list):
        return options
    typed = []
    for name, value in options.items():
        if isinstance(value, bool):
            kind = 5
        elif isinstance(value, int):
            kind = 4
        elif isinstance(value, float):
            kind = 10
        else:
            kind = 3
        typed.append({"name": name, "type": kind, "value": value})
    return typed
