"""A fake Telegram Bot API server for python-telegram-bot (polling, files, callbacks, webhooks)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .base import CALL_KEY, FakeServer, HttpResult, http_post, json_response

# Parameters whose form values are plain strings and must never be JSON-decoded.
_STRING_PARAMS = frozenset(
    {
        "text", "caption", "parse_mode", "callback_query_id", "inline_message_id", "file_id", "url",
        "secret_token", "action", "title", "description", "question", "emoji", "name", "query",
        "explanation", "address", "sticker", "short_description", "language_code", "message_effect_id",
    }
)  # fmt: skip

_MAX_TEXT = 4096
_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)

# A 1x1 transparent PNG, the default payload for pushed photos.
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (Telegram's unit for entity offsets)."""
    return len(text.encode("utf-16-le")) // 2


def auto_entities(text: str) -> list[dict[str, Any]]:
    """Entities Telegram would add: a leading ``/command`` and ``@mentions``."""
    entities = []
    for match in re.finditer(r"(?<![\w/])/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?|(?<!\w)@[A-Za-z0-9_]{3,}", text):
        kind = "bot_command" if match.group().startswith("/") else "mention"
        if kind == "bot_command" and match.start() != 0:
            continue
        entities.append(
            {
                "type": kind,
                "offset": utf16_len(text[: match.start()]),
                "length": utf16_len(match.group()),
            }
        )
    return entities


@dataclass
class FakeFile:
    """A file the fake can serve through getFile and the file download URL."""

    file_id: str
    file_unique_id: str
    file_path: str
    data: bytes

    def as_api(self) -> dict[str, Any]:
        """The ``File`` object returned by getFile."""
        return {
            "file_id": self.file_id,
            "file_unique_id": self.file_unique_id,
            "file_size": len(self.data),
            "file_path": self.file_path,
        }


