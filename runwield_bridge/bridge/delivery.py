"""Sending one message the Bridge must get through: rate limits are waited out, not dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..channels.contract import Channel
from ..channels.types import Button, Conversation, MessageRef, RateLimited

PATIENCE = 5


async def deliver(channel: Channel, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
    """Send, sleeping through up to ``PATIENCE`` rate-limit answers before letting the next one raise."""
    for _ in range(PATIENCE):
        try:
            return await channel.send(conversation, text, buttons)
        except RateLimited as exc:
            await asyncio.sleep(exc.retry_after)
    return await channel.send(conversation, text, buttons)
