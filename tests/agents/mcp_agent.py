"""A small ACP agent (official Python SDK) that uses the MCP servers it is given in session/new, with the mcp SDK.

  "tools"      lists the tools of every MCP server it was given and says their names ("tools: none" for none)
  "interview"  calls user_interview ("Which colour?", red or blue) on the server offering it and says the result
  "plan"       calls write_plan ("A greeting file") on the server offering it and says the result
  "review"     calls request_artifact_review (notes.md, "Are the notes right?") on the server offering it and says the result
  "spawn"      calls spawn_session (agent runwield, "say hi from the child") on the server offering it and says the result
  "The child session ..." (a child's result turn) says "heard: <the prompt>"
  "stream"     sends a thought, a plan, usage (with a cost) and then says "done"
  anything else says which of its sessions it is in ("session <id>")
It offers session/resume (not session/load): resuming takes the id and the MCP servers it is given.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, plan_entry, run_agent, text_block, update_agent_message, update_agent_thought, update_plan
from acp.schema import (
    AgentCapabilities,
    Cost,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionResumeCapabilities,
    UsageUpdate,
)
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def with_server(server: Any, work: Any) -> Any:
    params = StdioServerParameters(command=server.command, args=list(server.args), env={e.name: e.value for e in server.env or []} or None)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await work(session)


class McpAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.servers: dict[str, list[Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        capabilities = AgentCapabilities(session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities()))
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities)

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> NewSessionResponse:
        session_id = f"mcp-{uuid.uuid4().hex[:12]}"
        self.servers[session_id] = list(mcp_servers or [])
        return NewSessionResponse(session_id=session_id)

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any) -> ResumeSessionResponse:
        self.servers[session_id] = list(mcp_servers or [])
        return ResumeSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        text = [block.text for block in prompt if block.type == "text"][-1]
        servers = self.servers[session_id]
        if text.startswith("The child session"):
            reply = f"heard: {text}"
        elif "spawn" in text:
            task = {"agent": "runwield", "task": "say hi from the child"}
            result = await with_server(servers[0], lambda s: s.call_tool("spawn_session", task))
            reply = "spawn: " + "".join(c.text for c in result.content if c.type == "text")
        elif "stream" in text:
            await self.conn.session_update(session_id, update_agent_thought(text_block("thinking it over")))
            await self.conn.session_update(session_id, update_plan([plan_entry("read the code", status="completed"), plan_entry("fix the bug")]))
            usage = UsageUpdate(session_update="usage_update", used=1200, size=200000, cost=Cost(amount=0.25, currency="USD"))
            await self.conn.session_update(session_id, usage)
            reply = "done"
        elif "tools" in text:
            names: list[str] = []
            for server in servers:
                listed = await with_server(server, lambda s: s.list_tools())
                names += [tool.name for tool in listed.tools]
            reply = f"tools: {', '.join(names) or 'none'}"
        elif "interview" in text:
            questions = {"questions": [{"question": "Which colour?", "options": ["red", "blue"]}]}
            result = await with_server(servers[0], lambda s: s.call_tool("user_interview", questions))
            reply = "interview: " + "".join(c.text for c in result.content if c.type == "text")
        elif "plan" in text:
            plan = {"title": "A greeting file", "body": "# A greeting file\n\nWrite hello.txt saying hello.\n\n## Steps\n\n1. Write hello.txt"}
            result = await with_server(servers[0], lambda s: s.call_tool("write_plan", plan))
            reply = "plan: " + "".join(c.text for c in result.content if c.type == "text")
        elif "review" in text:
            asked = {"path": "notes.md", "question": "Are the notes right?"}
            result = await with_server(servers[0], lambda s: s.call_tool("request_artifact_review", asked))
            reply = "review: " + "".join(c.text for c in result.content if c.type == "text")
        else:
            reply = f"session {session_id}"
        await self.conn.session_update(session_id, update_agent_message(text_block(reply)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(McpAgent(), use_unstable_protocol=True))  # session/resume is in the unstable protocol
