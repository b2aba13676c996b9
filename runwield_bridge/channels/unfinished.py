"""Messages left unfinished by a bridge that stopped: buttons nobody can answer any more, a reply cut off mid-stream."""

from __future__ import annotations

import logging

from .contract import Channel, MessageRef

log = logging.getLogger(__name__)
EXPIRED = "This button has expired (its question is over, or the bridge restarted since); nothing was done."
EXPIRED_MARK = "(expired)"


async def mark_expired(channel: Channel, message: MessageRef, text: str) -> None:
    """Take a stale message's buttons away and say it expired (once)."""
    if text.endswith(EXPIRED_MARK):
        return
    try:
        await channel.edit(message, f"{text}\n\n{EXPIRED_MARK}".strip(), ())
    except Exception as exc:  # the press was answered; the old message just keeps its look
        log.warning("could not mark a message in %s expired: %s", message.conversation.key, exc)
