"""``wld doctor --live``: each ``[agents.NAME]`` started, asked in a temporary session for an exact reply, and stopped.

One line per agent: the configured name, the agent's own name and version (from ``initialize``), its reply and how
long it all took. What the agent asks meanwhile (a permission, a form) is declined: a live check answers nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from acp import RequestError, text_block
from acp.schema import DeniedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from .acp.agent_connection import AgentConnection, AgentUnavailable
from .acp.client import CommandAgent
from .config import AgentConfig, Settings
from .doctor import Finding

EXPECTED = "LIVE-OK"
LIVE_PROMPT = f"Reply with exactly {EXPECTED}"
LIVE_TIMEOUT = 120.0
"""Seconds an agent gets to start, and again to answer."""


class Transcript:
    """The agent's traffic during a live check: its reply text by session; every question declined."""

    def __init__(self) -> None:
        self.replies: dict[str, str] = defaultdict(str)

    def on_update(self, agent: str, session_id: str, update: Any) -> None:
        if getattr(update, "session_update", "") == "agent_message_chunk" and getattr(update.content, "type", "") == "text":
            self.replies[session_id] += update.content.text

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]:
        return {"action": "decline"}


async def live_findings(settings: Settings, timeout: float = LIVE_TIMEOUT) -> AsyncIterator[Finding]:
    """One finding per configured agent; a problem when none is configured (nothing was checked)."""
    if not settings.agents:
        yield Finding("problem", "live agents", "no [agents.NAME] is configured, so nothing was checked")
    for name, config in settings.agents.items():
        yield await check_agent(name, config, timeout)


async def check_agent(name: str, config: AgentConfig, timeout: float) -> Finding:
    """Start the agent, ask for the exact reply in a new session, close that session and stop the agent."""
    subject = f"agent {name}"
    transcript = Transcript()
    link = AgentConnection(name, CommandAgent(config), transcript, start_timeout=timeout)
    started = time.monotonic()
    try:
        conn = await link.connection()
        assert link.info is not None
        implementation = link.info.agent_info
        who = f"{implementation.name} {implementation.version}" if implementation else "an agent that gives no agentInfo"
        session = await conn.new_session(cwd=config.cwd or os.getcwd(), mcp_servers=[])
        try:
            await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block(LIVE_PROMPT)]), timeout)
        finally:
            if link.offers("close"):
                with contextlib.suppress(RequestError, ConnectionError):
                    await conn.close_session(session_id=session.session_id)
    except AgentUnavailable as exc:
        return Finding("problem", subject, f"it did not start: {link.supervisor.last_error or exc} (after {time.monotonic() - started:.1f}s)")
    except (RequestError, ConnectionError, TimeoutError) as exc:
        reason = str(exc) or f"no answer within {timeout:g}s"
        return Finding("problem", subject, f"{reason} (after {time.monotonic() - started:.1f}s)")
    finally:
        await link.stop()
    reply = transcript.replies[session.session_id].strip()
    status = "ok" if reply == EXPECTED else "problem"
    return Finding(status, subject, f"{who} replied {reply!r} to {LIVE_PROMPT!r} in {time.monotonic() - started:.1f}s")
