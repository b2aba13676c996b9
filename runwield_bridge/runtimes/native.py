"""The native runtime: drives a model from the catalog through our tools and turns its output into Session events."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.background import StartBackground
from ..core.catalog import ModelCatalog
from ..core.events import MessageChunk, Thought, ToolProgress, Usage, UserMessage
from ..core.interactions import Outcome, Question
from ..core.models import (
    ChatMessage,
    Image,
    Model,
    ModelRequest,
    ModelUsage,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
)
from ..core.runtime import Ask, Emit, TurnRequest, TurnResult
from ..core.steering import SteeringInbox
from ..core.tool_gate import TurnPermit
from ..core.tools import COMMAND_TIMEOUT, Tool, ToolContext, ToolError

MAX_TOOL_ROUNDS = 16


class NativeRuntime:
    """The Runtime that runs a turn against the Session's model, with the request's tools."""

    def __init__(self, models: ModelCatalog) -> None:
        self.models = models

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        session = request.session
        runner = TurnRunner(
            model=self.models.build(session.model),
            tools=request.tools,
            session_id=session.id,
            cwd=request.cwd,
            reasoning=session.reasoning,
            base_cost=session.cost_usd,
            emit=request.emit,
            result=request.result,
            instructions=request.instructions,
            ask=request.ask,
            steering=request.steering,
            voice=request.voice,
            permit=request.permit,
            command_timeout=request.command_timeout,
            background=request.background,
        )
        return await runner.run(request.history, request.prompt, request.images)


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
    instructions: str = ""
    ask: Ask | None = None
    steering: SteeringInbox = field(default_factory=SteeringInbox)
    voice: str = ""
    """Shown before each run of the model's words (after a tool call, say) to mark them as its own."""
    _speaking: bool = field(default=False, init=False)
    permit: TurnPermit | None = None
    command_timeout: float = COMMAND_TIMEOUT
    background: StartBackground | None = None

    async def run(self, history: Sequence[ChatMessage], prompt: str, images: tuple[Image, ...] = ()) -> TurnResult:
        """Run until the model stops calling tools and no steered input waits. Partial output stays in `result` if cancelled."""
        messages = [*history, ChatMessage("user", prompt, images=images)]
        by_name = {tool.spec.name: tool for tool in self.tools}
        specs = tuple(t.spec for t in self.tools)
        for _ in range(MAX_TOOL_ROUNDS):
            await self._take_steering(messages)
            request = ModelRequest(tuple(messages), specs, self.reasoning, str(self.cwd), self.instructions)
            calls, text = await self._stream(request)
            if not calls:
                if not self.steering:
                    return self.result
                messages.append(ChatMessage("assistant", text))
                continue
            messages.append(ChatMessage("assistant", text, tool_calls=tuple(calls)))
            for call in calls:
                output = await self._run_tool(by_name.get(call.name), call)
                messages.append(ChatMessage("tool", output, tool_call_id=call.call_id))
        await self.emit(MessageChunk("\n(stopped: too many tool calls in one turn)", self.result.message_id))
        return self.result

    async def _take_steering(self, messages: list[ChatMessage]) -> None:
        """Move steered input into the conversation: once, as user messages, each shown as one user message."""
        for text in self.steering.take():
            messages.append(ChatMessage("user", text))
            await self.emit(UserMessage(text, self.result.start_message()))

    async def _stream(self, request: ModelRequest) -> tuple[list[ToolCallRequest], str]:
        """Stream one model response. Steered input pre-empts a reply that is only text so far."""
        calls: list[ToolCallRequest] = []
        text: list[str] = []
        stream = self.model.stream(request)
        async with contextlib.aclosing(stream) if hasattr(stream, "aclose") else contextlib.nullcontext(stream):
            async for event in stream:
                if isinstance(event, TextDelta):
                    await self._give_voice()
                    text.append(event.text)
                    self.result.replied = True
                    await self.emit(MessageChunk(event.text, self.result.message_id))
                elif isinstance(event, ThinkingDelta):
                    await self.emit(Thought(event.text))
                elif isinstance(event, ToolCallRequest):
                    calls.append(event)
                elif isinstance(event, ModelUsage):
                    await self._usage(event)
                if self.steering and not calls:
                    break
        return calls, "".join(text)

    async def _give_voice(self) -> None:
        """Mark the start of a run of the model's words with ``voice`` (shown, not part of the model's conversation)."""
        if self.voice and not self._speaking:
            await self.emit(MessageChunk(self.voice, self.result.message_id, aside=True))
        self._speaking = True

    async def _usage(self, usage: ModelUsage) -> None:
        self.result.cost_usd += usage.cost_usd
        size = self.model.info.context_window
        if size is not None:
            cost = self.base_cost + self.result.cost_usd
            await self.emit(Usage(used=usage.context_tokens, size=size, cost_usd=cost))

    async def _run_tool(self, tool: Tool | None, call: ToolCallRequest) -> str:
        title = tool.title(call.arguments) if tool else call.name
        self._speaking = False
        kind = tool.kind if tool else "other"
        await self.emit(ToolProgress(call.call_id, title, kind, "pending", call.arguments, started=True))
        await self.emit(ToolProgress(call.call_id, title, kind, "in_progress"))
        status, output = "completed", ""
        context = self._context(call.call_id, title, kind)
        try:
            if tool is None:
                raise ToolError(f"unknown tool {call.name!r}")
            output = await tool.run(call.arguments, context)
        except ToolError as exc:
            status, output = "failed", str(exc)
        await self.emit(ToolProgress(call.call_id, title, kind, status, output=output))
        for event in context.shown:
            await self.emit(event)
        return output

    def _context(self, call_id: str, title: str, kind: str) -> ToolContext:
        """What the tool call ``call_id`` works with; its output so far is streamed as the call's progress."""

        async def progress(output: str) -> None:
            await self.emit(ToolProgress(call_id, title, kind, "in_progress", output=output))

        permit = None if self.permit is None else functools.partial(self.permit, call_id=call_id)
        return ToolContext(
            self.session_id,
            self.cwd,
            self._asker(call_id),
            permit=permit,
            progress=progress,
            command_timeout=self.command_timeout,
            background=self.background,
            show=self.emit,
        )

    def _asker(self, call_id: str) -> Callable[[Question], Awaitable[Outcome]] | None:
        """How the tool call ``call_id`` asks the user, if this turn can ask."""
        if self.ask is None:
            return None
        ask = self.ask
        return lambda question: ask(question, call_id)
