"""The Session Host: the one entry point the ACP server (and through it every client) uses.

``SessionHost`` has more than 15 public methods (19) because it is the facade over the parts that do the work, one
job each: the registry of live Sessions (`live.py`), the turn scheduler (`scheduler.py`), the turn itself
(`turn.py`), the transcript recorder (`recorder.py`), the selection (`selection.py`), the question broker
(`interactions.py`), the tool servers a client brings (`tool_servers.py`), the images (`vision.py`), the runtime
that drives turns (`runtime.py`, the contract) and the Sessions a /spawn starts (`spawned.py`). Each method here only
checks the request and hands it to those parts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .builtin_commands import BUILTIN_COMMANDS
from .catalog import ModelCatalog, agent_profile
from .children import ChildSessions, spawn_session_tool
from .commands import Command, CommandRegistry, Invocation, parse_invocation
from .events import Event, QuestionAsked, TurnSettled
from .interactions import InteractionBroker, Outcome, PendingQuestion
from .live import Emit, FormAsker, LiveSession, SessionNotFound, SessionRegistry
from .metrics import WorkflowMetrics
from .peers import send_session_tool
from .recorder import TranscriptRecorder
from .records import SessionRecord
from .runtime import NativeOnly, Runtime, RuntimeAxis
from .scheduler import AwaitingReply, PromptResult, TurnScheduler
from .selection import Selector
from .shortage import Shortages
from .spawned import SessionSpawner
from .steering import INJECTED, NO_RUNNING_TURN, QUESTION_PENDING, SteeringRejected, SteeringResult
from .tool_gate import ToolGate, ToolRules, TranscriptGrants
from .tool_servers import StartToolServers, StdioServerSpec
from .tools import COMMAND_TIMEOUT, Tool
from .vision import Image, ImagesUnsupported, Vision
from .turn import MessageRoute, TurnExecutor, TurnParts

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "AwaitingReply",
    "Emit",
    "Image",
    "ImagesUnsupported",
    "FormAsker",
    "PromptResult",
    "QuestionPending",
    "SessionBusy",
    "SessionClosed",
    "SessionHost",
    "SessionNotFound",
]

LoadCheck = Callable[[str], Awaitable[Command | None]]
"""A command to run as the Session's own turn when a client loads it (an interrupted execution), if any."""
QUESTION_TIMEOUT = 3600.0


class SessionBusy(RuntimeError):
    """Another turn holds the Session's writer; the input was not used and can be sent again."""


class SessionClosed(LookupError):
    """The Session exists but is not open in this process."""


class QuestionPending(RuntimeError):
    """A chat question owns the Session's next message: answer it with `SessionHost.reply`."""


