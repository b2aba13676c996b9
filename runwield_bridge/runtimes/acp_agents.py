"""External ACP agents for the acp runtime: one ``AgentConnection`` per ``[agents.NAME]``, many Sessions on it.

The connection (``acp/agent_connection.py``) starts the agent on first use, initializes it and restarts it when it
goes away; this module routes what the agent sends (updates, permission requests, elicitations) to the turn that is
running on the agent's session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from acp.client.connection import ClientSideConnection
from acp.schema import DeniedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from ..acp.agent_connection import AgentConnection, AgentUnavailable
from ..acp.client import CommandAgent
from ..config import AgentConfig
from ..core.models import ModelError
from ..core.runtime import TurnRequest
from .agent_adapters import adapter_for
from .agent_modes import AgentMode
from .mcp_bus import ToolBus


class AgentTurn(Protocol):
    """A turn running on one of the agent's sessions: where the agent's traffic for that session goes."""

    request: TurnRequest

    def on_update(self, update: Any) -> None: ...

    async def on_permission(self, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse: ...

    async def on_elicitation(self, params: Any) -> dict[str, Any]: ...


NOBODY_ASKED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


class ExternalAgent:
    """One ``[agents.NAME]``: its connection (started on first use), its tool bus and the turns running on it."""

    def __init__(self, name: str, config: AgentConfig) -> None:
        self.name = name
        self.config = config
        self.adapter = adapter_for(config)
        self.link = AgentConnection(name, CommandAgent(self.adapter.launch(config)), self)
        self.bus = ToolBus(config.tools)
        self.turns: dict[str, AgentTurn] = {}
        """The turn running on each of the agent's sessions."""
        self.modes: dict[str, AgentMode] = {}
        """The mode each of the agent's sessions is in (``/mode``)."""

    async def connection(self) -> ClientSideConnection:
        """The live connection, starting the agent if it is not running; ModelError when it cannot start."""
        try:
            return await self.link.connection()
        except AgentUnavailable as exc:
            raise ModelError(str(exc)) from None

    def on_update(self, agent: str, session_id: str, update: Any) -> None:
        if (turn := self.turns.get(session_id)) is not None:
            turn.on_update(update)

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        turn = self.turns.get(session_id)
        return NOBODY_ASKED if turn is None else await turn.on_permission(tool_call, options)

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]:
        turn = self.turns.get(session_id) if session_id is not None else None
        return {"action": "cancel"} if turn is None else await turn.on_elicitation(params)

    def running(self, agent_session: list[str]) -> Callable[[], TurnRequest | None]:
        """The turn running on the agent session (its id in ``agent_session`` once known), for the tool bus."""

        def turn() -> TurnRequest | None:
            found = self.turns.get(agent_session[0]) if agent_session else None
            return found.request if found else None

        return turn

    async def close(self) -> None:
        """Stop the agent's process, if it runs, and its tool bus."""
        await self.bus.close()
        await self.link.stop()


class ExternalAgents:
    """The configured external agents by name, each started when a Session first needs it."""

    def __init__(self, configs: dict[str, AgentConfig]) -> None:
        self.agents = {name: ExternalAgent(name, config) for name, config in configs.items()}

    def get(self, name: str) -> ExternalAgent:
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(self.agents) or "none"
            raise ModelError(f"no external agent {name!r} is configured (configured: {known})") from None

    async def close(self) -> None:
        for agent in self.agents.values():
            await agent.close()
