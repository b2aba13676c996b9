"""Each Session's runtime together with its external agent's own modes and models: the Session Host's runtime axis,
so every client (``wld acp``'s config options, ``/mode`` and ``/model`` in a chat) sees and changes the same ones."""

from __future__ import annotations

from ..core.catalog import UnknownChoice
from ..core.events import AgentChoices
from ..core.runtime import OwnChoice
from .acp_agents import ExternalAgent, ExternalAgents
from .agent_modes import AgentMode, apply_own, own_choices
from .choice import PREFIX, RuntimeChoices


class AgentRuntimes:
    """``RuntimeChoices`` and, for a Session an external agent drives, that agent's own choices in its session."""

    def __init__(self, choices: RuntimeChoices, agents: ExternalAgents) -> None:
        self.choices = choices
        self.agents = agents

    async def of(self, session_id: str) -> str:
        return await self.choices.of(session_id)

    async def choose(self, session_id: str, runtime: str) -> None:
        await self.choices.choose(session_id, runtime)

    async def agent(self, session_id: str) -> ExternalAgent | None:
        """The external agent that drives the Session, if one does."""
        runtime = await self.choices.of(session_id)
        return self.agents.agents.get(runtime.removeprefix(PREFIX)) if runtime.startswith(PREFIX) else None

    async def opened(self, session_id: str) -> tuple[ExternalAgent, str, AgentMode] | None:
        """The Session's external agent, its session and what that session offers, once it has been opened."""
        agent = await self.agent(session_id)
        if agent is None:
            return None
        agent_session, _ = await self.choices.agent_session(session_id)
        mode = agent.modes.get(agent_session)
        return None if mode is None else (agent, agent_session, mode)

    async def own_choices(self, session_id: str) -> AgentChoices | None:
        found = await self.opened(session_id)
        return None if found is None else own_choices(found[0].name, found[2])

    async def choose_own(self, session_id: str, kind: OwnChoice, value: str) -> list[str]:
        found = await self.opened(session_id)
        if found is None:
            agent = await self.agent(session_id)
            if agent is None:
                raise UnknownChoice(f"no external agent drives this Session: it has no agent's own {kind} {value!r}")
            raise UnknownChoice(f"the external agent {agent.name} has not opened its session yet: its {kind}s show after its first turn")
        agent, agent_session, mode = found
        return await apply_own(await agent.connection(), agent.name, agent.adapter, agent_session, mode, kind, value)
