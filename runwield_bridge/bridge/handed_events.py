"""Messages and button presses as JSON, to hand them from the instance that received them to the one that owns their
conversation (images travel as their bytes, fetched by the receiving instance)."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

from ..channels.types import Attachment, ButtonPress, Conversation, IncomingMessage, MessageRef, Sender


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


def _sender_from(raw: dict[str, Any]) -> Sender:
    return Sender(**{**raw, "roles": tuple(raw.get("roles") or ())})


def _fetched(data: bytes) -> Any:
    async def fetch() -> bytes:
        return data

    return fetch
