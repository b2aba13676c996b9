"""The Bridge's link to one configured agent: its ``AgentConnection``, plus steering input into a running turn."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from ..acp.agent_connection import AgentConnection
from ..acp.extensions import STEERING, STEERING_SUPPORT_KEY, SteeringAnswer, SteeringSupport


class AgentLink(AgentConnection):
    """One agent's supervised connection, all of its sessions on it, as the Bridge uses it."""

    @property
    def steers(self) -> bool:
        """Whether the agent takes input into a running turn: ``_meta.steering.supported`` in its ``initialize`` answer."""
        raw = (self.info.field_meta or {}).get(STEERING_SUPPORT_KEY) if self.info else None
        try:
            return raw is not None and SteeringSupport.model_validate(raw).supported
        except ValidationError:
            return False

    async def steer(self, session_id: str, blocks: list[BaseModel]) -> bool:
        """Add input to the session's running turn (``_session/steering``); False when it needs an ordinary prompt.
        Raises ConnectionError, or RequestError when the agent refuses it (a slash command, say)."""
        assert self.conn is not None
        prompt = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]
        raw = await self.conn.ext_method(STEERING.name, {"sessionId": session_id, "prompt": prompt})
        answer = SteeringAnswer.model_validate(raw)
        return answer.outcome == "injected"
