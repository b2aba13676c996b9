"""What the chat is told when an agent refuses a request or a turn fails, in words a person reads."""

from __future__ import annotations

import asyncio

from acp import RequestError

from ..redaction import redact


def describe_error(exc: BaseException) -> str:
    """An ACP error as a person reads it: the message, and details the agent gave (secrets redacted)."""
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    return redact(f"{exc}: {details}" if details else str(exc) or type(exc).__name__)


def refused_turn(exc: RequestError, notices: tuple[str, ...]) -> str | None:
    """Why ``session/prompt`` was refused, or None where the agent already said so in an error notice naming its details."""
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    if isinstance(details, str) and details and any(details in notice for notice in notices):
        return None
    return describe_error(exc)


async def agent_stopped(agent: str, down: asyncio.Future[str] | None) -> str:
    """What a turn's reply ends with when its agent's connection ended during it."""
    reason = "the connection closed"
    if down is not None:
        try:
            reason = await asyncio.wait_for(asyncio.shield(down), 2.0)
        except TimeoutError:
            pass
    return (
        f"Agent {agent} stopped during this turn ({reason}). The rest of this reply was lost. "
        "The agent is being restarted; your next message continues this session if it can be reopened."
    )