class SessionHost:
    """Creates, loads, runs and settles Sessions. Imports no protocol and no platform.

    It has more than 15 public methods because it is the facade over the parts named in this module's docstring.
    """

    def __init__(
        self,
        store: Store,
        models: ModelCatalog,
        tools: Sequence[Tool],
        state_dir: Path,
        default_model: str = "scripted",
        default_agent: str = "build",
        *,
        runtime: Runtime,
        runtimes: RuntimeAxis | None = None,
        commands: CommandRegistry | None = None,
        metrics: WorkflowMetrics | None = None,
        question_timeout: float | None = QUESTION_TIMEOUT,
        tool_rules: ToolRules = ToolRules(),
        command_timeout: float = COMMAND_TIMEOUT,
        message_route: MessageRoute | None = None,
        load_checks: Sequence[LoadCheck] = (),
        start_tool_servers: StartToolServers | None = None,
        vision: Vision | None = None,
    ) -> None:
        models.info(default_model)
        agent_profile(default_agent)
        self.store = store
        self.models = models
        self.children = ChildSessions(self, self._follow_up)
        """The one-shot child Sessions each Session started (``spawn_session``), and its messages to peers."""
        self.tools = (*tools, spawn_session_tool(self.children), send_session_tool(self.children))
        self.default_model = default_model
        self.default_agent = default_agent
        self.commands = commands or CommandRegistry(BUILTIN_COMMANDS)
        self.metrics = metrics or WorkflowMetrics(None)
        self.broker = InteractionBroker(question_timeout, self.metrics)
        self.load_checks = tuple(load_checks)
        self.start_tool_servers = start_tool_servers
        self.vision = vision
        self.registry = SessionRegistry(store.sessions, store.writer_locks(state_dir / "locks"))
        self.recorder = TranscriptRecorder(store.sessions)
        self.runtimes = runtimes or NativeOnly()
        """Which runtime each Session has chosen (``native`` or ``acp:NAME``)."""
        self.selector = Selector(store.sessions, models, self.metrics, self.runtimes)
        self.spawner = SessionSpawner(self)
        self.scheduler = TurnScheduler(self.broker)
        self.shortages = Shortages()
        self.turns = TurnExecutor(
            TurnParts(
                recorder=self.recorder,
                runtime=runtime,
                selector=self.selector,
                commands=self.commands,
                models=models,
                broker=self.broker,
                metrics=self.metrics,
                tools=self.tools,
                gate=ToolGate(tool_rules, TranscriptGrants(store.sessions)),
                command_timeout=command_timeout,
                message_route=message_route,
                follow_up=self._follow_up,
                spawn=self.spawner.spawn,
                vision=vision,
            )
        )

    async def create(self, cwd: str, title: str = "") -> SessionRecord:
        reasoning = self.models.reasoning_for(self.default_model, None)
        record = await self.store.sessions.create_session(
            cwd=cwd, agent=self.default_agent, model=self.default_model, reasoning=reasoning, title=title
        )
        self.registry.add(record)
        return record

    async def get(self, session_id: str) -> SessionRecord:
        return await self.registry.get(session_id)

    async def open(self, session_id: str) -> SessionRecord:
        """Make a stored Session live (without reserving its writer) and return it."""
        return (await self.registry.open(session_id)).record

    async def history(self, session_id: str) -> list[Event]:
        """The saved conversation as events, oldest first: messages, thoughts, tool calls and notices. A turn
        whose process ended before it settled is first marked interrupted (once): it replays as what it said
        before the end, then a notice that it was interrupted. It is never run again."""
        idle = not self.registry.is_busy(session_id) and await self.registry.writer_free(session_id)
        return await self.recorder.history(session_id, idle=idle)

    def attach(self, session_id: str, emit: Emit, forms: FormAsker | None = None) -> None:
        """Send the turns this Session starts itself (follow-ups) to this client, until a prompt takes them; also the
        rest of such a turn running now that no client follows (a /spawn's task)."""
        live = self.registry.find(session_id)
        if live is None:
            raise SessionClosed(f"Session {session_id} is not open; load it first")
        if not live.busy or (live.own_turn and live.sink is None):
            live.follow(emit, forms)

    async def attend(self, session_id: str, emit: Emit, forms: FormAsker | None = None) -> None:
        """A client loaded the Session: attach it (showing it the chat question that a turn nobody followed asked: in a
        form where it has forms), retire
        a question whose process is gone (saying so), and start what the Session was in the middle of (the load checks'
        commands) as its own turns."""
        live = await self.registry.open(session_id)
        unseen = live.sink is None and live.parked and self.broker.pending(session_id)
        self.attach(session_id, emit, forms)
        if unseen and forms is not None:
            live.ask_in_form(unseen, forms)
        elif unseen:
            await emit(QuestionAsked(unseen.id, unseen.question, unseen.tool_call_id))
        if not live.busy and not live.parked and await self.registry.writer_free(session_id):
            await self.recorder.retire_orphaned_question(live)
        for check in self.load_checks:
            if (command := await check(session_id)) is not None:
                self._follow_up(session_id, command, "", None)

    @property
    def accepts_images(self) -> bool:
        """Prompts may carry images: some model can see them."""
        return self.vision is not None and self.vision.accepts_images

    async def prompt(
        self, session_id: str, text: str, emit: Emit, *, forms: FormAsker | None = None, images: Sequence[Image] = ()
    ) -> PromptResult:
        """Run one turn: a slash command or a model turn. Questions go to ``forms`` when given, else to chat,
        where the first one ends the prompt with AwaitingReply (the turn goes on; `reply` answers it).
        Raises SessionBusy if another turn (here or in another process) holds the writer,
        QuestionPending if a chat question owns this message, ImagesUnsupported if nothing can see its images, and
        OutOfResources if the process cannot take the writer now (out of open files, say)."""
        live = await self._ready(session_id)
        if images and self.vision is None:
            raise ImagesUnsupported("this Session Host takes no images")
        if self.vision is not None:
            text, images = self.vision.prepare(session_id, live.record.model, text, images)
        if live.parked:
            raise QuestionPending(f"Session {session_id} is waiting for the answer to a question")
        # busy again after the take: another prompt here started its turn (with this lock) while it was taken
        if live.busy or not await self._take_writer(live) or live.busy:
            raise SessionBusy(f"Session {session_id} is busy with another turn; send your message again when it ends")
        invocation = self.commands.resolve(live.record.cwd, text)
        live.follow(emit, forms)
        seen = tuple(images)
        self.scheduler.start(live, lambda: self.turns.run(live, text, invocation, seen), own=False, name=f"turn:{session_id}")
        return await self.scheduler.next_stop(live)

    async def _take_writer(self, live: LiveSession) -> bool:
        try:
            taken = await live.lock.try_acquire()
        except OSError as exc:
            raise self.shortages.refusal(live.record.id, exc) from None
        self.shortages.recovered()
        return taken

    async def waiting_question(self, session_id: str) -> PendingQuestion | None:
        """The chat question that owns the Session's next message, if any (after a cancelled turn has settled)."""
        live = await self._ready(session_id)
        return self.broker.pending(session_id) if live.parked else None

    async def reply(self, session_id: str, outcome: Outcome, emit: Emit, *, forms: FormAsker | None = None) -> PromptResult:
        """Settle the waiting chat question with the user's reply; the turn goes on, streaming to ``emit``."""
        live = await self._ready(session_id)
        pending = self.broker.pending(session_id)
        if pending is None or not live.parked:
            raise LookupError(f"Session {session_id} has no question waiting for a reply")
        live.follow(emit, forms)
        live.park(False)
        pending.settle(outcome)
        return await self.scheduler.next_stop(live)

    async def steer(self, session_id: str, text: str) -> SteeringResult:
        """Add input to the running model turn's next request; anything else is left for an ordinary prompt."""
        if not text.strip():
            raise SteeringRejected("the steering input is empty")
        live = self.registry.find(session_id)
        if live is None:
            await self.get(session_id)
            raise SessionClosed(f"Session {session_id} is not open; load it first")
        if live.parked:
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
        """Stop the Session's background tasks and children (no late result follows) and the running turn, if any;
        return once it has settled."""
        await self.children.cancel(session_id)
        if (live := self.registry.find(session_id)) is not None:
            if live.background is not None:
                live.background.cancel()
            await self.scheduler.cancel(live)

    async def use_tool_servers(self, session_id: str, specs: Sequence[StdioServerSpec]) -> tuple[str, ...]:
        """Run the tool servers the Session's client brought (instead of any it brought before) while the Session
        is live; returns, in words, the servers that cannot be used."""
        live = await self.registry.open(session_id)
        await live.stop_tool_servers()
        if not specs:
            return ()
        if self.start_tool_servers is None:
            return tuple(f"Tool server {spec.name!r} was not started: this Session Host runs none." for spec in specs)
        live.tool_servers = await self.start_tool_servers(specs, Path(live.record.cwd))
        return live.tool_servers.problems

    async def close(self, session_id: str) -> None:
        """Release live resources (the client's tool servers stop); stored state, archive flag included, is untouched."""
        await self.cancel(session_id)
        self.children.forget(session_id)
        live = self.registry.remove(session_id)
        if live is not None:
            self.scheduler.drop(live)
            await live.lock.release()
            await live.stop_tool_servers()

    async def archive(self, session_id: str, archived: bool = True) -> SessionRecord:
        await self.get(session_id)
        await self.cancel(session_id)
        return await self.store.sessions.update_session(session_id, archived=archived)

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
        if self.registry.is_busy(session_id) or not await self.registry.writer_free(session_id):
            raise SessionBusy("the Session is running a turn; change the selection when it ends")
        updated = await self.selector.apply(record, model=model, reasoning=reasoning, agent=agent, emit=emit)
        if (live := self.registry.find(session_id)) is not None:
            live.record = updated
        return updated

    async def shutdown(self) -> None:
        for session_id in self.registry.ids():
            await self.close(session_id)

    async def start(self, session_id: str, text: str) -> None:
        """Run ``text`` as the Session's next turn, as if a person had sent it (a /spawn's task), once no turn runs: the
        Session's own turn, streaming to the client that follows it."""
        live = await self.registry.open(session_id)
        invocation = self.commands.resolve(live.record.cwd, text)

        def work() -> Coroutine[Any, Any, TurnSettled]:
            return self.turns.run(live, text, invocation)

        self.scheduler.follow_up(live, work, None, name=f"{session_id}:spawned")

    def _follow_up(self, session_id: str, command: Command, args: str, after: Awaitable[Any] | None) -> asyncio.Task[None]:
        """Once ``after`` completes (a review decided), run ``command`` as the Session's own turn when no turn runs;
        it streams to the client the Session follows. Closing the Session drops it."""
        live = self.registry.find(session_id)
        assert live is not None, "a follow-up is asked for by a live Session"
        invocation = Invocation(command, command.name, args)

        def work() -> Coroutine[Any, Any, TurnSettled]:
            return self.turns.run(live, None, invocation)

        return self.scheduler.follow_up(live, work, after, name=f"{session_id}:{command.name}")

    async def _ready(self, session_id: str) -> LiveSession:
        """The live Session, once a cancelled turn has settled and a turn it started itself has stopped."""
        live = await self.registry.open(session_id)
        await self.scheduler.ready(live)
        return live
