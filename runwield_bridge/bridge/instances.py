"""Several ``wld bridge`` instances on one PostgreSQL database, coordinated only through it.

Each instance holds a lease on its own name (``instance:ID``), renewed every ``RENEW_SECONDS``; one that is not
renewed for ``LEASE_SECONDS`` (a process killed, a host gone) is dead, and the first survivor to notice takes over
what it had. A conversation is handled on one instance at a time: the first to receive its events owns it while
its lease lives, and another instance that receives an event for it hands the event over through the database
(a row, then ``NOTIFY`` on the owner's channel). A listener that only one instance may run (Telegram's long
polling) runs under a lease of its own (``exclusively``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Protocol

from ..supervision import Supervisor

log = logging.getLogger(__name__)

RENEW_SECONDS = 2.0
LEASE_SECONDS = 8.0
"""A lease not renewed for this long has expired: a dead instance is taken over within about 10 s of its death."""
ANSWER_WAIT_SECONDS = 10.0
"""How long an instance that handed a button press or a request over waits for the owner's answer."""
EARLY_ANSWERS = 64
"""Answers kept that came before their asker began to wait (a fast owner): the last few are enough."""
HANDED_OVER = "Passed on to the instance handling this conversation."
RELEASED = "wld_lease_released"
"""The channel a lease's name is sent on when its holder lets go of it, so a waiting instance takes it at once."""


class HandoffRecord(Protocol):
    id: int | None
    origin: str
    channel: str
    kind: str
    payload: str


class InstanceLog(Protocol):
    """Leases, conversation owners and handoffs: ``Store.instances`` (``runwield_bridge.core.store``) on PostgreSQL."""

    async def take_lease(self, name: str, owner: str, ttl: float) -> bool: ...

    async def end_lease(self, name: str, owner: str) -> None: ...

    async def lease_held(self, name: str) -> bool: ...  # type: ignore[empty-body]

    async def dead_instances(self) -> list[str]: ...  # type: ignore[empty-body]

    async def owner(self, conversation: str, me: str) -> str: ...  # type: ignore[empty-body]

    async def take_conversations(self, dead: str, me: str) -> list[str]: ...  # type: ignore[empty-body]

    async def hand_off(self, instance: str, origin: str, channel: str, kind: str, payload: str, wake: str) -> int: ...  # type: ignore[empty-body]

    async def start_handoff(self, handoff_id: int, me: str) -> HandoffRecord | None: ...

    async def finish_handoff(self, handoff_id: int) -> None: ...

    async def waiting_handoffs(self, me: str) -> list[int]: ...  # type: ignore[empty-body]

    async def take_handoffs(self, dead: str, me: str) -> list[HandoffRecord]: ...  # type: ignore[empty-body]


class Notifications(Protocol):
    """``LISTEN/NOTIFY``: ``Store.notifier``."""

    async def listen(self, channel: str, listener: Callable[[str | None], None]) -> None: ...

    async def unlisten(self, channel: str, listener: Callable[[str | None], None]) -> None: ...

    async def notify(self, channel: str, payload: str) -> None: ...


OnHandoff = Callable[[HandoffRecord], Awaitable[str | None]]
"""Handle an event handed over; returns the answer for the instance that handed it (None for a message)."""
OnDeath = Callable[[str, list[str], list[HandoffRecord]], Awaitable[None]]
"""Take up what a dead instance had: its id, its conversations (now this instance's), and the handoffs it had
started and not finished (never run again: their conversations are told)."""


