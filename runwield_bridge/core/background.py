"""Background tasks: work a tool starts that outlives its turn. Each one's result comes back later, in the same
live Session, as a new turn the Session starts itself (never as a second answer to the prompt that started it,
never as the reply to a waiting question); cancelling the Session stops them, and no late result follows."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .commands import Command, CommandContext

log = logging.getLogger(__name__)
BackgroundWork = Coroutine[Any, Any, str]
"""The work itself: what it returns is the result that the Session's result turn reports."""
Deliver = Callable[[str, str], "asyncio.Task[None]"]
"""Schedule the result turn of a finished task (its title, its result); returns the task that will run it."""
RESULT_COMMAND = "background-result"
StartBackground = Callable[[BackgroundWork, str], str]
"""Start work in the background under a title; returns the task's id."""


@dataclass
class BackgroundTasks:
    """One live Session's background tasks, and the result turns they scheduled that have not yet run."""

    deliver: Deliver
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def start(self, work: BackgroundWork, title: str) -> str:
        """Run ``work`` in the background; returns the task's id (for the tool's answer to the model)."""
        task_id = f"task-{next(self._ids)}"
        self._keep(asyncio.create_task(self._run(work, title), name=f"background:{task_id}"))
        return task_id

    async def _run(self, work: BackgroundWork, title: str) -> None:
        try:
            result = await work
        except Exception as exc:  # noqa: BLE001 - a failed task reports its failure as its result
            log.warning("background task %r failed: %s", title, exc)
            result = f"failed: {type(exc).__name__}: {exc}"
        self._keep(self.deliver(title, result))

    def _keep(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def cancel(self) -> None:
        """Stop every task, and every result turn that has not started."""
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()


def result_command(title: str, result: str) -> Command:
    """The result turn of a finished task: the result is shown, and the model is told it (and may act on it)."""

    async def run(ctx: CommandContext, args: str) -> str:
        await ctx.say(f"Background task \u201c{title}\u201d finished:\n\n{result}")
        return f"The background task \u201c{title}\u201d that you started has finished. Its result:\n\n{result}"

    return Command(RESULT_COMMAND, "The result of a background task", run, source="background", advertised=False)
