"""Wake-ups between processes: PostgreSQL's ``LISTEN/NOTIFY`` on one listening connection per process (reconnected
when it drops), or, on SQLite, where one process runs, calls within the process. A listener is called with each
notification's payload, and with None after a reconnection (notifications may have been missed meanwhile)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)
Listener = Callable[[str | None], None]
NOTIFY = text("SELECT pg_notify(:channel, :payload)")
RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0)
"""Seconds between attempts to reconnect the listening connection (the last repeats)."""


class Notifier(Protocol):
    """Notifications by channel name."""

    shared: bool
    """Whether other processes hear them (PostgreSQL), not only this one."""

    async def listen(self, channel: str, listener: Listener) -> None: ...

    async def unlisten(self, channel: str, listener: Listener) -> None: ...

    async def notify(self, channel: str, payload: str) -> None: ...

    async def close(self) -> None: ...


class LocalNotifier:
    """Notifications within this process."""

    shared = False

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}

    async def listen(self, channel: str, listener: Listener) -> None:
        self._listeners.setdefault(channel, []).append(listener)

    async def unlisten(self, channel: str, listener: Listener) -> None:
        _remove(self._listeners, channel, listener)

    async def notify(self, channel: str, payload: str) -> None:
        for listener in list(self._listeners.get(channel, ())):
            listener(payload)

    async def close(self) -> None:
        self._listeners.clear()


class PostgresNotifier:
    """``LISTEN`` on one asyncpg connection of its own, opened on the first ``listen``; ``NOTIFY`` through ``engine``."""

    shared = True

    def __init__(self, url: str, engine: AsyncEngine) -> None:
        self.dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self.engine = engine
        self._listeners: dict[str, list[Listener]] = {}
        self._conn: Any = None
        self._lost = asyncio.Event()
        self._keeper: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()

    async def listen(self, channel: str, listener: Listener) -> None:
        """Call ``listener`` for each notification on ``channel`` from now on (returns once the server listens)."""
        first = channel not in self._listeners
        self._listeners.setdefault(channel, []).append(listener)
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep_connected(), name="notifier")
        await self._connected.wait()
        if first and self._conn is not None:
            with contextlib.suppress(Exception):  # a connection lost meanwhile listens again on reconnecting
                await self._conn.add_listener(channel, self._deliver)

    async def unlisten(self, channel: str, listener: Listener) -> None:
        if _remove(self._listeners, channel, listener) and self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.remove_listener(channel, self._deliver)

    async def notify(self, channel: str, payload: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(NOTIFY, {"channel": channel, "payload": payload})

    async def close(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        self._listeners.clear()

    def _deliver(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        for listener in list(self._listeners.get(channel, ())):
            listener(payload)

    async def _keep_connected(self) -> None:
        import asyncpg  # the postgres extra

        attempt = 0
        while True:
            try:
                conn = await asyncpg.connect(self.dsn)
                for channel in list(self._listeners):
                    await conn.add_listener(channel, self._deliver)
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("could not listen for notifications (%s); trying again", exc)
                await asyncio.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])
                attempt += 1
                continue
            self._lost.clear()
            conn.add_termination_listener(lambda _conn: self._lost.set())
            self._conn = conn
            if attempt or self._connected.is_set():
                self._missed()
            attempt = 0
            self._connected.set()
            try:
                await self._lost.wait()
                log.warning("the connection listening for notifications was lost; reconnecting")
            finally:
                self._conn = None
                with contextlib.suppress(Exception):
                    await asyncio.shield(conn.close(timeout=2))

    def _missed(self) -> None:
        """Tell every listener that notifications may have been missed while the connection was down."""
        for listeners in list(self._listeners.values()):
            for listener in list(listeners):
                listener(None)


def _remove(listeners: dict[str, list[Listener]], channel: str, listener: Listener) -> bool:
    """Forget ``listener``; True if it was the channel's last one."""
    found = listeners.get(channel, [])
    if listener in found:
        found.remove(listener)
    if not found:
        listeners.pop(channel, None)
        return True
    return False
