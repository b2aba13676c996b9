"""The Session Host: durable Sessions, one turn at a time, cancellation that settles; questions, commands, steering."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..redaction import redact
from .builtin_commands import BUILTIN_COMMANDS
from .catalog import ModelCatalog, UnknownChoice, agent_profile
from .commands import Command, CommandContext, CommandRegistry, Invocation, parse_invocation
from .events import (
    Event,
    MessageChunk,
    Notice,
    PlanLink,
    QuestionAsked,
    SelectionChanged,
    ToolProgress,
    TurnSettled,
)
from .interactions import InteractionBroker, Outcome, PendingQuestion, Question
from .locks import WriterLock
from .metrics import WorkflowMetrics
from .models import ChatMessage, ModelError
from .runtime import TurnResult, TurnRunner
from .steering import INJECTED, NO_RUNNING_TURN, QUESTION_PENDING, SteeringInbox, SteeringRejected, SteeringResult
from .store import SessionRecord, Store
from .tools import Tool
from .transcript import INTERRUPTED_ENTRY, TurnJournal, replay

log = logging.getLogger(__name__)
Emit = Callable[[Event], Awaitable[None]]
FormAsker = Callable[[PendingQuestion], Awaitable[Outcome]]
MessageRoute = Callable[[SessionRecord], Awaitable[Command | None]]
"""The command that takes a Session's plain messages instead of the model (a Pair Execution), if any."""
LoadCheck = Callable[[str], Awaitable[Command | None]]
"""A command to run as the Session's own turn when a client loads it (an interrupted execution), if any."""
TITLE_LENGTH = 60
QUESTION_TIMEOUT = 3600.0
FOLLOW_UP_POLL = 0.1
UNSETTLED_NOTICE = {
    "expired": "The question expired without an answer; nothing was chosen.",
    "failed": "The question could not be asked ({reason}); nothing was chosen.",
}
AGENT_SAYS = "🤖 Agent says: "
"""Marks the words of an Agent working for a command (an execution): its claims, which are not the outcome."""
ORPHANED_QUESTION = (
    "The question “{prompt}” was asked by a process that has since stopped, so it can no longer be answered. "
    "Nothing was chosen; run the command again to retry it."
)


class SessionNotFound(LookupError):
    """No Session has this id."""


class SessionBusy(RuntimeError):
    """Another turn holds the Session's writer; the input was not used and can be sent again."""


class SessionClosed(LookupError):
    """The Session exists but is not open in this process."""


class QuestionPending(RuntimeError):
    """A chat question owns the Session's next message: answer it with `SessionHost.reply`."""


@dataclass(frozen=True, slots=True)
class AwaitingReply:
    """The prompt is over but its turn is not: a chat question waits for the Session's next message."""

    question_id: str


PromptResult = TurnSettled | AwaitingReply


@dataclass
class LiveSession:
    """A Session's in-memory resources while some client has it open."""

    record: SessionRecord
    lock: WriterLock
    turn: asyncio.Task[TurnSettled] | None = None
    cancelling: bool = False
    finishing: bool = False
    open_tools: dict[str, ToolProgress] = field(default_factory=dict)
    history: list[ChatMessage] = field(default_factory=list)
    history_until: int = 0  # id of the last transcript entry folded into ``history``
    history_message: str | None = None  # the id of the agent message that ``history`` ends with, if it does
    sink: Emit | None = None  # where the turn's events go: the prompt (or reply) now following it
    forms: FormAsker | None = None  # how that prompt's client answers questions in place, if it can
    parked: asyncio.Event = field(default_factory=asyncio.Event)  # a chat question waits for the next message
    steering: SteeringInbox | None = None  # set while a model turn can take steered input
    follow_ups: set[asyncio.Task[None]] = field(default_factory=set)  # turns the Session will start itself
    own_turn: bool = False  # the running turn is one the Session started itself
    journal: TurnJournal | None = None  # writes the running turn to the transcript as it goes

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def follow(self, emit: Emit, forms: FormAsker | None) -> None:
        """Send the turn's events, and its questions, to this prompt from now on."""
        self.sink, self.forms = emit, forms

    async def emit(self, event: Event) -> None:
        """Pass an event on, remembering tool calls still open so a cancelled turn can close them, and keeping
        what it shows in the running turn's transcript."""
        if isinstance(event, ToolProgress):
            if event.status in ("completed", "failed"):
                self.open_tools.pop(event.call_id, None)
            else:
                self.open_tools[event.call_id] = event
        if self.journal is not None:
            await self.journal.record(event)
        if self.sink is not None:
            await self.sink(event)

    async def present(self, pending: PendingQuestion) -> Outcome | None:
        """Show a question: as a form where the client has forms, else as a chat menu that parks the prompt."""
        if self.forms is not None:
            return await self.forms(pending)
        await self.emit(QuestionAsked(pending.id, pending.question, pending.tool_call_id))
        self.parked.set()
        return None


