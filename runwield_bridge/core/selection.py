"""A Session's selection: its model, reasoning level and Agent, changed only to valid choices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .catalog import ModelCatalog, UnknownChoice, agent_profile
from .events import Notice, SelectionChanged
from .metrics import WorkflowMetrics
from .models import Checkable
from .records import SessionRecord
from .runtime import EXTERNAL, NATIVE, Emit, NativeOnly, RuntimeAxis

if TYPE_CHECKING:
    from .store.sessions import SessionRepository

class Selector:
    """Checks and stores selection changes, and says what changed. The model picker also offers the external
    agents: choosing ``acp:NAME`` there switches the Session's runtime; choosing a model switches it back."""

    def __init__(self, sessions: SessionRepository, models: ModelCatalog, metrics: WorkflowMetrics, runtimes: RuntimeAxis | None = None) -> None:
        self.sessions = sessions
        self.models = models
        self.metrics = metrics
        self.runtimes = runtimes or NativeOnly()

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
        runtime = await self.runtimes.of(record.id)
        new_runtime = await self._runtime(runtime, model)
        if new_runtime != NATIVE:
            model = None
        new_model = model or record.model
        if reasoning is not None:
            info = self.models.info(new_model)
            if reasoning not in info.reasoning_levels:
                allowed = ", ".join(info.reasoning_levels) or "none"
                raise UnknownChoice(f"model {new_model!r} has no reasoning level {reasoning!r} (levels: {allowed})")
        new_reasoning = self.models.reasoning_for(new_model, reasoning or record.reasoning)
        new_agent = agent_profile(agent).id if agent else record.agent
        updated = await self.sessions.update_session(record.id, model=new_model, reasoning=new_reasoning, agent=new_agent)
        if new_runtime != runtime:
            await self.runtimes.choose(record.id, new_runtime)
        selection = (updated.agent, updated.model, updated.reasoning, new_runtime)
        if selection != (record.agent, record.model, record.reasoning, runtime):
            self.metrics.record(record.id, "selection", agent=updated.agent, model=updated.model, reasoning=updated.reasoning, runtime=new_runtime)
            if emit is not None:
                if updated.agent != record.agent:
                    profile = agent_profile(updated.agent)
                    await emit(Notice(f"Now working as the {profile.name} Agent: {profile.description}."))
                await emit(SelectionChanged(*selection, await self.runtimes.own_choices(record.id)))  # the agent's own stay
        return updated

    async def _runtime(self, current: str, model: str | None) -> str:
        """The runtime after choosing ``model`` in the picker: an external agent by its ``acp:NAME``, or native
        for a model, which must then be usable (UnknownChoice naming what is missing, such as its API key)."""
        if model is None:
            return current
        if model.startswith(EXTERNAL):
            if model.removeprefix(EXTERNAL) not in self.models.external:
                known = ", ".join(EXTERNAL + name for name in self.models.external) or "none is configured"
                raise UnknownChoice(f"unknown external agent {model!r} (external agents: {known})")
            return model
        if current != NATIVE:
            built = self.models.build(model)
            if isinstance(built, Checkable) and (problem := built.unusable()):
                raise UnknownChoice(f"cannot switch back to model {model!r}: {problem}")
        return NATIVE
