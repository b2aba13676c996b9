"""Messages, button presses and a channel's requests (a model menu, a model choice, a new session...) as JSON, to hand
them from the instance that received them to the one that owns their conversation (images travel as their bytes,
fetched by the receiving instance), and the owner's answers to requests, to send back."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

from ..channels.types import Attachment, BridgeError, ButtonPress, Conversation, IncomingMessage, MessageRef, ModelChoice, ModelMenu, Sender

MAX_ANSWER_BYTES = 7000
"""Answers travel as a ``NOTIFY`` payload, which PostgreSQL cuts at 8000 bytes: a longer menu loses its last choices."""


async def message_json(message: IncomingMessage) -> str:
    images = [{"mime_type": image.mime_type, "data": base64.b64encode(await image.fetch()).decode("ascii")} for image in message.images]
    return json.dumps(
        {
            "conversation": asdict(message.conversation),
            "sender": asdict(message.sender),
            "text": message.text,
            "images": images,
            "message_id": message.message_id,
            "sent_at": message.sent_at.isoformat() if message.sent_at else None,
        }
    )


def message_from(payload: str) -> IncomingMessage:
    raw = json.loads(payload)
    images = tuple(Attachment(image["mime_type"], _fetched(base64.b64decode(image["data"]))) for image in raw["images"])
    sent_at = datetime.fromisoformat(raw["sent_at"]) if raw["sent_at"] else None
    return IncomingMessage(Conversation(**raw["conversation"]), _sender_from(raw["sender"]), raw["text"], images, raw["message_id"], sent_at)


def press_json(press: ButtonPress) -> str:
    message = None if press.message is None else {"conversation": asdict(press.message.conversation), "id": press.message.id}
    return json.dumps({"conversation": asdict(press.conversation), "sender": asdict(press.sender), "data": press.data, "message": message, "text": press.text})


def press_from(payload: str) -> ButtonPress:
    raw = json.loads(payload)
    message = None if raw["message"] is None else MessageRef(Conversation(**raw["message"]["conversation"]), raw["message"]["id"])
    return ButtonPress(Conversation(**raw["conversation"]), _sender_from(raw["sender"]), raw["data"], message, raw["text"])


def request_json(conversation: Conversation, args: dict[str, Any]) -> str:
    return json.dumps({"conversation": asdict(conversation), "args": args})


def request_from(payload: str) -> tuple[Conversation, dict[str, Any]]:
    raw = json.loads(payload)
    return Conversation(**raw["conversation"]), raw["args"]


def answer_json(value: Any = None, error: BridgeError | None = None) -> str:
    """A request's result (a JSON value), or the BridgeError it raised."""
    return json.dumps({"error": str(error)} if error is not None else {"value": value})


def answer_from(answer: str) -> Any:
    """The result a request's answer carries; raises the BridgeError it carries instead."""
    raw = json.loads(answer)
    if "error" in raw:
        raise BridgeError(raw["error"])
    return raw["value"]


def menu_json(menu: ModelMenu | None) -> dict[str, Any] | None:
    """A model menu as a JSON value, its choices cut to fit in ``MAX_ANSWER_BYTES``."""
    if menu is None:
        return None
    raw = asdict(menu)
    while len(json.dumps(raw).encode()) > MAX_ANSWER_BYTES:
        raw["choices"].pop()
    return raw


def menu_from(raw: dict[str, Any] | None) -> ModelMenu | None:
    return None if raw is None else ModelMenu(raw["current"], tuple(ModelChoice(**choice) for choice in raw["choices"]))


def _sender_from(raw: dict[str, Any]) -> Sender:
    return Sender(**{**raw, "roles": tuple(raw.get("roles") or ())})


def _fetched(data: bytes) -> Any:
    async def fetch() -> bytes:
        return data

    return fetch
