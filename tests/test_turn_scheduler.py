"""Turns one at a time, woken by events: a Session's own follow-up turn starts the moment the turn before it has
settled (no timer), a cancelled turn settles first, and another process's writer is waited for. The turns are
driven by a runtime of the test's own, a second implementation of the runtime contract besides the native one."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import PATIENCE, until

from runwield_bridge.core.catalog import ModelCatalog
from runwield_bridge.core.commands import Command, CommandContext, CommandRegistry
from runwield_bridge.core.events import Event, MessageChunk, TurnSettled
from runwield_bridge.core.locks import FileLocks, lock_key
from runwield_bridge.core.models import ModelInfo
from runwield_bridge.core.runtime import Runtime, TurnRequest, TurnResult
from runwield_bridge.core.sessions import SessionHost
from runwield_bridge.core.store import Store


class GatedRuntime:
    """A runtime that says the prompt back once the test lets it go on."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go_on = asyncio.Event()

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        self.started.set()
        await self.go_on.wait()
        await request.emit(MessageChunk(f"ran {request.prompt}", request.result.message_id))
        return request.result


class Queue:
    """Commands: ``/queue`` asks for ``/next`` as the Session's own next turn (once ``after`` is done), then hands
    its prompt to the runtime; ``/next`` says it ran."""

    def __init__(self) -> None:
        self.after: Awaitable[Any] | None = None
        self.next_ran = asyncio.Event()

    def commands(self) -> list[Command]:
        return [Command("queue", "queue /next", self.queue), Command("next", "the follow-up", self.next)]

    async def queue(self, ctx: CommandContext, args: str) -> str | None:
        ctx.follow_up(self.after or asyncio.sleep(0), Command("next", "the follow-up", self.next), "")
        return args or None

    async def next(self, ctx: CommandContext, args: str) -> str | None:
        self.next_ran.set()
        await ctx.say("the follow-up ran")
        return None


class World:
    def __init__(self, host: SessionHost, runtime: GatedRuntime, queue: Queue, tmp_path: Path) -> None:
        self.host, self.runtime, self.queue, self.tmp_path = host, runtime, queue, tmp_path
        self.events: list[Event] = []

    async def sink(self, event: Event) -> None:
        self.events.append(event)

    async def settled(self, turns: int) -> None:
        await until(lambda: sum(isinstance(e, TurnSettled) for e in self.events) >= turns, f"{turns} turns settling")

    def said(self) -> list[str]:
        return [e.text if isinstance(e, MessageChunk) else f"settled:{e.stop_reason}" for e in self.events if isinstance(e, MessageChunk | TurnSettled)]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    catalog = ModelCatalog()
    catalog.add(ModelInfo("none", "No model", context_window=None), lambda: None)  # type: ignore[arg-type,return-value]
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    runtime, queue = GatedRuntime(), Queue()
    runtime_contract: Runtime = runtime
    host = SessionHost(
        store, catalog, [], tmp_path, default_model="none", runtime=runtime_contract, commands=CommandRegistry(queue.commands())
    )
    yield World(host, runtime, queue, tmp_path)
    await host.shutdown()
    await store.close()


@contextlib.contextmanager
def clock_stopped(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Stop the event loop's clock: a timer (``asyncio.sleep``, ``call_later``) never becomes due meanwhile."""
    now = loop.time()
    loop.time = lambda: now  # type: ignore[method-assign]
    try:
        yield
    finally:
        del loop.time  # type: ignore[method-assign]


async def without_timers(event: asyncio.Event, what: str) -> None:
    """Wait for ``event`` with the bound kept by a thread, since the loop's own timers are stopped."""
    loop = asyncio.get_running_loop()
    waiter = asyncio.ensure_future(event.wait())
    bound = threading.Timer(PATIENCE, lambda: loop.call_soon_threadsafe(waiter.cancel))
    bound.start()
    try:
        await waiter
    except asyncio.CancelledError:
        pytest.fail(f"{what} never happened while the clock was stopped: something waits on a timer")
    finally:
        bound.cancel()


async def test_a_follow_up_turn_starts_when_the_turn_before_settles_without_waiting_on_a_timer(world: World) -> None:
    record = await world.host.create(str(world.tmp_path))
    first = asyncio.create_task(world.host.prompt(record.id, "/queue work", world.sink))
    await asyncio.wait_for(world.runtime.started.wait(), PATIENCE)
    assert not world.queue.next_ran.is_set(), "the follow-up waits while a turn runs"
    with clock_stopped(asyncio.get_running_loop()):
        world.runtime.go_on.set()
        await without_timers(world.queue.next_ran, "the follow-up turn")
    assert (await first).stop_reason == "end_turn"
    await world.settled(2)
    assert world.said() == ["ran work", "settled:end_turn", "the follow-up ran", "settled:end_turn"]


async def test_a_cancelled_turn_settles_before_the_follow_up_turn_starts(world: World) -> None:
    record = await world.host.create(str(world.tmp_path))
    first = asyncio.create_task(world.host.prompt(record.id, "/queue work", world.sink))
    await asyncio.wait_for(world.runtime.started.wait(), PATIENCE)
    await world.host.cancel(record.id)
    assert (await first).stop_reason == "cancelled"
    await world.settled(2)
    assert world.said() == ["settled:cancelled", "the follow-up ran", "settled:end_turn"]


async def test_a_follow_up_turn_waits_for_another_process_to_let_go_of_the_session(world: World) -> None:
    record = await world.host.create(str(world.tmp_path))
    decided: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    world.queue.after = decided
    world.runtime.go_on.set()
    assert (await world.host.prompt(record.id, "/queue", world.sink)).stop_reason == "end_turn"
    other, key = FileLocks(world.tmp_path / "locks"), lock_key(record.id)  # another open file: to the OS, another writer
    assert await other.try_lock(key)
    try:
        decided.set_result(None)
        waiting_thread = f"writer-wait:{key:016x}"  # the follow-up found the writer taken: the OS tells it when it is free
        await until(lambda: any(t.name == waiting_thread for t in threading.enumerate()), "the follow-up waiting for the writer")
        assert not world.queue.next_ran.is_set(), "the follow-up does not run while another process holds the Session"
    finally:
        other.close()
    await world.settled(2)
    assert world.said()[-2:] == ["the follow-up ran", "settled:end_turn"]
