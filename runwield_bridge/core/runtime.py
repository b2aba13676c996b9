"""The turn executor: drives a model through tool calls and turns its output into Session events."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .events import Event, MessageChunk, Thought, ToolProgress, Usage
from .models import (
    ChatMessage,
    Model,
    ModelRequest,
    ModelUsage,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
)
from .tools import Tool, ToolContext, ToolError

Emit = Callable[[Event], Awaitable[None]]
MAX_TOOL_ROUNDS = 16


@dataclass
class TurnResult:
    """What a finished (or interrupted) turn produced, for the transcript and the cost ledger."""

    reply: str = ""
    thoughts: str = ""
    cost_usd: float = 0.0
    tool_calls: list[ToolProgress] = field(default_factory=list)
    message_id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class TurnRunner:
    """Runs one prompt turn against a model, with the given tools."""

    model: Model
    tools: Sequence[Tool]
    session_id: str
    cwd: Path
    reasoning: str | None
    base_cost: float
    emit: Emit
    result: TurnResult = field(default_factory=TurnResult)

    async def run(self, history: Sequence[ChatMessage], prompt: str) -> TurnResult:
        """Run until the model stops calling tools. Partial output stays in `result` if cancelled."""
        messages = [*history, ChatMessage("user", prompt)]
        by_name = {tool.spec.name: tool for tool in self.tools}
        for _ in range(MAX_TOOL_ROUNDS):
            request = ModelRequest(tuple(messages), tuple(t.spec for t in self.tools), self.reasoning, str(self.cwd))
            calls, text = await self._stream(request)
            if not calls:
                return self.result
            messages.append(ChatMessage("assistant", text, tool_calls=tuple(calls)))
            for call in calls:
                output = await self._run_tool(by_name.get(call.name), call)
                messages.append(ChatMessage("tool", output, tool_call_id=call.call_id))
        await self.emit(MessageChunk("\n(stopped: too many tool calls in one turn)", self.result.message_id))
        return self.result

    async def _stream(self, request: ModelRequest) -> tuple[list[ToolCallRequest], str]:
        calls: list[ToolCallRequest] = []
        text: list[str] = []
        async for event in self.model.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
                self.result.reply += event.text
                await self.emit(MessageChunk(event.text, self.result.message_id))
            elif isinstance(event, ThinkingDelta):
                self.result.thoughts += event.text
                await self.emit(Thought(event.text))
            elif isinstance(event, ToolCallRequest):
                calls.append(event)
            elif isinstance(event, ModelUsage):
                await self._usage(event)
        return calls, "".join(text)

    async def _usage(self, usage: ModelUsage) -> None:
        self.result.cost_usd += usage.cost_usd
        size = self.model.info.context_window
        if size is not None:
            cost = self.base_cost + self.result.cost_usd
            await self.emit(Usage(used=usage.context_tokens, size=size, cost_usd=cost))

    async def _run_tool(self, tool: Tool | None, call: ToolCallRequest) -> str:
        title = tool.title(call.arguments) if tool else call.name
        kind = tool.kind if tool else "other"
        await self.emit(ToolProgress(call.call_id, title, kind, "pending", call.arguments, started=True))
        await self.emit(ToolProgress(call.call_id, title, kind, "in_progress"))
        status, output = "completed", ""
        try:
            if tool is None:
                raise ToolError(f"unknown tool {call.name!r}")
            output = await tool.run(call.arguments, ToolContext(self.session_id, self.cwd))
        except ToolError as exc:
            status, output = "failed", str(exc)
        final = ToolProgress(call.call_id, title, kind, status, output=output)
        self.result.tool_calls.append(final)
        await self.emit(final)
        return output