class TelegramFake(FakeServer):
    """Fake Bot API: point PTB at it with ``.base_url(fake.base_url).base_file_url(fake.base_file_url)``."""

    def __init__(
        self,
        token: str = "123456789:TEST-token_abcdefghijklmnopqrstuvw",
        *,
        bot_username: str = "bridge_test_bot",
        bot_first_name: str = "Bridge Test Bot",
        max_poll_timeout: float = 1.0,
    ) -> None:
        super().__init__()
        self.token = token
        self.bot_user: dict[str, Any] = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": bot_first_name,
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.max_poll_timeout = max_poll_timeout
        self.chats: dict[int, dict[str, Any]] = {}
        self.users: dict[int, dict[str, Any]] = {}
        self.files: dict[str, FakeFile] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.pending_updates: list[dict[str, Any]] = []
        self.delivered_updates: dict[int, dict[str, Any]] = {}
        """Every update getUpdates handed out, by id (for redelivering them)."""
        self.webhook: dict[str, Any] = {"url": "", "has_custom_certificate": False, "pending_update_count": 0}
        self.commands: dict[str, list[dict[str, Any]]] = {}
        self.topics: dict[int, list[dict[str, Any]]] = {}
        """The forum topics the bot opened, by chat."""
        self._update_ids = itertools.count(1)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._file_ids = itertools.count(1)
        self._callback_ids = itertools.count(1)
        self._updates_changed = asyncio.Event()

    # -- URLs ------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """Value for ``ApplicationBuilder().base_url(...)``; PTB appends the token."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """Value for ``ApplicationBuilder().base_file_url(...)``."""
        return f"{self.url}/file/bot"

    @property
    def api_url(self) -> str:
        """Full method prefix, e.g. ``{api_url}/sendMessage``."""
        return f"{self.base_url}{self.token}"

    # -- world state -----------------------------------------------------

    def add_user(
        self,
        user_id: int,
        first_name: str = "Test",
        *,
        username: str | None = None,
        last_name: str | None = None,
        is_bot: bool = False,
        language_code: str | None = "en",
    ) -> dict[str, Any]:
        """Register (or replace) a user; returns the ``User`` object."""
        user: dict[str, Any] = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
        for key, value in (("last_name", last_name), ("username", username), ("language_code", language_code)):
            if value is not None:
                user[key] = value
        self.users[user_id] = user
        return user

    def add_chat(
        self,
        chat_id: int,
        chat_type: str | None = None,
        *,
        title: str | None = None,
        is_forum: bool = False,
        username: str | None = None,
        first_name: str | None = None,
    ) -> dict[str, Any]:
        """Register a chat (type defaults to private for positive ids, supergroup otherwise)."""
        chat_type = chat_type or ("private" if chat_id > 0 else "supergroup")
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = first_name or self.users.get(chat_id, {}).get("first_name", "Test")
        else:
            chat["title"] = title or f"Chat {chat_id}"
        if is_forum:
            chat["is_forum"] = True
        if username:
            chat["username"] = username
        self.chats[chat_id] = chat
        return chat

    def chat(self, chat_id: int) -> dict[str, Any]:
        """The chat object for ``chat_id``, auto-registering unknown chats."""
        return self.chats.get(chat_id) or self.add_chat(chat_id)

    def user(self, user_id: int) -> dict[str, Any]:
        """The user object for ``user_id``, auto-registering unknown users."""
        return self.users.get(user_id) or self.add_user(user_id, f"User{user_id}", username=f"user{user_id}")

    def add_file(self, data: bytes, *, ext: str = "jpg", folder: str = "photos") -> FakeFile:
        """Store bytes the bot can fetch with getFile + download."""
        n = next(self._file_ids)
        fake = FakeFile(f"FILE{n:06d}", f"UNIQ{n:06d}", f"{folder}/file_{n}.{ext}", data)
        self.files[fake.file_id] = fake
        return fake

    def bot_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Current state of messages sent by the bot (optionally in one chat), oldest first."""
        return [
            m
            for (cid, _), m in sorted(self.messages.items())
            if m.get("from", {}).get("id") == self.bot_user["id"] and (chat_id is None or cid == chat_id)
        ]

    # -- pushing updates -------------------------------------------------

    def push_update(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue a raw update for getUpdates (assigns ``update_id``)."""
        update = {"update_id": next(self._update_ids), **update}
        self.pending_updates.append(update)
        self._wake_pollers()
        return update

    def build_message(
        self,
        chat_id: int,
        user_id: int,
        text: str | None = None,
        *,
        message_thread_id: int | None = None,
        reply_to_message_id: int | None = None,
        entities: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Build and store a user's ``Message`` object without queueing it."""
        chat = self.chat(chat_id)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": chat,
            "from": self.user(user_id),
        }
        if chat["type"] == "supergroup" and message_thread_id is not None:
            message["message_thread_id"] = message_thread_id
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        if text is not None:
            message["text"] = text
            ents = auto_entities(text) if entities is None else entities
            if ents:
                message["entities"] = ents
        if reply_to_message_id is not None:
            message["reply_to_message"] = self._reply_target(chat_id, reply_to_message_id)
        message.update(extra)
        self.messages[(chat_id, message["message_id"])] = message
        return message

    def push_message(self, chat_id: int, user_id: int, text: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Queue a message update from ``user_id`` in ``chat_id``; returns the Message object."""
        message = self.build_message(chat_id, user_id, text, **kwargs)
        self.push_update({"message": message})
        return message

    def push_photo(
        self,
        chat_id: int,
        user_id: int,
        data: bytes = TINY_PNG,
        *,
        caption: str | None = None,
        width: int = 1,
        height: int = 1,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Queue a photo message whose file is downloadable via getFile; returns the Message."""
        stored = self.add_file(data, ext="jpg", folder="photos")
        size = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "width": width,
            "height": height,
            "file_size": len(data),
        }
        extra: dict[str, Any] = {"photo": [size]}
        if caption is not None:
            extra["caption"] = caption
        return self.push_message(chat_id, user_id, None, **extra, **kwargs)

    def push_document(
        self,
        chat_id: int,
        user_id: int,
        data: bytes,
        *,
        file_name: str = "file.txt",
        mime_type: str = "text/plain",
        caption: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Queue a document message whose file is downloadable via getFile; returns the Message."""
        ext = file_name.rsplit(".", 1)[-1] if "." in file_name else "bin"
        stored = self.add_file(data, ext=ext, folder="documents")
        document = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": len(data),
        }
        extra: dict[str, Any] = {"document": document}
        if caption is not None:
            extra["caption"] = caption
        return self.push_message(chat_id, user_id, None, **extra, **kwargs)

    def push_callback_query(
        self,
        chat_id: int,
        user_id: int,
        data: str,
        *,
        message_id: int | None = None,
    ) -> dict[str, Any]:
        """Queue a button press on message ``message_id`` (default: the bot's latest in the chat)."""
        if message_id is None:
            sent = self.bot_messages(chat_id)
            message = sent[-1] if sent else self._synthetic_bot_message(chat_id)
        else:
            message = self.messages.get((chat_id, message_id)) or self._synthetic_bot_message(chat_id, message_id)
        query = {
            "id": str(next(self._callback_ids)),
            "from": self.user(user_id),
            "chat_instance": str(abs(chat_id)),
            "message": message,
            "data": data,
        }
        self.push_update({"callback_query": query})
        return query

    def redeliver(self) -> list[dict[str, Any]]:
        """Queue every update handed out so far again, as Telegram does for updates a crashed bot never confirmed."""
        again = [u for i, u in sorted(self.delivered_updates.items()) if all(p["update_id"] != i for p in self.pending_updates)]
        self.pending_updates = sorted(self.pending_updates + again, key=lambda u: u["update_id"])
        self._wake_pollers()
        return again

    # -- webhook-mode helper ----------------------------------------------

    async def post_webhook_update(
        self, url: str, update: dict[str, Any], *, secret_token: str | None = None
    ) -> HttpResult:
        """POST an update (``update_id`` added if missing) to a bot's webhook URL."""
        if "update_id" not in update:
            update = {"update_id": next(self._update_ids), **update}
        return await post_webhook_update(url, update, secret_token=secret_token)

    # -- internals -------------------------------------------------------

    def _next_message_id(self, chat_id: int) -> int:
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    def _reply_target(self, chat_id: int, message_id: int) -> dict[str, Any]:
        target = dict(self.messages.get((chat_id, message_id)) or self._synthetic_bot_message(chat_id, message_id))
        target.pop("reply_to_message", None)
        return target

    def _synthetic_bot_message(self, chat_id: int, message_id: int | None = None) -> dict[str, Any]:
        return {
            "message_id": message_id or self._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": self.chat(chat_id),
            "from": self.bot_user,
            "text": "",
        }

    def _wake_pollers(self) -> None:
        self._updates_changed.set()
        self._updates_changed = asyncio.Event()

    async def _before_stop(self) -> None:
        self._wake_pollers()

    def _method_name(self, request: web.Request) -> str | None:
        return request.match_info.get("method")

    def _decode_params(self, method: str, params: dict[str, Any], content_type: str) -> dict[str, Any]:
        """PTB sends non-string values JSON-encoded inside form fields; decode them back."""
        if content_type == "application/json":
            return params
        decoded: dict[str, Any] = {}
        for key, value in params.items():
            if isinstance(value, str) and key not in _STRING_PARAMS:
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            decoded[key] = value
        return decoded

    def _rate_limit_response(self, retry_after: float) -> web.StreamResponse:
        seconds = max(1, round(retry_after))
        return json_response(
            {
                "ok": False,
                "error_code": 429,
                "description": f"Too Many Requests: retry after {seconds}",
                "parameters": {"retry_after": seconds},
            },
            status=429,
        )

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        return json_response({"ok": False, "error_code": status, "description": message}, status=status)

    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/bot{token}/{method}", self._handle_method)
        app.router.add_get("/file/bot{token}/{path:.+}", self._handle_download)

    async def _handle_method(self, request: web.Request) -> web.StreamResponse:
        """Dispatch one Bot API method call."""
        if request.match_info["token"] != self.token:
            return self._error_response(401, "Unauthorized")
        call = request[CALL_KEY]
        name = call.method
        handler = getattr(self, f"_api_{name}", None)
        if handler is None:
            return self._error_response(404, "Not Found")
        result = handler(call.params, call)
        if asyncio.iscoroutine(result):
            result = await result
        if isinstance(result, web.StreamResponse):
            return result
        return json_response({"ok": True, "result": result})

    async def _handle_download(self, request: web.Request) -> web.StreamResponse:
        """Serve file bytes at ``/file/bot<token>/<file_path>``."""
        if request.match_info["token"] != self.token:
            raise web.HTTPUnauthorized()
        path = request.match_info["path"]
        for stored in self.files.values():
            if stored.file_path == path:
                return web.Response(body=stored.data, content_type="application/octet-stream")
        raise web.HTTPNotFound()

    def _bad_request(self, description: str) -> web.StreamResponse:
        return self._error_response(400, f"Bad Request: {description}")

    # -- Bot API methods -------------------------------------------------

    def _api_getMe(self, params: dict[str, Any], call: Any) -> Any:
        return self.bot_user

    async def _api_getUpdates(self, params: dict[str, Any], call: Any) -> Any:
        offset = int(params.get("offset") or 0)
        limit = int(params.get("limit") or 100)
        timeout = min(float(params.get("timeout") or 0), self.max_poll_timeout)
        if offset:
            self.pending_updates = [u for u in self.pending_updates if u["update_id"] >= offset]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.pending_updates and not self.closing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            event = self._updates_changed
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                break
        handed = self.pending_updates[:limit]
        self.delivered_updates.update((u["update_id"], u) for u in handed)
        return handed

    def _api_deleteWebhook(self, params: dict[str, Any], call: Any) -> Any:
        self.webhook["url"] = ""
        if params.get("drop_pending_updates"):
            self.pending_updates.clear()
        return True

    def _api_setWebhook(self, params: dict[str, Any], call: Any) -> Any:
        self.webhook["url"] = params.get("url", "")
        return True

    def _api_getWebhookInfo(self, params: dict[str, Any], call: Any) -> Any:
        return {**self.webhook, "pending_update_count": len(self.pending_updates)}

    def _api_setMyCommands(self, params: dict[str, Any], call: Any) -> Any:
        scope = json.dumps(params.get("scope") or {"type": "default"}, sort_keys=True)
        self.commands[scope] = list(params.get("commands") or [])
        return True

    def _api_getMyCommands(self, params: dict[str, Any], call: Any) -> Any:
        scope = json.dumps(params.get("scope") or {"type": "default"}, sort_keys=True)
        return self.commands.get(scope, [])

    def _api_deleteMyCommands(self, params: dict[str, Any], call: Any) -> Any:
        scope = json.dumps(params.get("scope") or {"type": "default"}, sort_keys=True)
        self.commands.pop(scope, None)
        return True

    def _api_sendChatAction(self, params: dict[str, Any], call: Any) -> Any:
        return True

    def _api_answerCallbackQuery(self, params: dict[str, Any], call: Any) -> Any:
        return True

    def _api_setMessageReaction(self, params: dict[str, Any], call: Any) -> Any:
        return True

    def _api_getChat(self, params: dict[str, Any], call: Any) -> Any:
        chat = self.chat(int(params["chat_id"]))
        gifts = dict.fromkeys(
            ("unlimited_gifts", "limited_gifts", "unique_gifts", "premium_subscription", "gifts_from_channels"), False
        )
        return {**chat, "accent_color_id": 0, "max_reaction_count": 11, "accepted_gift_types": gifts}

    def _api_createForumTopic(self, params: dict[str, Any], call: Any) -> Any:
        """A new topic in a forum supergroup (its id is that of the service message that opens it); refused elsewhere,
        as Telegram refuses it."""
        chat_id = int(params["chat_id"])
        chat = self.chat(chat_id)
        if chat["type"] != "supergroup" or not chat.get("is_forum"):
            return self._bad_request("the chat is not a forum")
        name = str(params.get("name") or "")
        if not 1 <= len(name) <= 128:
            return self._bad_request("TOPIC_TITLE_EMPTY" if not name else "topic name is too long")
        topic = {"message_thread_id": self._next_message_id(chat_id), "name": name, "icon_color": 7322096}
        self.topics.setdefault(chat_id, []).append(topic)
        return topic

    def _api_getFile(self, params: dict[str, Any], call: Any) -> Any:
        stored = self.files.get(str(params.get("file_id")))
        if stored is None:
            return self._bad_request("invalid file_id")
        return stored.as_api()

    def _api_sendMessage(self, params: dict[str, Any], call: Any) -> Any:
        text = params.get("text")
        if not text or not str(text).strip():
            return self._bad_request("message text is empty")
        if utf16_len(str(text)) > _MAX_TEXT:
            return self._bad_request("message is too long")
        return self._bot_message(params, text=str(text))

    def _api_sendPhoto(self, params: dict[str, Any], call: Any) -> Any:
        data = next(iter(call.files.values())).data if call.files else b""
        stored = self.add_file(data, ext="jpg", folder="photos")
        size = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "width": 1, "height": 1}
        return self._bot_message(params, photo=[size])

    def _api_sendDocument(self, params: dict[str, Any], call: Any) -> Any:
        upload = next(iter(call.files.values())) if call.files else None
        stored = self.add_file(upload.data if upload else b"", ext="bin", folder="documents")
        document = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id}
        if upload and upload.filename:
            document["file_name"] = upload.filename
        return self._bot_message(params, document=document)

    def _api_editMessageText(self, params: dict[str, Any], call: Any) -> Any:
        if "inline_message_id" in params:
            return True
        message = self.messages.get((int(params.get("chat_id", 0)), int(params.get("message_id", 0))))
        if message is None:
            return self._bad_request("message to edit not found")
        text = str(params.get("text") or "")
        if not text.strip():
            return self._bad_request("message text is empty")
        if utf16_len(text) > _MAX_TEXT:
            return self._bad_request("message is too long")
        markup = params.get("reply_markup")
        if message.get("text") == text and message.get("reply_markup") == _inline_markup(markup):
            return self._bad_request(_NOT_MODIFIED)
        message["text"] = text
        message["edit_date"] = int(time.time())
        _set_markup(message, markup)
        return message

    def _api_editMessageReplyMarkup(self, params: dict[str, Any], call: Any) -> Any:
        if "inline_message_id" in params:
            return True
        message = self.messages.get((int(params.get("chat_id", 0)), int(params.get("message_id", 0))))
        if message is None:
            return self._bad_request("message to edit not found")
        markup = params.get("reply_markup")
        if message.get("reply_markup") == _inline_markup(markup):
            return self._bad_request(_NOT_MODIFIED)
        message["edit_date"] = int(time.time())
        _set_markup(message, markup)
        return message

    def _api_deleteMessage(self, params: dict[str, Any], call: Any) -> Any:
        key = (int(params.get("chat_id", 0)), int(params.get("message_id", 0)))
        if self.messages.pop(key, None) is None:
            return self._bad_request("message to delete not found")
        return True

    def _bot_message(self, params: dict[str, Any], **content: Any) -> dict[str, Any]:
        """Create and store a message sent by the bot, echoing what Telegram would."""
        chat_id = int(params["chat_id"])
        chat = self.chat(chat_id)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": chat,
            "from": self.bot_user,
            **content,
        }
        if "caption" in params:
            message["caption"] = params["caption"]
        thread_id = params.get("message_thread_id")
        if thread_id is not None and chat["type"] == "supergroup":
            message["message_thread_id"] = int(thread_id)
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        reply = params.get("reply_parameters") or {}
        reply_id = reply.get("message_id") if isinstance(reply, dict) else None
        reply_id = reply_id or params.get("reply_to_message_id")
        if reply_id is not None:
            message["reply_to_message"] = self._reply_target(chat_id, int(reply_id))
        _set_markup(message, params.get("reply_markup"))
        self.messages[(chat_id, message["message_id"])] = message
        return message


def _inline_markup(markup: Any) -> dict[str, Any] | None:
    """The markup Telegram echoes back: only inline keyboards."""
    if isinstance(markup, dict) and "inline_keyboard" in markup:
        return markup
    return None


def _set_markup(message: dict[str, Any], markup: Any) -> None:
    inline = _inline_markup(markup)
    if inline is None:
        message.pop("reply_markup", None)
    else:
        message["reply_markup"] = inline


async def post_webhook_update(url: str, update: dict[str, Any], *, secret_token: str | None = None) -> HttpResult:
    """POST an update to a webhook URL with Telegram's ``X-Telegram-Bot-Api-Secret-Token`` header."""
    headers = {"Content-Type": "application/json"}
    if secret_token is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = secret_token
    return await http_post(url, data=json.dumps(update), headers=headers)
