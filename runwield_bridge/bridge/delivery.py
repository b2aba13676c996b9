"""Sending one message the Bridge must get through: rate limits are waited out, not dropped."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..channels.contract import Channel
from ..channels.types import Button, Conversation, MessageRef, RateLimited

log = logging.getLogger(__name__)
PATIENCE = 5


async def deliver(channel: Channel, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
    """Send, sleeping through up to ``PATIENCE`` rate-limit answers before letting the next one raise."""
    for _ in range(PATIENCE):
        try:
            return await channel.send(conversation, text, buttons)
        except RateLimited as exc:
            await asyncio.sleep(exc.retry_after)
    return await channel.send(conversation, text, buttons)


async def say(channel: Channel, conversation: Conversation, text: str) -> None:
    """Tell the conversation something; a failure is logged, never raised (the Bridge's own notices)."""
    try:
        await deliver(channel, conversation, text)
    except Exception as exc:
        log.warning("could not tell %s: %s (%s)", conversation.key, text, exc)
