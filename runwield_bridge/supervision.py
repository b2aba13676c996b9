"""Long-lived tasks (agent connections, channel listeners) restarted with backoff when they fail.

What a failure means decides what happens (docs/channels.md, "When a channel fails"):

- a ``ConfigError`` (a rejected token, a missing scope or intent): no restart can fix it, so the
  task stops and one line says which key to fix;
- a transient failure (``Unavailable``, a network error, a timeout): restarted with backoff, one
  warning line each time;
- anything else is a bug or a surprise: restarted with backoff too (a listener that stays down
  loses messages), its traceback logged the first time, one line after that.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp

from .channels.types import Unavailable
from .config import ConfigError

log = logging.getLogger(__name__)

OnFailure = Callable[[BaseException, float], Awaitable[None]]


TRANSIENT = (Unavailable, OSError, TimeoutError, aiohttp.ClientConnectionError)
"""Failures that may pass by themselves (``OSError`` covers ``ConnectionError``; aiohttp's dropped connections are not all OSErrors)."""


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure that may pass by itself, so restarting later can help."""
    return isinstance(exc, TRANSIENT)


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
        self._explained: set[type[BaseException]] = set()
        """The kinds of unexpected failure whose traceback was already logged."""

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
                self._log_failure(exc, delay)
                if self.on_failure is not None:
                    try:
                        await self.on_failure(exc, delay)
                    except Exception:
                        log.exception("reporting the failure of %s failed", self.name)
            await asyncio.sleep(delay)

    def _log_failure(self, exc: Exception, delay: float) -> None:
        """One line for a transient failure; an unexpected one with its traceback the first time its kind is seen."""
        if transient(exc):
            log.warning("%s: %s; retrying in %.1fs", self.name, _described(exc), delay)
        elif type(exc) in self._explained:
            log.error("%s failed again (%s); retrying in %.1fs", self.name, _described(exc), delay)
        else:
            self._explained.add(type(exc))
            log.error("%s failed unexpectedly (%s); retrying in %.1fs", self.name, _described(exc), delay, exc_info=exc)


def _described(exc: BaseException) -> str:
    """``Type: message``, or just the message of an ``Unavailable`` (which says what could not be reached)."""
    return str(exc) if isinstance(exc, Unavailable) else f"{type(exc).__name__}: {exc}"
