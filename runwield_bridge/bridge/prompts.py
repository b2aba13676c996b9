"""What a message becomes for the agent: ACP content blocks for a prompt, or input steered into the running turn."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

from acp import RequestError, image_block, text_block
from pydantic import ValidationError

from ..channels.types import BridgeError, IncomingMessage
from .agent_links import AgentLink
from .conversation import Conversation
from .sender_context import sender_context, wants_sender_context

log = logging.getLogger(__name__)
STEER_TIMEOUT = 10.0
"""How long ``_session/steering`` may take to answer before the message is queued instead."""


async def prompt_blocks(conversation: Conversation, link: AgentLink, message: IncomingMessage) -> list[Any]:
    """The message's text (after a ``<sender_context>`` block where it is wanted) and images; refuses images an agent cannot take."""
    blocks: list[Any] = []
    if wants_sender_context(conversation.channel.settings.sender_context, message):
        blocks.append(text_block(sender_context(message)))
    if message.text.strip():
        blocks.append(text_block(message.text))
    if message.images:
        if not link.takes_images:
            raise BridgeError(f"Agent {link.name} does not accept images, so this message was not sent. Describe it in text instead.")
        for image in message.images:
            blocks.append(image_block(base64.b64encode(await image.fetch()).decode("ascii"), image.mime_type))
    return blocks


async def steered(conversation: Conversation, link: AgentLink | None, message: IncomingMessage) -> bool:
    """Whether the message went into the running turn (``_session/steering``); False: it needs a prompt of its own
    (the agent cannot steer, refused, or did not answer within ``STEER_TIMEOUT``)."""
    session_id = conversation.session_id
    if link is None or link.conn is None or not link.steers or session_id is None or message.text.strip().startswith("/"):
        return False
    try:
        return await asyncio.wait_for(link.steer(session_id, await prompt_blocks(conversation, link, message)), STEER_TIMEOUT)
    except TimeoutError:
        log.warning("steering in %s got no answer within %gs; the message is queued", conversation.chat.key, STEER_TIMEOUT)
        return False
    except (BridgeError, RequestError, ConnectionError, ValidationError) as exc:
        log.info("steering in %s was refused (%s); the message is queued", conversation.chat.key, exc)
        return False
