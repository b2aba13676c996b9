"""Child Sessions: a Session hands a task to another agent (``spawn_session``), a one-shot child Session that runs
its one turn on a lane of its own (a slow child blocks nothing else). The tool returns at once with the child's id;
when the child's turn settles, its reply reaches the parent as a later result turn of the parent, whose prompt is
plain text (nothing internal to RunWield is sent to the child or kept as a person's words). Cancelling or closing
the parent cancels its running children, and no late result follows."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .commands import Command, CommandContext
from .catalog import ModelCatalog
from .events import ChildProgress, ChildState, Event, MessageChunk, TurnSettled
from .interactions import Outcome, PendingQuestion
from .live import Emit, FormAsker, SessionRegistry
from .models import Image, ToolSpec
from .recorder import TranscriptRecorder
from .records import SessionRecord
from .runtime import EXTERNAL, NATIVE, RuntimeAxis
from .scheduler import PromptResult
from .steering import SteeringResult
from .tools import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from .store import Store
    from .turn import FollowUp

BUILTIN_AGENT = "runwield"
"""The agent name of the Session Host itself: a child driven by the native runtime."""
PARENT = "parent:{session_id}"
"""The binding that keeps a child Session's parent (its ``acp_session_id``) and its agent (its ``agent``)."""
CHILD_RESULT = "child-result"
CHILD_TOOLS = ("spawn_session", "send_session")
NOBODY_TO_ASK = "a one-shot child session has nobody to ask"
ENDED: dict[str, ChildState] = {"cancelled": "cancelled", "error": "failed"}
"""A child's state after its turn settled with this stop reason (any other: done)."""


class Host(Protocol):
    """What child Sessions use of the Session Host (``sessions.py``)."""

    store: Store
    models: ModelCatalog
    runtimes: RuntimeAxis
    registry: SessionRegistry
    recorder: TranscriptRecorder

    async def get(self, session_id: str) -> SessionRecord: ...

    async def create(self, cwd: str, title: str = "") -> SessionRecord: ...

    async def prompt(
        self, session_id: str, text: str, emit: Emit, *, forms: FormAsker | None = None, images: Sequence[Image] = ()
    ) -> PromptResult: ...

    async def cancel(self, session_id: str) -> None: ...

    async def steer(self, session_id: str, text: str) -> SteeringResult: ...


@dataclass
class Child:
    """A one-shot child Session of this process: whose it is, who drives it, what it was asked, how far it is."""

    id: str
    parent_id: str
    agent: str
    task: str
    state: ChildState = "running"
    work: asyncio.Task[None] | None = None

    def progress(self) -> ChildProgress:
        return ChildProgress(self.id, self.agent, self.task, self.state)


