"""One turn of a live Session, start to settled: a slash command (with what it may use) or a runtime turn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..redaction import redact
from .background import BackgroundTasks, result_command
from .catalog import ModelCatalog
from .commands import Command, CommandContext, CommandRegistry, Invocation
from .events import Event, MessageChunk, Notice, PlanLink, SessionSpawned, ToolProgress, TurnSettled
from .interactions import InteractionBroker, Outcome, Question
from .live import LiveSession
from .metrics import WorkflowMetrics
from .models import ChatMessage, Image, ModelError
from .recorder import TranscriptRecorder
from .records import SessionRecord
from .runtime import Emit, Runtime, TurnRequest, TurnResult
from .selection import Selector
from .steering import SteeringInbox
from .tool_gate import WORKTREE_RULES, ToolGate
from .tools import Tool
from .transcript import TurnJournal
from .vision import Vision

log = logging.getLogger(__name__)
MessageRoute = Callable[[SessionRecord], Awaitable[Command | None]]
"""The command that takes a Session's plain messages instead of the model (a Pair Execution), if any."""
FollowUp = Callable[[str, Command, str, Awaitable[Any] | None], "asyncio.Task[None]"]
AGENT_SAYS = "🤖 Agent says: "
"""Marks the words of an Agent working for a command (an execution): its claims, which are not the outcome."""
UNSETTLED_NOTICE = {
    "expired": "The question expired without an answer; nothing was chosen.",
    "failed": "The question could not be asked ({reason}); nothing was chosen.",
}


@dataclass(frozen=True)
class TurnParts:
    """What a turn works with: where it is kept, what drives it, and what a command may offer the user."""

    recorder: TranscriptRecorder
    runtime: Runtime
    selector: Selector
    commands: CommandRegistry
    models: ModelCatalog
    broker: InteractionBroker
    metrics: WorkflowMetrics
    tools: tuple[Tool, ...]
    gate: ToolGate  # whether a tool may change files or run a command
    command_timeout: float
    message_route: MessageRoute | None
    follow_up: FollowUp
    spawn: Callable[[SessionRecord, str], Awaitable[SessionSpawned]]  # /spawn: start the Session it asks for
    vision: Vision | None = None  # how a text-only model sees the images of prompts (see_image)


