"""python-telegram-bot's errors sorted: what may pass (retried) and what is Telegram's final word on the configuration (stops)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from ..types import ChannelMisconfigured, CredentialsRejected, Unavailable


def sorted_out(exc: TelegramError, channel: str, key: str) -> Exception:
    """``exc`` as the channel contract sees it: Unavailable (network, timeouts, 5xx, 429, another poller), or a
    configuration error naming the token (401; Telegram also says 404 for a malformed one) or ``key`` (403, 400)."""
    if isinstance(exc, (InvalidToken, TokenRefusedWhilePolling)):
        return CredentialsRejected(f"channels.{channel}.token", "Telegram")
    if isinstance(exc, (RetryAfter, Conflict)) or (isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)):
        return Unavailable(f"Telegram could not be reached or failed ({type(exc).__name__}: {exc.message})")
    return ChannelMisconfigured(key, "Telegram", exc.message)  # Telegram's description: "Forbidden: bot was blocked by the user"


@contextlib.contextmanager
def refusals(channel: str, key: str) -> Iterator[None]:
    """Raise Telegram's errors inside as ``sorted_out`` says."""
    try:
        yield
    except TelegramError as exc:
        raise sorted_out(exc, channel, key) from None


class TokenRefusedWhilePolling(TelegramError):
    """Telegram refused the token on getUpdates. python-telegram-bot's updater stops polling without a word on its
    InvalidToken, so the getUpdates connection raises this instead, which the updater hands its error callback."""


class PollingRequest(HTTPXRequest):
    """The getUpdates connection: a refused token comes out as TokenRefusedWhilePolling."""

    async def post(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().post(*args, **kwargs)
        except InvalidToken as exc:
            raise TokenRefusedWhilePolling(exc.message) from exc
