"""``/spawn AGENT [--here | --thread] [--resume SESSION_ID] TASK`` in the Session Host: a Session of the same project
on an external agent (``[agents.NAME]``, the runtime ``acp:NAME`` that the model picker offers; ``runwield``: a native
Session on the default model, as in the chats), whose first turn is
the task, sent as the person's message and run as the Session's own turn (it streams to whichever client opens the
Session). ``--resume`` gives the task to an earlier Session on that agent instead; an id that is not one is refused
and nothing is started. This Session then says, in a message of its own, which Session it started, with a hint for a
client that can open it (``--here``, the default) or list it beside this one (``--thread``)."""

from __future__ import annotations

from typing import Protocol

from ..spawn_request import SpawnMistake, SpawnRequest, parse_spawn
from .catalog import ModelCatalog
from .children import BUILTIN_AGENT
from .commands import Command, CommandContext
from .events import Notice, SessionSpawned
from .live import SessionNotFound
from .records import SessionRecord
from .runtime import EXTERNAL, NATIVE, RuntimeAxis, new_message_id

HINT = "AGENT [--here | --thread] [--resume SESSION_ID] TASK"


class SpawnHost(Protocol):
    """What /spawn uses of the Session Host (``sessions.py``)."""

    models: ModelCatalog
    runtimes: RuntimeAxis

    async def get(self, session_id: str) -> SessionRecord: ...

    async def create(self, cwd: str, title: str = "") -> SessionRecord: ...

    async def start(self, session_id: str, text: str) -> None: ...


class SessionSpawner:
    """Starts the Sessions that /spawn asks for."""

    def __init__(self, host: SpawnHost) -> None:
        self.host = host

    async def spawn(self, origin: SessionRecord, argument: str) -> SessionSpawned:
        """Start (or continue) the Session ``argument`` asks for, its task as its next turn, and say which it is;
        SpawnMistake, with nothing started, when the argument is wrong or names no such Session."""
        request = parse_spawn(argument, [BUILTIN_AGENT, *self.host.models.external])
        record = await self._new(origin, request) if request.resume is None else await self._earlier(request)
        if request.task:
            await self.host.start(record.id, request.task)
        place = "thread" if request.thread else "here"
        verb = "started" if request.resume is None else "continued"
        where = " beside this one" if request.thread else ""
        text = f"{'🧵' if request.thread else '🆕'} {request.agent} session {record.id} {verb}{where}: {request.title}"
        return SessionSpawned(text, record.id, request.agent, request.task, place, record.cwd, new_message_id())

    async def _new(self, origin: SessionRecord, request: SpawnRequest) -> SessionRecord:
        """A new Session in the origin's project, titled with the task, driven by the agent."""
        record = await self.host.create(origin.cwd, title=request.title)
        await self.host.runtimes.choose(record.id, runtime(request.agent))
        return record

    async def _earlier(self, request: SpawnRequest) -> SessionRecord:
        """The Session ``--resume`` names, which must be one driven by the agent."""
        assert request.resume is not None
        try:
            record = await self.host.get(request.resume)
        except SessionNotFound:
            record = None
        if record is None or await self.host.runtimes.of(record.id) != runtime(request.agent):
            raise SpawnMistake(f"There is no session {request.resume!r} on {request.agent} to continue.")
        return record


def runtime(agent: str) -> str:
    """The runtime of a Session on ``agent``: native for ``runwield``, else ``acp:AGENT``."""
    return NATIVE if agent == BUILTIN_AGENT else EXTERNAL + agent


async def spawn_command(ctx: CommandContext, args: str) -> None:
    """/spawn: the Session started, named in a message of its own; a mistake said plainly, nothing started."""
    try:
        spawned = await ctx.spawn(args)
    except SpawnMistake as exc:
        await ctx.emit(Notice(f"{exc} Nothing was started.", "error"))
        return
    await ctx.emit(spawned)


SPAWN = Command("spawn", "Start an external agent on a task in a new Session of this project", spawn_command, hint=HINT)
