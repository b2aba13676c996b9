"""One turn at a time per Session: a prompt's turn starts now or not at all; the Session's own follow-up turns
start as soon as the turn before has settled (its cancellation included), woken by events, never by a timer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from .events import TurnSettled
from .interactions import InteractionBroker
from .live import LiveSession

log = logging.getLogger(__name__)
TurnWork = Callable[[], Coroutine[Any, Any, TurnSettled]]
"""Starts the work of one turn (called only once the turn holds the Session's writer)."""


@dataclass(frozen=True, slots=True)
class AwaitingReply:
    """The prompt is over but its turn is not: a chat question waits for the Session's next message."""

    question_id: str


PromptResult = TurnSettled | AwaitingReply


class TurnScheduler:
    """Starts a live Session's turns and waits for them to stop: settled, or parked on a chat question."""

    def __init__(self, broker: InteractionBroker) -> None:
        self.broker = broker

    def start(self, live: LiveSession, work: TurnWork, *, own: bool, name: str) -> None:
        """Run a turn now; the caller holds the Session's writer and no turn runs."""
        live.own_turn = own
        live.turn = asyncio.create_task(work(), name=name)
        live.turn.add_done_callback(lambda turn: _settled(live, turn))

    async def next_stop(self, live: LiveSession) -> PromptResult:
        """Wait until the turn settles, or a chat question parks it until the next message."""
        assert live.turn is not None, "a turn has started"
        turn = live.turn
        while True:
            await live.changed.until(lambda: turn.done() or live.parked)
            if turn.done():
                return turn.result()
            if (pending := self.broker.pending(live.record.id)) is not None:
                return AwaitingReply(pending.id)
            await live.changed.until(lambda: turn.done() or not live.parked)

    async def ready(self, live: LiveSession) -> None:
        """Wait until a turn being cancelled has settled (so its question cannot take the next message), and a turn
        the Session started itself has ended or asked a question (which then claims the next message)."""
        if live.busy and live.cancelling:
            await asyncio.wait({live.turn})
        elif live.busy and live.own_turn:
            await self.next_stop(live)

    async def cancel(self, live: LiveSession) -> None:
        """Stop the running turn, if any, and return once it has settled."""
        if live.turn is None or not live.busy:
            return
        live.cancelling = True
        if not live.finishing:
            live.turn.cancel()
        await asyncio.wait({live.turn})

    def follow_up(self, live: LiveSession, work: TurnWork, after: Awaitable[Any] | None, name: str) -> asyncio.Task[None]:
        """Once ``after`` completes, run ``work`` as the Session's own turn as soon as no turn runs, no question
        waits and the writer is free. `drop` (or cancelling the returned task) cancels it if it has not started."""
        task = asyncio.create_task(self._follow_up(live, work, after, name), name=f"follow-up:{name}")
        live.follow_ups.add(task)
        task.add_done_callback(live.follow_ups.discard)
        task.add_done_callback(_log_failure)
        return task

    async def _follow_up(self, live: LiveSession, work: TurnWork, after: Awaitable[Any] | None, name: str) -> None:
        if after is not None:
            await after
        while True:
            await live.changed.until(live.idle)
            if await live.lock.try_acquire() and live.idle():  # not idle: a prompt here started its turn meanwhile
                break
            if not live.lock.held:
                await live.lock.released()  # another process's turn holds the writer
        self.start(live, work, own=True, name=name)
        assert live.turn is not None
        await asyncio.wait({live.turn})

    @staticmethod
    def drop(live: LiveSession) -> None:
        """Cancel the follow-up turns that have not started."""
        for task in list(live.follow_ups):
            task.cancel()


def _settled(live: LiveSession, turn: asyncio.Task[Any]) -> None:
    """A turn ended: the Session lets it go (a process with many idle Sessions keeps no finished task for each, with
    its result and its context), and whoever waits on the Session is woken."""
    if live.turn is turn:
        live.turn = None
    live.changed.fire()


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        log.error("a follow-up turn failed: %s", error, exc_info=error)
