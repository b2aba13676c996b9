"""Messages to a peer Session (``send_session``). Admission is reported apart from delivery: the text is steered into
the peer's running turn, or queued as its next turn (``targetDisposition``); the peer's reply then comes back to the
sender as a later result turn (``delivery.status`` pending), except where the completion path already carries it
back: to the sender's own one-shot child, or from a child to its parent (skipped), so no echo loop can start."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Literal

from .commands import Command, CommandContext
from .models import ToolSpec
from .steering import INJECTED, SteeringRejected
from .tools import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from .children import ChildSessions

Disposition = Literal["queued", "steered"]
PEER_MESSAGE = "peer-message"
PEER_REPLY = "peer-reply"


def said_command(name: str, text: str, description: str) -> Command:
    """A turn the Session starts itself whose prompt is ``text`` (kept as the model's input, not a person's words)."""

    async def run(ctx: CommandContext, args: str) -> str:
        return text

    return Command(name, description, run, source="children", advertised=False)


async def send(children: ChildSessions, sender: str, target: str, text: str) -> dict[str, Any]:
    """Steer or queue ``text`` into the Session ``target``; its reply comes back to ``sender`` unless it would echo."""
    host = children.host
    if target == sender:
        raise ToolError("a session cannot send to itself")
    if not text.strip():
        raise ToolError("the text is empty")
    try:
        live = await host.registry.open(target)
    except LookupError:
        raise ToolError(f"no session {target!r}; nothing was sent") from None
    own_child = await children.parent_of(target) == sender
    echo = own_child or await children.parent_of(sender) == target
    turn = live.turn if live.busy else None
    disposition: Disposition = "queued"
    if turn is not None and await _steered(children, target, text):
        disposition = "steered"
    else:
        turn = children.follow_up(target, said_command(PEER_MESSAGE, text, "A message from another session"), "", None)
    if not echo:
        children.keep(sender, asyncio.create_task(_deliver(children, sender, target, turn), name=f"peer-reply:{target}"))
    return {"sessionId": target, "targetDisposition": disposition, "delivery": {"status": "skipped" if echo else "pending"}}


async def _steered(children: ChildSessions, target: str, text: str) -> bool:
    """Whether ``text`` went into the target's running turn (a slash command never does: it is queued instead)."""
    try:
        return await children.host.steer(target, text) == INJECTED
    except SteeringRejected:
        return False


async def _deliver(children: ChildSessions, sender: str, target: str, turn: asyncio.Task[Any]) -> None:
    """Once the peer's turn that took the message has ended, its last reply becomes the sender's result turn."""
    await asyncio.wait({turn})
    live = await children.host.registry.open(target)
    history = await children.host.recorder.model_history(live)
    reply = next((m.text for m in reversed(history) if m.role == "assistant" and m.text), "(no reply)")
    prompt = f"The session {target} replied to your message: {reply}"
    children.keep(sender, children.follow_up(sender, said_command(PEER_REPLY, prompt, "A peer session's reply"), "", None))


def send_session_tool(children: ChildSessions) -> Tool:
    """The ``send_session`` tool: a message to another Session, steered or queued; its reply comes back later."""
    schema = {
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "The session to send to"},
            "text": {"type": "string", "description": "What to tell it"},
        },
        "required": ["session_id", "text"],
    }

    async def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        answer = await send(children, ctx.session_id, str(arguments.get("session_id", "")), str(arguments.get("text", "")))
        return json.dumps(answer)

    description = (
        "Send a message to another session: steered into its running turn, or queued as its next turn. Its reply "
        "comes back to you later as a new turn (not for your own one-shot children: their result already does)."
    )
    return Tool(ToolSpec("send_session", description, schema), "other", run)