@dataclass
class ChildSessions:
    """The child Sessions each Session started here, and the result turns they scheduled that have not yet run."""

    host: Host
    follow_up: FollowUp
    children: dict[str, Child] = field(default_factory=dict)
    pending: dict[str, set[asyncio.Task[Any]]] = field(default_factory=dict)  # by parent: result turns, peer replies

    @property
    def agents(self) -> tuple[str, ...]:
        return (BUILTIN_AGENT, *self.host.models.external)

    def of(self, parent_id: str) -> list[Child]:
        """The children ``parent_id`` started in this process, oldest first."""
        return [child for child in self.children.values() if child.parent_id == parent_id]

    async def parent_of(self, session_id: str) -> str | None:
        """The Session that started ``session_id`` as its one-shot child, if one did (kept in the store)."""
        binding = await self.host.store.bridge.get_binding(PARENT.format(session_id=session_id))
        return binding.acp_session_id if binding is not None else None

    async def spawn(self, parent_id: str, agent: str, task: str, resume: str | None = None) -> Child:
        """Start ``task`` as the one turn of a child Session on ``agent`` (a new one, or the Session ``resume``)."""
        if agent not in self.agents:
            raise ToolError(f"no agent {agent!r}; choose one of: {', '.join(self.agents)}")
        if not task.strip():
            raise ToolError("the task is empty")
        if await self.parent_of(parent_id) is not None:
            raise ToolError("a child session cannot start children of its own")
        parent = await self.host.get(parent_id)
        if resume:
            kept = await self.host.store.bridge.get_binding(PARENT.format(session_id=resume))
            if kept is None or (kept.acp_session_id, kept.agent) != (parent_id, agent):
                raise ToolError(f"no child session {resume!r} of this session on {agent} to resume; nothing was started")
            child_id = resume
        else:
            child_id = (await self.host.create(parent.cwd, title=f"🧵 {agent}: {task}"[:80])).id
            await self.host.runtimes.choose(child_id, NATIVE if agent == BUILTIN_AGENT else EXTERNAL + agent)
        await self.host.store.bridge.set_binding(PARENT.format(session_id=child_id), agent, parent_id)
        child = self.children[child_id] = Child(child_id, parent_id, agent, task)
        child.work = asyncio.create_task(self._run(child), name=f"child:{child_id}")  # cancelled through its turn
        await self._show(child)
        return child

    async def cancel(self, parent_id: str) -> None:
        """Cancel the parent's running children (their turns settle as cancelled) and its result turns not yet run."""
        for task in list(self.pending.pop(parent_id, ())):
            task.cancel()
        for child in self.of(parent_id):
            if child.state == "running":
                child.state = "cancelled"
                await self.host.cancel(child.id)
                await self._show(child)

    def forget(self, parent_id: str) -> None:
        """The parent is closed: its children (cancelled by now) are no longer kept here."""
        for child in self.of(parent_id):
            del self.children[child.id]

    async def _run(self, child: Child) -> None:
        """The child's one turn; its reply (or failure) goes to the parent as the parent's own result turn."""
        said: list[str] = []

        async def emit(event: Event) -> None:
            if isinstance(event, MessageChunk) and not event.aside:
                said.append(event.text)

        async def nobody(pending: PendingQuestion) -> Outcome:
            return Outcome.failed(NOBODY_TO_ASK)

        if child.state == "cancelled":  # before its turn could start
            return
        try:
            settled = await self.host.prompt(child.id, child.task, emit, forms=nobody)
        except Exception as exc:  # noqa: BLE001 - a child that cannot start reports why as its result
            settled = TurnSettled("error", error=f"{type(exc).__name__}: {exc}")
        if not isinstance(settled, TurnSettled):  # cannot happen: ``nobody`` answers every question, none parks it
            await self.host.cancel(child.id)
            settled = TurnSettled("error", error=NOBODY_TO_ASK)
        if child.state == "cancelled":  # cancel() stopped it and said so
            return
        child.state = ENDED.get(settled.stop_reason, "done")
        await self._show(child)
        if child.state == "cancelled":  # its agent stopped: no result follows
            return
        reply = "".join(said).strip() or "(no reply)"
        command = result_command(child, reply if child.state == "done" else settled.error or "the turn failed")
        self.keep(child.parent_id, self.follow_up(child.parent_id, command, "", None))

    async def _show(self, child: Child) -> None:
        """The child's progress line on the parent (if the parent is live)."""
        if (live := self.host.registry.find(child.parent_id)) is not None:
            await live.emit(child.progress())

    def keep(self, parent_id: str, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        """Hold ``task`` until it ends; cancelling the parent cancels it."""
        kept = self.pending.setdefault(parent_id, set())
        kept.add(task)
        task.add_done_callback(kept.discard)
        return task


def result_command(child: Child, result: str) -> Command:
    """The parent's result turn for a settled child: the model is told in plain words, and answers in its own voice."""
    verb = "finished" if child.state == "done" else "failed"

    async def run(ctx: CommandContext, args: str) -> str:
        return f"The child session {child.id} on {child.agent} {verb}: {result}"

    return Command(CHILD_RESULT, "The result of a child session", run, source="children", advertised=False)


def spawn_session_tool(children: ChildSessions) -> Tool:
    """The ``spawn_session`` tool: hand a task to an agent as a one-shot child Session; returns at once."""
    agents: Callable[[], str] = lambda: ", ".join(children.agents)
    schema = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The agent to run the task: runwield (this Session Host) or a configured agent"},
            "task": {"type": "string", "description": "The task, as the child's one prompt"},
            "resume_session_id": {"type": "string", "description": "The id of an earlier child of this session to continue instead of starting a new one"},
        },
        "required": ["agent", "task"],
    }

    async def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        agent, task = str(arguments.get("agent", "")), str(arguments.get("task", ""))
        child = await children.spawn(ctx.session_id, agent, task, arguments.get("resume_session_id") or None)
        return json.dumps({"sessionId": child.id, "status": "accepted"})

    description = (
        "Hand a task to another agent as a one-shot child session running in the background. Returns at once with "
        f"the child's id; its result comes back to you later as a new turn. Agents: {agents()}."
    )
    return Tool(ToolSpec("spawn_session", description, schema), "other", run)
