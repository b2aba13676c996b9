"""The models a Session may select, and the Agents (personas) it may run as."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .models import Model, ModelInfo


class UnknownChoice(ValueError):
    """A model, Agent or reasoning level that does not exist or does not apply."""


class ModelCatalog:
    """Registered models by id, each with a factory that builds the live model."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[ModelInfo, Callable[[], Model]]] = {}
        self.external: tuple[str, ...] = ()
        """The external agents (``[agents.NAME]``) a Session may choose as its runtime instead of a model."""

    def add(self, info: ModelInfo, factory: Callable[[], Model]) -> None:
        self._entries[info.id] = (info, factory)

    def info(self, model_id: str) -> ModelInfo:
        try:
            return self._entries[model_id][0]
        except KeyError:
            raise UnknownChoice(f"unknown model {model_id!r}; choose one of: {', '.join(self._entries)}") from None

    def build(self, model_id: str) -> Model:
        self.info(model_id)
        return self._entries[model_id][1]()

    def all(self) -> list[ModelInfo]:
        return [info for info, _ in self._entries.values()]

    def reasoning_for(self, model_id: str, wanted: str | None) -> str | None:
        """The reasoning level a Session keeps after selecting ``model_id``."""
        info = self.info(model_id)
        if not info.reasons:
            return None
        return wanted if wanted in info.reasoning_levels else info.default_reasoning


def model_info(name: str, entry: Any, default_window: int | None) -> ModelInfo:
    """ModelInfo for a ``[models.NAME]`` entry (anything with provider, model, reasoning_levels, context_window)."""
    levels = tuple(entry.reasoning_levels)
    return ModelInfo(
        id=name,
        name=name,
        description=f"{entry.provider}: {entry.model or name}",
        reasoning_levels=levels,
        default_reasoning=levels[len(levels) // 2] if levels else None,
        context_window=entry.context_window or default_window,
        vision=bool(getattr(entry, "vision", False)),
    )


@dataclass(frozen=True, slots=True)
class AgentProfile:
    """An Agent: a named way of working that a Session runs as."""

    id: str
    name: str
    description: str
    instructions: str


BUILTIN_AGENTS: tuple[AgentProfile, ...] = (
    AgentProfile("build", "Build", "Writes and changes code", "You are a careful software engineer."),
    AgentProfile("guide", "Guide", "Explains and answers questions; changes nothing", "You explain; you do not edit."),
)


def agent_profile(agent_id: str) -> AgentProfile:
    for profile in BUILTIN_AGENTS:
        if profile.id == agent_id:
            return profile
    names = ", ".join(p.id for p in BUILTIN_AGENTS)
    raise UnknownChoice(f"unknown Agent {agent_id!r}; choose one of: {names}")
