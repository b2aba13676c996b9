"""Minimal ACP v1 echo agent on the official Python SDK (agent-client-protocol): initialize, session/new and a
session/prompt that echoes the prompt text as one agent_message_chunk. The SDK ships no example agent; this is
its documented ``Agent`` interface run with ``run_agent``, nothing more (no persistence, no history, no model)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, text_block, update_agent_message
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse, PromptResponse


class EchoAgent:
    """Echoes each prompt's text back to the client."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.sessions: set[str] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="echo-agent", version="1.0.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = str(uuid.uuid4())
        self.sessions.add(session_id)
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)  # -32002, as the TypeScript echo agent answers
        assert self.client is not None
        text = "".join(block.text for block in prompt if getattr(block, "type", None) == "text")
        await self.client.session_update(session_id=session_id, update=update_agent_message(text_block(text)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))  # type: ignore[arg-type]  # the SDK's Agent protocol; unused methods left out
