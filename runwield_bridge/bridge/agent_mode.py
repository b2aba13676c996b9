"""A chat's agent session, new or reopened, in the mode that asks the person (per agent adapter, or ``[agents.NAME] mode``)."""

from __future__ import annotations

from typing import Any

from acp.client.connection import ClientSideConnection

from ..acp.client import CommandAgent
from ..runtimes.agent_adapters import adapter_for
from ..runtimes.agent_modes import mode_warnings, settle_mode


async def settle_agent_mode(conn: ClientSideConnection, name: str, endpoint: object, opened: Any, session_id: str) -> list[str]:
    """Put the agent session just opened (new, loaded or resumed) for a chat in its asking (or configured) mode; warnings for the chat."""
    if not isinstance(endpoint, CommandAgent):
        return []  # the in-process Session Host asks through its own rules
    adapter = adapter_for(endpoint.config)
    mode = await settle_mode(conn, session_id, opened, adapter, endpoint.config)
    return mode_warnings(name, adapter, mode)
