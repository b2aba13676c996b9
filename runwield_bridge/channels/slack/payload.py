"""What the Slack channel reads from Slack's requests (Events API, button clicks) and from ``users.info``, with its types.

Slack's HTTP requests are checked here before slack-bolt sees them: a bad or missing signature
(a timestamp that is not a number included) is refused with 401, a body the channel could not
read with 400, and neither reaches a listener.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from pydantic import Discriminator, Field, StringConstraints, Tag, model_validator
from slack_sdk.signature import SignatureVerifier

from ..webhooks import Payload, misfit

TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
FORM = "application/x-www-form-urlencoded"
MESSAGE_EVENTS = ("message", "app_mention")

Timestamp = Annotated[str, StringConstraints(pattern=r"^\d{1,10}(\.\d{1,6})?$")]
"""A Slack message ``ts``: seconds, and a sequence number after the dot."""


class File(Payload):
    mimetype: str = ""
    url_private_download: str | None = None


class MessageEvent(Payload):
    """A ``message`` or ``app_mention`` event."""

    type: str
    channel: str
    ts: Timestamp
    user: str | None = None
    text: str | None = None
    thread_ts: Timestamp | None = None
    subtype: str | None = None
    bot_id: str | None = None
    files: list[File] | None = None


class OtherEvent(Payload):
    type: str


def _event_kind(event: Any) -> str:
    return "message" if isinstance(event, dict) and event.get("type") in MESSAGE_EVENTS else "other"


class EventCallback(Payload):
    type: Literal["event_callback"]
    event: Annotated[Annotated[MessageEvent, Tag("message")] | Annotated[OtherEvent, Tag("other")], Discriminator(_event_kind)]


class Ref(Payload):
    id: str


class Action(Payload):
    action_id: str
    value: str | None = None


class Container(Payload):
    channel_id: str | None = None
    thread_ts: Timestamp | None = None


class BlockActions(Payload):
    """A button click: who, which button, and the message (channel, thread) it was under."""

    type: Literal["block_actions"]
    user: Ref
    actions: list[Action] = Field(min_length=1)
    container: Container | None = None
    channel: Ref | None = None

    @model_validator(mode="after")
    def _has_a_channel(self) -> BlockActions:
        if not (self.container and self.container.channel_id) and self.channel is None:
            raise ValueError("no channel (neither container.channel_id nor channel.id)")
        return self


class UrlVerification(Payload):
    type: Literal["url_verification"]
    challenge: str


class Typed(Payload):
    """Every request Slack sends is an object with a ``type``."""

    type: str


SHAPES: dict[str, type[Payload]] = {"event_callback": EventCallback, "block_actions": BlockActions, "url_verification": UrlVerification}


class Profile(Payload):
    display_name: str = ""


class UserInfo(Payload):
    """The ``user`` of a ``users.info`` answer: the names the channel shows."""

    name: str = ""
    real_name: str = ""
    is_bot: bool = False
    profile: Profile = Profile()


def signed(verifier: SignatureVerifier, body: str, headers: Mapping[str, str]) -> bool:
    """Whether the request carries Slack's signature over this body, made within the last five minutes."""
    timestamp, signature = headers.get(TIMESTAMP_HEADER, ""), headers.get(SIGNATURE_HEADER, "")
    well_formed = re.fullmatch(r"[0-9]{1,12}", timestamp) and re.fullmatch(r"v0=[0-9a-f]{64}", signature)
    return bool(well_formed) and verifier.is_valid(body, timestamp, signature)


def request_problem(body: str, content_type: str) -> str | None:
    """Why a (signed) request body is not one the channel can read, or None: JSON, or a form with a JSON ``payload``."""
    text = body
    if content_type == FORM:
        payloads = parse_qs(body).get("payload")
        if not payloads:
            return "a form without a payload"
        text = payloads[0]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the JSON parser goes
        return f"not JSON: {exc}"
    if problem := misfit(Typed, data):
        return problem
    shape = SHAPES.get(data["type"])
    return misfit(shape, data) if shape else None