class TurnExecutor:
    """Runs a turn to its settled end; whatever happens, it settles once and releases the Session's writer."""

    def __init__(self, parts: TurnParts) -> None:
        self.parts = parts

    async def run(
        self, live: LiveSession, text: str | None, invocation: Invocation | None, images: tuple[Image, ...] = ()
    ) -> TurnSettled:
        """One turn: the user's ``text`` (None for a turn the Session starts itself; ``images`` for a model that sees
        them), a command or a runtime turn."""
        parts = self.parts
        session_id = live.record.id
        result = TurnResult()
        settled = TurnSettled("end_turn")
        journal = parts.recorder.journal(live)
        recorded = asyncio.ensure_future(self._begin(live, journal, text, command=invocation is not None))
        parts.metrics.record(session_id, "turn_started", command=invocation.name if invocation else None)
        try:
            history = await asyncio.shield(recorded)  # the user's input is kept even if the turn is cancelled
            if invocation is None and parts.message_route and (route := await parts.message_route(live.record)):
                invocation = Invocation(route, route.name, text or "")
            prompt = await self._run_command(live, invocation, result) if invocation else text
            if prompt:
                await self._run_runtime(live, history, prompt, result, images=() if invocation else images)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()
            settled = TurnSettled("cancelled")
        except ModelError as exc:
            settled = TurnSettled("error", error=redact(str(exc)))
        except Exception as exc:
            log.exception("turn failed in Session %s", session_id)
            settled = TurnSettled("error", error=redact(f"internal error: {type(exc).__name__}: {exc}"))
        live.finishing = True
        try:
            with contextlib.suppress(Exception):  # a failure here is already the turn's error
                await recorded
            await self._finish(live, journal, result, settled)
        finally:
            live.cancelling = live.finishing = False
            live.journal = None
            await live.lock.release()
        parts.metrics.record(session_id, "turn_settled", stop_reason=settled.stop_reason)
        await live.emit(settled)
        return settled

    async def _begin(self, live: LiveSession, journal: TurnJournal, text: str | None, *, command: bool) -> list[ChatMessage]:
        """Start the turn in the transcript (re-reading the Session); the model's history before it."""
        return await self.parts.recorder.begin(live, journal, text, command=command)

    async def _run_command(self, live: LiveSession, invocation: Invocation, result: TurnResult) -> str | None:
        """Run a slash command; returns the prompt it hands on to the model, if any."""
        parts = self.parts
        journal = live.journal
        assert journal is not None, "a command runs in a turn"
        parts.metrics.record(live.record.id, "command", name=invocation.name, known=invocation.command is not None)
        if invocation.command is None:
            await self._say(live, result, f"Unknown command /{invocation.name}. /help lists the commands.")
            return None
        prompt = await invocation.command.run(self._context(live, invocation, result), invocation.args)
        if prompt:
            await journal.write("user", prompt, audience="model", command=invocation.command.name)
        return prompt

    def _context(self, live: LiveSession, invocation: Invocation, result: TurnResult) -> CommandContext:
        """What the running command may use."""
        parts = self.parts
        journal = live.journal
        assert journal is not None, "a command runs in a turn"

        async def select(**changes: str) -> SessionRecord:
            live.record = await parts.selector.apply(live.record, emit=live.emit, **changes)
            return live.record

        async def agent_turn(prompt: str, cwd: Path) -> None:
            history = await parts.recorder.model_history(live)
            await journal.write("user", prompt, audience="model", command=invocation.name)
            await self._run_runtime(live, history, prompt, result, cwd=cwd, in_worktree=True, voice=AGENT_SAYS)

        async def compact() -> None:
            await self._run_runtime(live, await parts.recorder.model_history(live), "", result, compact=True)

        return CommandContext(
            session=live.record,
            name=invocation.name,
            commands=parts.commands.commands(live.record.cwd),
            models=parts.models.all(),
            ask=lambda question: self._ask(live, question),
            say=lambda text: self._say(live, result, text),
            select=select,
            emit=live.emit,
            show_link=lambda link: self._say(live, result, link.kept, link),
            agent_turn=agent_turn,
            compact=compact,
            follow_up=lambda after, command, args: parts.follow_up(live.record.id, command, args, after),
            spawn=lambda args: parts.spawn(live.record, args),
        )

    async def _run_runtime(
        self,
        live: LiveSession,
        history: list[ChatMessage],
        prompt: str,
        result: TurnResult,
        *,
        cwd: Path | None = None,
        in_worktree: bool = False,
        voice: str = "",
        images: tuple[Image, ...] = (),
        compact: bool = False,
    ) -> None:
        """A runtime turn on ``prompt``; its tools work in ``cwd`` (default: the Session's directory). A turn
        ``in_worktree`` carries out an approved Plan in RunWield's own worktree: it may write files there without asking.
        ``voice`` marks the model's words as its own; ``compact`` asks the runtime to compact the context instead."""
        record = live.record
        seeing = self.parts.vision.tools_for(record.model) if self.parts.vision is not None else ()
        live.steering = SteeringInbox()

        async def ask(question: Question, call_id: str | None = None) -> Outcome:
            return await self._ask(live, question, call_id)

        request = TurnRequest(
            session=record,
            prompt=prompt,
            history=history,
            tools=(*self.parts.tools, *live.client_tools, *seeing),
            cwd=cwd or Path(record.cwd),
            emit=self._observed(live),
            ask=ask,
            steering=live.steering,
            result=result,
            voice=voice,
            permit=self.parts.gate.permit(record.id, ask, WORKTREE_RULES if in_worktree else None),
            command_timeout=self.parts.command_timeout,
            background=self._background(live).start,
            images=images,
            compact=compact,
        )
        try:
            await self.parts.runtime.run_turn(request)
        finally:
            live.steering = None  # from here on, steered input would be lost: it is refused instead

    def _background(self, live: LiveSession) -> BackgroundTasks:
        """The Session's background tasks; each result comes back as the Session's own turn."""
        if live.background is None:
            session_id = live.record.id

            def deliver(title: str, output: str) -> asyncio.Task[None]:
                return self.parts.follow_up(session_id, result_command(title, output), "", None)

            live.background = BackgroundTasks(deliver)
        return live.background

    def _observed(self, live: LiveSession) -> Emit:
        """The live Session's emit, recording each finished tool call in the workflow metrics."""

        async def emit(event: Event) -> None:
            if isinstance(event, ToolProgress) and event.status in ("completed", "failed"):
                self.parts.metrics.record(live.record.id, "tool", call=event.call_id, title=event.title, status=event.status)
            await live.emit(event)

        return emit

    async def _ask(self, live: LiveSession, question: Question, tool_call_id: str | None = None) -> Outcome:
        """Ask the user through the broker; an expired or unshowable question is said, never answered by default."""
        journal = live.journal
        assert journal is not None, "a question is asked in a turn"
        await journal.write("question", question.prompt, question_kind=question.kind)
        status = "cancelled"
        try:
            outcome = await self.parts.broker.ask(live.record.id, question, live, tool_call_id)
            status = outcome.status
        finally:
            live.park(False)
            await asyncio.shield(journal.write("question_settled", "", status=status))
        if outcome.status in UNSETTLED_NOTICE:
            await live.emit(Notice(UNSETTLED_NOTICE[outcome.status].format(reason=outcome.reason), "warning"))
        return outcome

    async def _say(self, live: LiveSession, result: TurnResult, text: str, link: PlanLink | None = None) -> None:
        """A command's output (a plain message, or a review link): shown and kept in the transcript, but not part
        of the model's conversation. A review link is shown to the live client only; the transcript keeps its words
        without the link."""
        gap = "\n\n" if result.replied else ""
        result.replied = True
        if link is None:
            await live.emit(MessageChunk(gap + text, result.message_id, aside=True))
        else:
            await live.emit(replace(link, text=gap + link.text, kept=gap + link.kept, message_id=result.message_id))

    async def _finish(self, live: LiveSession, journal: TurnJournal, result: TurnResult, settled: TurnSettled) -> None:
        """Close the turn's open tool calls, say why it failed (if it did), and settle it in the transcript."""
        for call_id, tool in list(live.open_tools.items()):
            await live.emit(ToolProgress(call_id, tool.title, tool.kind, "failed", output="cancelled"))
        live.open_tools.clear()
        if settled.error:
            await live.emit(Notice(f"The turn could not be completed: {settled.error}", "error"))
        await self.parts.recorder.end(live, journal, result, settled.stop_reason)
