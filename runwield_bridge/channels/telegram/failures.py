"""python-telegram-bot's errors sorted: what may pass (retried) and what is Telegram's final word on the configuration (stops)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from telegram.error import BadRequest, Conflict, EndPointNotFound, InvalidToken, NetworkError, RetryAfter, TelegramError

from ..contract import ChannelMisconfigured, CredentialsRejected
from ..supervisor import Unavailable


def sorted_out(exc: TelegramError, channel: str, key: str) -> Exception:
    """``exc`` as the channel contract sees it: Unavailable (network, timeouts, 5xx, 429, another poller), or a
    configuration error naming the token (401), the API's URL (404) or ``key`` (403, 400 and the like)."""
    if isinstance(exc, InvalidToken):
        return CredentialsRejected(f"channels.{channel}.token", "Telegram")
    if isinstance(exc, EndPointNotFound):
        return ChannelMisconfigured(f"channels.{channel}.api_base_url", "Telegram", exc.message)
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
