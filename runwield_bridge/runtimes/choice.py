"""Each Session's runtime, ``native`` or ``acp:NAME``, and its external agent's session, kept in the store."""

from __future__ import annotations

from ..core.children import PARENT
from ..core.runtime import EXTERNAL as PREFIX
from ..core.runtime import NATIVE
from ..core.store.bridge import BridgeStateRepository

BINDING = "runtime:{session_id}"
"""The bridge binding that keeps a Session's runtime: its agent's name (or ``native``), the agent's session and its cwd."""
ELSEWHERE = BINDING + "@{cwd}"
"""The binding that keeps the agent's session for the Session's turns in another directory (a Plan's worktree)."""


class RuntimeChoices:
    """Each Session's runtime (``native`` or ``acp:NAME``) and its external agent's session, kept in the store."""

    def __init__(self, bindings: BridgeStateRepository, default: str = NATIVE) -> None:
        self.bindings = bindings
        self.default = default

    async def of(self, session_id: str) -> str:
        """The Session's runtime; a Session that never chose one is pinned to the configured default."""
        binding = await self.bindings.get_binding(BINDING.format(session_id=session_id))
        if binding is None:
            await self.choose(session_id, self.default)
            return self.default
        return NATIVE if binding.agent == NATIVE else PREFIX + binding.agent

    async def choose(self, session_id: str, runtime: str) -> None:
        """Keep the Session's runtime; its external agent's session (if any) is forgotten."""
        await self.bindings.set_binding(BINDING.format(session_id=session_id), runtime.removeprefix(PREFIX), "")

    async def agent_session(self, session_id: str, elsewhere: str | None = None) -> tuple[str, str | None]:
        """The external agent's session id for this Session ("" when none) and the cwd it was created with; with
        ``elsewhere``, the one kept for the Session's turns in that other directory (a Plan's worktree), if the same
        agent made it."""
        binding = await self.bindings.get_binding(BINDING.format(session_id=session_id))
        if binding is not None and elsewhere is not None:
            other = await self.bindings.get_binding(ELSEWHERE.format(session_id=session_id, cwd=elsewhere))
            binding = other if other is not None and other.agent == binding.agent else None
        return ("", None) if binding is None else (binding.acp_session_id, binding.cwd)

    async def keep_agent_session(self, session_id: str, agent: str, agent_session: str, cwd: str, elsewhere: bool = False) -> None:
        """Keep the agent's session for the Session's turns in its own directory, or (``elsewhere``) in ``cwd``, another
        one: the Session's own agent session stays for its later turns there."""
        key = ELSEWHERE.format(session_id=session_id, cwd=cwd) if elsewhere else BINDING.format(session_id=session_id)
        await self.bindings.set_binding(key, agent, agent_session, cwd)

    async def is_child(self, session_id: str) -> bool:
        """The Session is a one-shot child (``spawn_session``): its agent is given the task alone, no RunWield context."""
        return await self.bindings.get_binding(PARENT.format(session_id=session_id)) is not None