class SessionHost:
    """Creates, loads, runs and settles Sessions. Imports no protocol and no platform."""

    def __init__(
        self,
        store: Store,
        models: ModelCatalog,
        tools: Sequence[Tool],
        state_dir: Path,
        default_model: str = "scripted",
        default_agent: str = "build",
        *,
        commands: CommandRegistry | None = None,
        metrics: WorkflowMetrics | None = None,
        question_timeout: float | None = QUESTION_TIMEOUT,
        work_tools: Sequence[Tool] = (),
        message_route: MessageRoute | None = None,
        load_checks: Sequence[LoadCheck] = (),
    ) -> None:
        models.info(default_model)
        agent_profile(default_agent)
        self.store = store
        self.models = models
        self.tools = tuple(tools)
        self.lock_dir = state_dir / "locks"
        self.default_model = default_model
        self.default_agent = default_agent
        self.commands = commands or CommandRegistry(BUILTIN_COMMANDS)
        self.metrics = metrics or WorkflowMetrics(None)
        self.broker = InteractionBroker(question_timeout, self.metrics)
        self.work_tools = tuple(work_tools)  # offered only to turns working in a worktree
        self.message_route = message_route
        self.load_checks = tuple(load_checks)
        self._live: dict[str, LiveSession] = {}

    async def create(self, cwd: str, title: str = "") -> SessionRecord:
        reasoning = self.models.reasoning_for(self.default_model, None)
        record = await self.store.create_session(
            cwd=cwd, agent=self.default_agent, model=self.default_model, reasoning=reasoning, title=title
        )
        self._live[record.id] = LiveSession(record, WriterLock(self.lock_dir, record.id))
        return record

    async def get(self, session_id: str) -> SessionRecord:
        record = await self.store.get_session(session_id)
        if record is None:
            raise SessionNotFound(f"no Session with id {session_id!r}")
        return record

    async def open(self, session_id: str) -> SessionRecord:
        """Make a stored Session live (without reserving its writer) and return it."""
        if (live := self._live.get(session_id)) is not None:
            return live.record  # each turn re-reads the record before it starts
        record = await self.get(session_id)
        self._live[session_id] = LiveSession(record, WriterLock(self.lock_dir, session_id))
        return record

    async def history(self, session_id: str) -> list[Event]:
        """The saved conversation as events, oldest first: messages, thoughts, tool calls and notices. A turn
        whose process ended before it settled is first marked interrupted (once): it replays as what it said
        before the end, then a notice that it was interrupted. It is never run again."""
        await self._mark_interrupted(session_id)
        return replay(await self.store.transcript(session_id))

    async def _mark_interrupted(self, session_id: str) -> None:
        """Mark interrupted the turns that were running before no writer held the Session (so their process
        ended), checking the writer without taking it."""
        running = await self.store.running_turns(session_id)
        if running and not self.is_busy(session_id) and self._writer_free(session_id):
            await self.store.interrupt_turns(session_id, running, INTERRUPTED_ENTRY)

    def attach(self, session_id: str, emit: Emit, forms: FormAsker | None = None) -> None:
        """Send the turns this Session starts itself (follow-ups) to this client, until a prompt takes them."""
        live = self._live[session_id]
        if not live.busy:
            live.follow(emit, forms)

    async def attend(self, session_id: str, emit: Emit, forms: FormAsker | None = None) -> None:
        """A client loaded the Session: attach it, retire a question whose process is gone (saying so), and start
        what the Session was in the middle of (the load checks' commands) as its own turns."""
        live = await self._open_live(session_id)
        self.attach(session_id, emit, forms)
        if not live.busy and not live.parked.is_set() and self._writer_free(session_id):
            await self._retire_orphaned_question(live)
        for check in self.load_checks:
            if (command := await check(session_id)) is not None:
                self.follow_up(session_id, command)

    def follow_up(self, session_id: str, command: Command, args: str = "", after: Awaitable[Any] | None = None) -> None:
        """Once ``after`` completes (a review decided), run ``command`` as the Session's own turn when no turn runs;
        it streams to the client the Session follows. Closing the Session drops it."""
        live = self._live[session_id]
        task = asyncio.create_task(self._follow_up(live, command, args, after), name=f"follow-up:{session_id}:{command.name}")
        live.follow_ups.add(task)
        task.add_done_callback(live.follow_ups.discard)
        task.add_done_callback(_log_failure)

    async def _follow_up(self, live: LiveSession, command: Command, args: str, after: Awaitable[Any] | None) -> None:
        if after is not None:
            await after
        while live.busy or live.parked.is_set() or not live.lock.try_acquire():
            await asyncio.sleep(FOLLOW_UP_POLL)
        live.own_turn = True
        live.turn = asyncio.create_task(self._turn(live, None, Invocation(command, command.name, args)))
        await asyncio.wait({live.turn})

    async def _retire_orphaned_question(self, live: LiveSession) -> None:
        """A chat question left unsettled by a stopped process: tell the user to retry it, and mark it settled."""
        asked = [e for e in await self.store.transcript(live.record.id) if e.kind in ("question", "question_settled")]
        if asked and asked[-1].kind == "question":
            text = ORPHANED_QUESTION.format(prompt=asked[-1].text.splitlines()[0])
            await self.store.append_many(live.record.id, [("question_settled", "", {"status": "gone"}), ("notice", text, {"level": "warning"})])
            await live.emit(Notice(text, "warning"))

    def is_busy(self, session_id: str) -> bool:
        live = self._live.get(session_id)
        return live is not None and live.busy

    async def prompt(self, session_id: str, text: str, emit: Emit, *, forms: FormAsker | None = None) -> PromptResult:
        """Run one turn: a slash command or a model turn. Questions go to ``forms`` when given, else to chat,
        where the first one ends the prompt with AwaitingReply (the turn goes on; `reply` answers it).
        Raises SessionBusy if another turn (here or in another process) holds the writer, and
        QuestionPending if a chat question owns this message."""
        live = await self._ready(session_id)
        if live.parked.is_set():
            raise QuestionPending(f"Session {session_id} is waiting for the answer to a question")
        if live.busy or not live.lock.try_acquire():
            raise SessionBusy(f"Session {session_id} is busy with another turn; send your message again when it ends")
        invocation = self.commands.resolve(live.record.cwd, text)
        live.follow(emit, forms)
        live.own_turn = False
        live.turn = asyncio.create_task(self._turn(live, text, invocation), name=f"turn:{session_id}")
        return await self._next_stop(live)

    async def waiting_question(self, session_id: str) -> PendingQuestion | None:
        """The chat question that owns the Session's next message, if any (after a cancelled turn has settled)."""
        live = await self._ready(session_id)
        return self.broker.pending(session_id) if live.parked.is_set() else None

    async def reply(self, session_id: str, outcome: Outcome, emit: Emit, *, forms: FormAsker | None = None) -> PromptResult:
        """Settle the waiting chat question with the user's reply; the turn goes on, streaming to ``emit``."""
        live = await self._ready(session_id)
        pending = self.broker.pending(session_id)
        if pending is None or not live.parked.is_set():
            raise LookupError(f"Session {session_id} has no question waiting for a reply")
        live.follow(emit, forms)
        live.parked.clear()
        pending.settle(outcome)
        return await self._next_stop(live)

    async def steer(self, session_id: str, text: str) -> SteeringResult:
        """Add input to the running model turn's next request; anything else is left for an ordinary prompt."""
        if not text.strip():
            raise SteeringRejected("the steering input is empty")
        live = self._live.get(session_id)
        if live is None:
            await self.get(session_id)
            raise SessionClosed(f"Session {session_id} is not open; load it first")
        if live.parked.is_set():
            return QUESTION_PENDING
        if parse_invocation(text) is not None:
            raise SteeringRejected("a slash command cannot steer a turn; send it as a prompt")
        if live.steering is None or live.cancelling or live.finishing:
            return NO_RUNNING_TURN
        live.steering.put(text)
        self.metrics.record(session_id, "steering_injected")
        return INJECTED

    async def commands_for(self, session_id: str) -> list[Command]:
        """The commands a Session's client may offer: built-ins, plugins, then the project's templates and Skills."""
        record = await self.get(session_id)
        return [c for c in self.commands.commands(record.cwd) if c.advertised]

    async def cancel(self, session_id: str) -> None:
        """Stop the running turn, if any, and return once it has settled."""
        live = self._live.get(session_id)
        if live is None or not live.busy:
            return
        live.cancelling = True
        if not live.finishing:
            live.turn.cancel()
        await asyncio.wait({live.turn})

    async def close(self, session_id: str) -> None:
        """Release live resources; stored state, archive flag included, is untouched."""
        await self.cancel(session_id)
        live = self._live.pop(session_id, None)
        if live is not None:
            for task in list(live.follow_ups):
                task.cancel()
            live.lock.release()

    async def archive(self, session_id: str, archived: bool = True) -> SessionRecord:
        await self.get(session_id)
        await self.cancel(session_id)
        return await self.store.update_session(session_id, archived=archived)

    async def select(
        self,
        session_id: str,
        *,
        model: str | None = None,
        reasoning: str | None = None,
        agent: str | None = None,
        emit: Emit | None = None,
    ) -> SessionRecord:
        """Change the Session's model, reasoning level or Agent; invalid or mid-turn changes fail and change nothing.
        A real change is sent to ``emit``: the complete selection, and an Agent switch announced once."""
        record = await self.get(session_id)
        if self.is_busy(session_id) or not self._writer_free(session_id):
            raise SessionBusy("the Session is running a turn; change the selection when it ends")
        return await self._apply_selection(record, model=model, reasoning=reasoning, agent=agent, emit=emit)

    async def _apply_selection(
        self,
        record: SessionRecord,
        *,
        model: str | None = None,
        reasoning: str | None = None,
        agent: str | None = None,
        emit: Emit | None = None,
    ) -> SessionRecord:
        session_id = record.id
        new_model = model or record.model
        if reasoning is not None:
            info = self.models.info(new_model)
            if reasoning not in info.reasoning_levels:
                allowed = ", ".join(info.reasoning_levels) or "none"
                raise UnknownChoice(f"model {new_model!r} has no reasoning level {reasoning!r} (levels: {allowed})")
        new_reasoning = self.models.reasoning_for(new_model, reasoning or record.reasoning)
        new_agent = agent_profile(agent).id if agent else record.agent
        updated = await self.store.update_session(session_id, model=new_model, reasoning=new_reasoning, agent=new_agent)
        if session_id in self._live:
            self._live[session_id].record = updated
        selection = (updated.agent, updated.model, updated.reasoning)
        if selection != (record.agent, record.model, record.reasoning):
            self.metrics.record(session_id, "selection", agent=updated.agent, model=updated.model, reasoning=updated.reasoning)
            if emit is not None:
                if updated.agent != record.agent:
                    profile = agent_profile(updated.agent)
                    await emit(Notice(f"Now working as the {profile.name} Agent: {profile.description}."))
                await emit(SelectionChanged(*selection))
        return updated

    def _writer_free(self, session_id: str) -> bool:
        """True when no process holds the Session's writer (checked without taking it: checking is not holding)."""
        return not WriterLock(self.lock_dir, session_id).taken()

    async def shutdown(self) -> None:
        for session_id in list(self._live):
            await self.close(session_id)

    async def _open_live(self, session_id: str) -> LiveSession:
        await self.open(session_id)
        return self._live[session_id]

    async def _ready(self, session_id: str) -> LiveSession:
        """The live Session, once a turn being cancelled has settled (so its question cannot take the next message),
        and a turn the Session started itself has ended or asked a question (which then claims the next message)."""
        live = await self._open_live(session_id)
        if live.busy and live.cancelling:
            await asyncio.wait({live.turn})
        elif live.busy and live.own_turn:
            await self._next_stop(live)
        return live

    async def _next_stop(self, live: LiveSession) -> PromptResult:
        """Wait until the turn settles, or a chat question parks it until the next message."""
        while True:
            parked = asyncio.ensure_future(live.parked.wait())
            try:
                await asyncio.wait({live.turn, parked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                parked.cancel()
            if live.turn.done():
                return live.turn.result()
            if live.parked.is_set() and (pending := self.broker.pending(live.record.id)) is not None:
                return AwaitingReply(pending.id)

    async def _turn(self, live: LiveSession, text: str | None, invocation: Invocation | None) -> TurnSettled:
        """One turn: the user's ``text`` (None for a turn the Session starts itself), a command or a model turn."""
        session_id = live.record.id
        result = TurnResult()
        settled = TurnSettled("end_turn")
        journal = live.journal = TurnJournal(self.store, session_id)
        recorded = asyncio.ensure_future(self._record_prompt(live, journal, text, command=invocation is not None))
        self.metrics.record(session_id, "turn_started", command=invocation.name if invocation else None)
        try:
            history = await asyncio.shield(recorded)  # the user's input is kept even if the turn is cancelled
            if invocation is None and self.message_route and (route := await self.message_route(live.record)):
                invocation = Invocation(route, route.name, text or "")
            prompt = await self._run_command(live, invocation, result) if invocation else text
            if prompt:
                await self._run_model(live, history, prompt, result)
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
            live.lock.release()
        self.metrics.record(session_id, "turn_settled", stop_reason=settled.stop_reason)
        await live.emit(settled)
        return settled

    async def _run_command(self, live: LiveSession, invocation: Invocation, result: TurnResult) -> str | None:
        """Run a slash command; returns the prompt it hands on to the model, if any."""
        session_id = live.record.id
        journal = live.journal
        assert journal is not None, "a command runs in a turn"
        known = invocation.command is not None
        self.metrics.record(session_id, "command", name=invocation.name, known=known)
        if invocation.command is None:
            await self._say(live, result, f"Unknown command /{invocation.name}. /help lists the commands.")
            return None

        async def select(**changes: str) -> SessionRecord:
            return await self._apply_selection(live.record, emit=live.emit, **changes)

        async def agent_turn(prompt: str, cwd: Path) -> None:
            await journal.flush()
            history = await self._model_history(live)
            await journal.write("user", prompt, audience="model", command=invocation.name)
            tools = (*self.tools, *self.work_tools)
            await self._run_model(live, history, prompt, result, cwd=cwd, tools=tools, voice=AGENT_SAYS)

        context = CommandContext(
            session=live.record,
            name=invocation.name,
            commands=self.commands.commands(live.record.cwd),
            models=self.models.all(),
            ask=lambda question: self._ask(live, question),
            say=lambda text: self._say(live, result, text),
            select=select,
            emit=live.emit,
            show_link=lambda link: self._say(live, result, link.kept, link),
            agent_turn=agent_turn,
            follow_up=lambda after, command, args: self.follow_up(session_id, command, args, after),
        )
        prompt = await invocation.command.run(context, invocation.args)
        if prompt:
            await journal.write("user", prompt, audience="model", command=invocation.command.name)
        return prompt

    async def _run_model(
        self,
        live: LiveSession,
        history: list[ChatMessage],
        prompt: str,
        result: TurnResult,
        *,
        cwd: Path | None = None,
        tools: Sequence[Tool] | None = None,
        voice: str = "",
    ) -> None:
        """A model turn on ``prompt``; its tools work in ``cwd`` (default: the Session's directory); ``voice`` marks
        the model's words as its own."""
        record = live.record
        live.steering = SteeringInbox()
        runner = TurnRunner(
            model=self.models.build(record.model),
            tools=self.tools if tools is None else tools,
            session_id=record.id,
            cwd=cwd or Path(record.cwd),
            reasoning=record.reasoning,
            base_cost=record.cost_usd,
            emit=self._observed(live),
            result=result,
            instructions=agent_profile(record.agent).instructions,
            ask=lambda question, call_id: self._ask(live, question, call_id),
            steering=live.steering,
            voice=voice,
        )
        try:
            await runner.run(history, prompt)
        finally:
            live.steering = None  # from here on, steered input would be lost: it is refused instead

    def _observed(self, live: LiveSession) -> Emit:
        """The live Session's emit, recording each finished tool call in the workflow metrics."""

        async def emit(event: Event) -> None:
            if isinstance(event, ToolProgress) and event.status in ("completed", "failed"):
                self.metrics.record(live.record.id, "tool", call=event.call_id, title=event.title, status=event.status)
            await live.emit(event)

        return emit

    async def _ask(self, live: LiveSession, question: Question, tool_call_id: str | None = None) -> Outcome:
        """Ask the user through the broker; an expired or unshowable question is said, never answered by default."""
        journal = live.journal
        assert journal is not None, "a question is asked in a turn"
        await journal.write("question", question.prompt, question_kind=question.kind)
        status = "cancelled"
        try:
            outcome = await self.broker.ask(live.record.id, question, live, tool_call_id)
            status = outcome.status
        finally:
            live.parked.clear()
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

    async def _record_prompt(self, live: LiveSession, journal: TurnJournal, text: str | None, command: bool = False) -> list[ChatMessage]:
        """Start the turn in the transcript with the prompt (titling an untitled Session), durably before anything
        of the turn is shown, and return the history before it. A slash command is kept for the user to see, not
        for the model, and titles nothing; a turn the Session starts itself (no text) has no prompt."""
        session_id = live.record.id
        live.record = await self.get(session_id)
        history = await self._model_history(live)
        entries = [] if text is None else [("user", text, {"audience": "user"} if command else {})]
        title = {}
        if text is not None and not command and not live.record.title and text.strip():
            title = {"title": text.strip().splitlines()[0][:TITLE_LENGTH]}
        live.record = await journal.begin(entries, **title) or live.record
        return history

    async def _finish(self, live: LiveSession, journal: TurnJournal, result: TurnResult, settled: TurnSettled) -> None:
        """Close the turn's open tool calls, say why it failed (if it did), and settle it in the transcript."""
        for call_id, tool in list(live.open_tools.items()):
            await live.emit(ToolProgress(call_id, tool.title, tool.kind, "failed", output="cancelled"))
        live.open_tools.clear()
        if settled.error:
            await live.emit(Notice(f"The turn could not be completed: {settled.error}", "error"))
        cost = {"cost_delta": result.cost_usd} if result.cost_usd else {}
        live.record = await journal.end(settled.stop_reason, **cost) or live.record

    async def _model_history(self, live: LiveSession) -> list[ChatMessage]:
        """The conversation as the model sees it, read incrementally (other processes may have added to it)."""
        for entry in await self.store.transcript(live.record.id, after=live.history_until):
            live.history_until = entry.id or live.history_until
            if entry.payload.get("audience") == "user":
                continue
            if entry.kind == "user":
                live.history.append(ChatMessage("user", entry.text))
                live.history_message = None
            elif entry.kind == "agent":
                message_id = entry.payload.get("message_id")
                if message_id and message_id == live.history_message:  # the next piece of the same reply
                    live.history[-1] = replace(live.history[-1], text=live.history[-1].text + entry.text)
                else:
                    live.history.append(ChatMessage("assistant", entry.text))
                live.history_message = message_id
        return list(live.history)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        log.error("a follow-up turn failed: %s", error, exc_info=error)