class Instances:
    """This instance among the others on the database: its lease, conversation owners, handoffs, dead peers."""

    def __init__(self, shared: InstanceLog, notifications: Notifications) -> None:
        self.shared = shared
        self.notifications = notifications
        self.id = uuid.uuid4().hex
        """A new id at each start."""
        self._on_handoff: OnHandoff | None = None
        self._on_death: OnDeath | None = None
        self._incoming: asyncio.Queue[int | None] = asyncio.Queue()
        self._answers: dict[int, asyncio.Future[str]] = {}
        self._early: dict[int, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._supervisors: list[Supervisor] = []

    @property
    def lease(self) -> str:
        return lease_of(self.id)

    @property
    def channel(self) -> str:
        return channel_of(self.id)

    async def start(self, on_handoff: OnHandoff, on_death: OnDeath) -> None:
        """Take this instance's lease and listen for handoffs; renew, and watch for dead instances, until ``stop``."""
        self._on_handoff, self._on_death = on_handoff, on_death
        if not await self.shared.take_lease(self.lease, self.id, LEASE_SECONDS):
            raise RuntimeError(f"instance id {self.id} is in use")
        await self.notifications.listen(self.channel, self._heard)
        for name, target in (("instance lease", self._keep_alive), ("handoffs", self._take_handoffs)):
            supervisor = Supervisor(f"{name} of instance {self.id[:8]}", target)
            supervisor.start()
            self._supervisors.append(supervisor)

    async def stop(self) -> None:
        for supervisor in self._supervisors:
            await supervisor.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.notifications.unlisten(self.channel, self._heard)
        with contextlib.suppress(Exception):
            await self.shared.end_lease(self.lease, self.id)

    async def alive(self, instance: str) -> bool:
        """Whether ``instance`` (an id) lives: its lease is held."""
        return await self.shared.lease_held(lease_of(instance))

    async def owner(self, conversation: str) -> str:
        """The instance that handles ``conversation``: its live owner, else this one (which then owns it)."""
        return await self.shared.owner(conversation, self.id)

    async def hand_off(self, owner: str, channel: str, kind: str, payload: str) -> int:
        return await self.shared.hand_off(owner, self.id, channel, kind, payload, channel_of(owner))

    async def answer_for(self, handoff_id: int) -> str | None:
        """The owner's answer to a press or request handed over; None if it does not come within ``ANSWER_WAIT_SECONDS``."""
        if (early := self._early.pop(handoff_id, None)) is not None:
            return early
        future = self._answers[handoff_id] = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(future, ANSWER_WAIT_SECONDS)
        except TimeoutError:
            return None
        finally:
            self._answers.pop(handoff_id, None)

    async def exclusively(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Run ``run`` only while this instance holds the lease ``name``: wait for it (taken at once when its holder
        lets go, within ``LEASE_SECONDS`` when the holder dies), renew it, and stop ``run`` if it is lost."""
        freed = asyncio.Event()

        def heard(payload: str | None) -> None:
            if payload in (None, name):
                freed.set()

        await self.notifications.listen(RELEASED, heard)
        try:
            while not await self.shared.take_lease(name, self.id, LEASE_SECONDS):
                freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(freed.wait(), RENEW_SECONDS)
            log.info("instance %s holds %s", self.id[:8], name)
            work = asyncio.ensure_future(run())
            try:
                while not work.done():
                    await asyncio.wait([work], timeout=RENEW_SECONDS)
                    if not work.done() and not await self.shared.take_lease(name, self.id, LEASE_SECONDS):
                        raise RuntimeError(f"lost the lease {name} to another instance")
                await work
            finally:
                if not work.done():
                    work.cancel()
                    await asyncio.gather(work, return_exceptions=True)
                await self.shared.end_lease(name, self.id)
                await self.notifications.notify(RELEASED, name)
        finally:
            await self.notifications.unlisten(RELEASED, heard)

    # -- background ------------------------------------------------------------

    async def _keep_alive(self) -> None:
        """Renew this instance's lease; take over each instance whose lease expired."""
        while True:
            if not await self.shared.take_lease(self.lease, self.id, LEASE_SECONDS):
                log.error("instance %s: its lease was taken as expired; renewing it", self.id[:8])
            for dead in await self.shared.dead_instances():
                if dead != self.id and self._on_death is not None:
                    log.warning("instance %s stopped; instance %s takes over its conversations", dead[:8], self.id[:8])
                    conversations = await self.shared.take_conversations(dead, self.id)
                    cut = await self.shared.take_handoffs(dead, self.id)
                    self._incoming.put_nowait(None)  # those it had not started are this instance's now
                    await self._on_death(dead, conversations, cut)
            await asyncio.sleep(RENEW_SECONDS)

    def _heard(self, payload: str | None) -> None:
        """A notification on this instance's channel: ``handoff:ID``, ``answer:ID:TEXT``, or None (look for missed ones)."""
        if payload is None:
            self._incoming.put_nowait(None)
            return
        kind, _, rest = payload.partition(":")
        if kind == "handoff":
            self._incoming.put_nowait(int(rest))
        elif kind == "answer":
            handoff_id, _, answer = rest.partition(":")
            future = self._answers.get(int(handoff_id))
            if future is None:
                self._early[int(handoff_id)] = answer
                while len(self._early) > EARLY_ANSWERS:
                    del self._early[next(iter(self._early))]
            elif not future.done():
                future.set_result(answer)

    async def _take_handoffs(self) -> None:
        """Start the handoffs for this instance in the order they came, each handled in a task of its own."""
        self._incoming.put_nowait(None)  # on a restart after a failure: those that came meanwhile
        while True:
            wanted = await self._incoming.get()
            for handoff_id in [wanted] if wanted is not None else await self.shared.waiting_handoffs(self.id):
                handoff = await self.shared.start_handoff(handoff_id, self.id)
                if handoff is not None:
                    task = asyncio.create_task(self._handle(handoff), name=f"handoff:{handoff_id}")
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _handle(self, handoff: HandoffRecord) -> None:
        assert self._on_handoff is not None and handoff.id is not None
        try:
            answer = await self._on_handoff(handoff)
            if answer is not None:
                await self.notifications.notify(channel_of(handoff.origin), f"answer:{handoff.id}:{answer}")
        except Exception:
            log.exception("a %s handed over from instance %s failed", handoff.kind, handoff.origin[:8])
        await self.shared.finish_handoff(handoff.id)


def lease_of(instance: str) -> str:
    """The lease an instance holds while it lives."""
    return f"instance:{instance}"


def channel_of(instance: str) -> str:
    """The notification channel an instance hears its handoffs and notices on."""
    return f"wld_instance_{instance}"
