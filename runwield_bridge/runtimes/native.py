"""The native runtime: drives a model from the catalog through our tools and turns its output into Session events."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.background import StartBackground
from ..core.catalog import ModelCatalog
from ..core.compaction import COMPACT_AT, FURTHER_SHARE, KEEP_SHARE, Budget, Compactor, Summaries
from ..core.context import Context, ContextLedger, ContextState, assemble_context, bounded
from ..core.events import MessageChunk, Notice, Thought, ToolProgress, Usage, UserMessage
from ..core.interactions import Outcome, Question
from ..core.models import (
    ChatMessage,
    ContextOverflow,
    Model,
    ModelError,
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
TOOL_OUTPUT_LIMIT = 16_000
"""The characters of one tool output the model is given; the rest it can read again through the tools (ADR 0033 D5.3)."""
READ_AGAIN = ": read the rest again through the tools, a part at a time (read_file with offset and limit, a narrower command)"
Shrink = Callable[[list[ChatMessage], int], Awaitable[tuple[list[ChatMessage], int]]]


class NativeRuntime:
    """The Runtime that runs a turn against the Session's model, with the request's tools, on the context the contract
    assembles (``core/context.py``), compacted to fit the model's window (``core/compaction.py``)."""

    def __init__(self, models: ModelCatalog, summaries: Summaries, compact_at: float = COMPACT_AT) -> None:
        self.models = models
        self.summaries = summaries
        self.compact_at = compact_at
        self.ledger = ContextLedger()

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        session = request.session
        model = self.models.build(session.model)
        budget = Budget(model.info.context_window, self.compact_at)
        compactor = Compactor(model, session.id, self.summaries, budget, request.emit, request.result)
        summary = await self.summaries.latest(session.id)
        specs = tuple(tool.spec for tool in request.tools)
        state = ContextState(session.agent, session.reasoning, specs, request.history, summary, budget.message_limit)
        if request.compact:
            if await compactor.compact(state, FURTHER_SHARE) is None:
                await request.emit(Notice("Nothing to compact yet."))
            self.ledger.measured.pop(session.id, None)
            return request.result
        prompt = ChatMessage("user", bounded(request.prompt, budget.message_limit), images=request.images)
        pending = [ChatMessage("user", assemble_context(state).volatile_delta), prompt]
        state = await compactor.fit(state, pending, self.ledger.measured.get(session.id, 0))
        runner = TurnRunner(
            model=model,
            tools=request.tools,
            session_id=session.id,
            cwd=request.cwd,
            reasoning=session.reasoning,
            base_cost=session.cost_usd,
            emit=request.emit,
            result=request.result,
            ask=request.ask,
            steering=request.steering,
            voice=request.voice,
            permit=request.permit,
            command_timeout=request.command_timeout,
            background=request.background,
            shrink=Shrinker(compactor, state),
            output_limit=min(TOOL_OUTPUT_LIMIT, budget.message_limit or TOOL_OUTPUT_LIMIT),
        )
        context = assemble_context(state)
        try:
            return await runner.run(context, prompt)
        finally:
            self.ledger.after_turn(session.id, context, request.result.context_tokens)


@dataclass
class Shrinker:
    """Compacts a turn's context further when the provider refuses a request for its length: once, then the turn fails
    naming the settings."""

    compactor: Compactor
    state: ContextState
    tried: bool = False

    async def __call__(self, messages: list[ChatMessage], conversation: int) -> tuple[list[ChatMessage], int]:
        """``messages`` with their first ``conversation`` (the Session's conversation) compacted further, and how many
        messages the new conversation has."""
        folded = None if self.tried else await self.compactor.compact(self.state, FURTHER_SHARE)
        self.tried = True
        if folded is None:
            raise ModelError(self.compactor.budget.overflow())
        self.state = folded
        told = assemble_context(folded).conversation
        return [*told, *messages[conversation:]], len(told)


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
    ask: Ask | None = None
    steering: SteeringInbox = field(default_factory=SteeringInbox)
    voice: str = ""
    """Shown before each run of the model's words (after a tool call, say) to mark them as its own."""
    _speaking: bool = field(default=False, init=False)
    permit: TurnPermit | None = None
    command_timeout: float = COMMAND_TIMEOUT
    background: StartBackground | None = None
    shrink: Shrink | None = None
    """Compacts the conversation further when the provider refuses a request for its length."""
    output_limit: int = TOOL_OUTPUT_LIMIT
    """The characters of a tool's output the model is given (the user sees all of it)."""

    async def run(self, context: Context, prompt: ChatMessage) -> TurnResult:
        """Run until the model stops calling tools and no steered input waits. Partial output stays in `result` if cancelled.
        The request is the context's stable prefix, its conversation, its delta and the prompt, then the turn's own."""
        conversation = len(context.conversation)
        messages = [*context.conversation, prompt]
        by_name = {tool.spec.name: tool for tool in self.tools}
        prefix = context.stable_prefix
        for _ in range(MAX_TOOL_ROUNDS):
            await self._take_steering(messages)
            request = ModelRequest(
                tuple(messages), prefix.tools, self.reasoning, str(self.cwd), prefix.instructions, context.volatile_delta, conversation
            )
            try:
                calls, text = await self._stream(request)
            except ContextOverflow:
                if self.shrink is None:
                    raise
                messages, conversation = await self.shrink(messages, conversation)
                continue
            if not calls:
                if not self.steering:
                    return self.result
                messages.append(ChatMessage("assistant", text))
                continue
            messages.append(ChatMessage("assistant", text, tool_calls=tuple(calls)))
            for call in calls:
                output = await self._run_tool(by_name.get(call.name), call)
                told = bounded(output, self.output_limit, READ_AGAIN)
                messages.append(ChatMessage("tool", told, tool_call_id=call.call_id))
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
        self.result.context_tokens = usage.context_tokens
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
