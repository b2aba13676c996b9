"""A Session's selection: its model, reasoning level and Agent, changed only to valid choices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .catalog import ModelCatalog, UnknownChoice, agent_profile
from .events import Notice, SelectionChanged
from .metrics import WorkflowMetrics
from .records import SessionRecord
from .runtime import Emit

if TYPE_CHECKING:
    from .store.sessions import SessionRepository


class Selector:
    """Checks and stores selection changes, and says what changed."""

    def __init__(self, sessions: SessionRepository, models: ModelCatalog, metrics: WorkflowMetrics) -> None:
        self.sessions = sessions
        self.models = models
        self.metrics = metrics

    async def apply(
        self,
        record: SessionRecord,
        *,
        model: str | None = None,
        reasoning: str | None = None,
        agent: str | None = None,
        emit: Emit | None = None,
    ) -> SessionRecord:
        """Store the changed selection (UnknownChoice, and nothing changed, for an invalid one). A real change is
        sent to ``emit``: the complete selection, and an Agent switch announced once."""
        new_model = model or record.model
        if reasoning is not None:
            info = self.models.info(new_model)
            if reasoning not in info.reasoning_levels:
                allowed = ", ".join(info.reasoning_levels) or "none"
                raise UnknownChoice(f"model {new_model!r} has no reasoning level {reasoning!r} (levels: {allowed})")
        new_reasoning = self.models.reasoning_for(new_model, reasoning or record.reasoning)
        new_agent = agent_profile(agent).id if agent else record.agent
        updated = await self.sessions.update_session(record.id, model=new_model, reasoning=new_reasoning, agent=new_agent)
        selection = (updated.agent, updated.model, updated.reasoning)
        if selection != (record.agent, record.model, record.reasoning):
            self.metrics.record(record.id, "selection", agent=updated.agent, model=updated.model, reasoning=updated.reasoning)
            if emit is not None:
                if updated.agent != record.agent:
                    profile = agent_profile(updated.agent)
                    await emit(Notice(f"Now working as the {profile.name} Agent: {profile.description}."))
                await emit(SelectionChanged(*selection))
        return updated
