"""Long-lived tasks (agent connections, channel listeners) restarted with backoff when they fail."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config import ConfigError

log = logging.getLogger(__name__)

OnFailure = Callable[[BaseException, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between restarts: ``initial``, doubling up to ``maximum``; reset after a long enough run."""

    initial: float = 0.5
    maximum: float = 30.0
    reset_after: float = 60.0

    def next(self, previous: float | None, ran_for: float) -> float:
        if previous is None or ran_for >= self.reset_after:
            return self.initial
        return min(previous * 2, self.maximum)


class Supervisor:
    """Runs ``target`` until it returns; when it raises, reports the failure and runs it again later
    (a ConfigError, which no restart can fix, is logged and ends it)."""

    def __init__(self, name: str, target: Callable[[], Awaitable[None]], on_failure: OnFailure | None = None, backoff: Backoff = Backoff()) -> None:
        self.name = name
        self.target = target
        self.on_failure = on_failure
        self.backoff = backoff
        self.failures = 0
        self.last_error: BaseException | None = None
        self.config_error: ConfigError | None = None
        """Why it stopped for good, when no restart could help."""
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> asyncio.Task[None]:
        if not self.running:
            self._task = asyncio.create_task(self._loop(), name=f"supervised:{self.name}")
        assert self._task is not None
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        delay: float | None = None
        while True:
            started = time.monotonic()
            try:
                await self.target()
                return
            except asyncio.CancelledError:
                raise
            except ConfigError as exc:  # restarting cannot fix the configuration
                self.failures += 1
                self.last_error = self.config_error = exc
                log.error("%s stopped: %s", self.name, exc)
                return
            except Exception as exc:
                self.failures += 1
                self.last_error = exc
                delay = self.backoff.next(delay, time.monotonic() - started)
                log.error("%s failed (%s: %s); restarting in %.1fs", self.name, type(exc).__name__, exc, delay)
                if self.on_failure is not None:
                    try:
                        await self.on_failure(exc, delay)
                    except Exception:
                        log.exception("reporting the failure of %s failed", self.name)
            await asyncio.sleep(delay)
