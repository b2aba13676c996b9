"""External ACP agents for the acp runtime: one process and connection per ``[agents.NAME]``, many Sessions on it.

The process and its connection come from ``acp/client.py`` (``CommandAgent``); this module starts it on first use,
initializes it, and routes what the agent sends (updates, permission requests, elicitations) to the turn that is
running on the agent's session. An agent that went away is started again by the next turn that needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
from importlib.metadata import version
from collections.abc import Callable
from typing import Any, Protocol

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import (
    DeniedOutcome,
    Implementation,
    InitializeResponse,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from ..acp.client import CLIENT_CAPABILITIES, CommandAgent, SessionOfRequest
from ..config import AgentConfig
from ..core.models import ModelError
from ..core.runtime import TurnRequest
from .agent_adapters import adapter_for
from .agent_modes import AgentMode
from .mcp_bus import ToolBus

CLIENT_INFO = Implementation(name="runwield-bridge", title="RunWield Bridge", version=version("runwield-bridge"))
START_TIMEOUT = 30.0


class AgentTurn(Protocol):
    """A turn running on one of the agent's sessions: where the agent's traffic for that session goes."""

    request: TurnRequest

    def on_update(self, update: Any) -> None: ...

    async def on_permission(self, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse: ...

    async def on_elicitation(self, params: Any) -> dict[str, Any]: ...


NOBODY_ASKED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


class RuntimeClient:
    """The ACP Client object the SDK calls for one agent; everything goes to the turn running on the session."""

    def __init__(self, agent: ExternalAgent) -> None:
        self.agent = agent

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if (turn := self.agent.turns.get(session_id)) is not None:
            turn.on_update(update)

    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any) -> RequestPermissionResponse:
        turn = self.agent.turns.get(session_id)
        return NOBODY_ASKED if turn is None else await turn.on_permission(tool_call, options)

    async def elicit(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if session_id is None and isinstance(params, dict):
            session_id = self.agent.requests.session_of(params.get("requestId"))
        turn = self.agent.turns.get(session_id) if isinstance(session_id, str) else None
        return {"action": "cancel"} if turn is None else await turn.on_elicitation(params)

    async def complete_elicitation(self, elicitation_id: str, **_: Any) -> None:
        return None


class ExternalAgent:
    """One ``[agents.NAME]``: its process and connection (started on first use) and the turns running on it."""

    def __init__(self, name: str, config: AgentConfig, start_timeout: float = START_TIMEOUT) -> None:
        self.name = name
        self.config = config
        self.adapter = adapter_for(config)
        self.endpoint = CommandAgent(self.adapter.launch(config))
        self.start_timeout = start_timeout
        self.requests = SessionOfRequest()
        self.bus = ToolBus(config.tools)
        self.turns: dict[str, AgentTurn] = {}
        """The turn running on each of the agent's sessions."""
        self.conn: ClientSideConnection | None = None
        self.info: InitializeResponse | None = None
        self.opened: set[str] = set()
        """The agent's sessions created or reopened on the current connection."""
        self.modes: dict[str, AgentMode] = {}
        """The mode each of the agent's sessions is in (``/mode``)."""
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def capability(self, name: str) -> bool:
        """Whether the agent offers ``loadSession`` or a ``sessionCapabilities`` entry (``resume``)."""
        caps = self.info.agent_capabilities if self.info else None
        if caps is None:
            return False
        if name == "load":
            return bool(caps.load_session)
        session_caps = caps.session_capabilities
        return bool(session_caps and getattr(session_caps, name, None) is not None)

    async def connection(self) -> ClientSideConnection:
        """The live connection, starting the agent if it is not running; ModelError when it cannot start."""
        async with self._lock:
            if self.conn is not None and self._task is not None and not self._task.done():
                return self.conn
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(ready), name=f"agent:{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.start_timeout)
            except TimeoutError:
                await self.close()
                raise ModelError(f"the external agent {self.name} did not start within {self.start_timeout:g}s") from None
            assert self.conn is not None
            return self.conn

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        """Open the agent, initialize it and keep the connection until the agent goes away."""
        try:
            async with self.endpoint.open(RuntimeClient(self), [self.requests]) as (conn, gone):
                info = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=CLIENT_CAPABILITIES, client_info=CLIENT_INFO)
                if info.protocol_version != PROTOCOL_VERSION:
                    raise ModelError(f"it speaks ACP version {info.protocol_version}; RunWield speaks {PROTOCOL_VERSION}")
                self.conn, self.info, self.opened = conn, info, set()
                ready.set_result(None)
                await gone
        except Exception as exc:
            if not ready.done():
                tail = f" ({self.endpoint.stderr_tail[-1]})" if self.endpoint.stderr_tail else ""
                ready.set_exception(ModelError(f"the external agent {self.name} could not be started: {exc}{tail}"))
        finally:
            self.conn = None

    def running(self, agent_session: list[str]) -> Callable[[], TurnRequest | None]:
        """The turn running on the agent session (its id in ``agent_session`` once known), for the tool bus."""

        def turn() -> TurnRequest | None:
            found = self.turns.get(agent_session[0]) if agent_session else None
            return found.request if found else None

        return turn

    async def lost(self, conn: ClientSideConnection | None) -> None:
        """``conn`` failed (the agent closed it or crashed): end it and the agent's process now, so the next turn
        starts the agent again instead of finding the dead connection before the process's exit is noticed."""
        async with self._lock:
            if conn is not None and conn is self.conn:
                await self._stop()

    async def close(self) -> None:
        """Stop the agent's process, if it runs, and its tool bus."""
        await self.bus.close()
        await self._stop()

    async def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None


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
