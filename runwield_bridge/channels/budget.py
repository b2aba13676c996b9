"""How often the Bridge may send or edit: a token bucket per chat, paused while the platform says 429."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


class ChatBudget:
    """Sends and edits one chat may receive: ``rate`` per second sustained, ``burst`` at once."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._updated = clock()
        self._paused_until = 0.0

    def delay(self) -> float:
        """Seconds until one send or edit may go out (0 when it may go now)."""
        now = self.clock()
        self._refill(now)
        wait_for_token = 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.rate
        return max(wait_for_token, self._paused_until - now, 0.0)

    def take(self) -> bool:
        """Spend one send or edit if the budget allows it now."""
        if self.delay() > 0:
            return False
        self._tokens -= 1
        return True

    def pause(self, seconds: float) -> None:
        """The platform said retry after ``seconds``: nothing goes out to this chat before then."""
        self._paused_until = max(self._paused_until, self.clock() + seconds)
        self._tokens = 0.0

    def _refill(self, now: float) -> None:
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.rate)
        self._updated = now


class Budgets:
    """One ChatBudget per chat of a channel, created on first use."""

    def __init__(self, rate: float, burst: int, group_rate: float, clock: Clock = time.monotonic) -> None:
        self.rate, self.burst, self.group_rate, self.clock = rate, burst, group_rate, clock
        self._chats: dict[str, ChatBudget] = {}

    def for_chat(self, chat: str, group: bool) -> ChatBudget:
        budget = self._chats.get(chat)
        if budget is None:
            budget = self._chats[chat] = ChatBudget(self.group_rate if group else self.rate, self.burst, self.clock)
        return budget
