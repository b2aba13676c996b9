"""A conversation's replies: the one to the running turn, and the one to work the session does on its own (aside)."""

from __future__ import annotations

from ..channels.contract import ReplyView
from ..channels.streaming import StreamingReply
from ..channels.unfinished import Keeper, MessageLog
from .conversation import Conversation


def open_reply(conversation: Conversation, messages: MessageLog, instance: str | None) -> ReplyView:
    """The channel's view for a reply, noting its streaming message where the view can (so a crash cannot leave it ``…``)."""
    view = conversation.channel.open_reply(conversation.chat)
    if isinstance(view, StreamingReply):
        view.keeper = Keeper(messages, conversation.channel.name, "reply", instance)
    return view


async def end_aside(conversation: Conversation) -> None:
    """A turn from here starts: finish the reply to work the session was doing on its own, above it."""
    aside, conversation.aside = conversation.aside, None
    if aside is not None:
        await aside.finish()


async def pause_replies(conversation: Conversation) -> None:
    """A message of its own is about to be shown: what the replies said so far stays above it, what follows goes below."""
    for view in (conversation.view, conversation.aside):
        if view is not None:
            await view.pause()
