"""Where conversation bindings persist: the store's ``bindings`` table behind a small interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class BindingRecord(Protocol):
    """A stored binding: the conversation's agent and ACP session."""

    agent: str
    acp_session_id: str
    cwd: str | None


class BindingStore(Protocol):
    """Persistence for conversation -> (agent, session); ``Store.bridge`` (``runwield_bridge.core.store``) is one."""

    async def get_binding(self, conversation: str) -> BindingRecord | None: ...

    async def set_binding(self, conversation: str, agent: str, acp_session_id: str, cwd: str | None = None) -> BindingRecord: ...

    async def bound_conversations(self, prefix: str, agent: str) -> list[str]: ...


@dataclass
class _Binding:
    agent: str
    acp_session_id: str
    cwd: str | None


class MemoryBindings:
    """Bindings that last as long as the process (``wld chat`` starts fresh each time)."""

    def __init__(self) -> None:
        self._bindings: dict[str, _Binding] = {}

    async def get_binding(self, conversation: str) -> BindingRecord | None:
        return self._bindings.get(conversation)

    async def set_binding(self, conversation: str, agent: str, acp_session_id: str, cwd: str | None = None) -> BindingRecord:
        binding = self._bindings[conversation] = _Binding(agent, acp_session_id, cwd)
        return binding

    async def bound_conversations(self, prefix: str, agent: str) -> list[str]:
        return [key for key, binding in self._bindings.items() if key.startswith(prefix) and binding.agent == agent]
