"""Secrets kept out of logs and messages: the configured secret values, and secret-shaped parts of URLs and tokens."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 6  # shorter values would blank out ordinary words
_SECRET_KEY = re.compile(r"(token|secret|key|password|passwd)$", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*):([^/\s@]+)@")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_URL_PASSWORD, rf"\1:{REDACTED}@"),  # user:password@ in a URL
    (re.compile(r"(?<![0-9])\d{5,}:[A-Za-z0-9_-]{20,}"), REDACTED),  # a Telegram bot token (also inside .../bot<token>/...)
    (re.compile(r"\bx(?:ox[a-z]|app)-[A-Za-z0-9-]{8,}"), REDACTED),  # Slack bot, user and app-level tokens
    (re.compile(r"((?:/|%2F)(?:(?:code-)?review|artifact)(?:/|%2F))[A-Za-z0-9_-]{16,}", re.IGNORECASE), rf"\1{REDACTED}"),  # a review link's token
)
_known: set[str] = set()


def redact(text: str) -> str:
    """``text`` with every known secret and every secret-shaped token or URL credential replaced by ``[redacted]``."""
    for secret in sorted(_known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def keep_secret(value: str, shortest: int = MIN_SECRET_LENGTH) -> None:
    """Redact ``value`` (and its URL-encoded form) from now on, if it has at least ``shortest`` characters."""
    if len(value) >= shortest:
        _known.update({value, quote(value, safe="")})


MAX_HELD = 10_000
"""Debug records held back at most while a secret answer is awaited; older ones are dropped beyond that."""


HELD_BELOW = logging.INFO
"""Only debug records are held: the platform libraries log raw updates at DEBUG, nothing logs a reply's text above it."""


class LogHold:
    """Debug records held back while a secret answer is awaited (it is not known yet, so it cannot be redacted yet: a
    platform library logs the update carrying it before the bridge reads it); written, redacted, once none is awaited.
    Records at INFO and above are written at once, so an operator's log does not stall while a question waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._held: list[tuple[logging.Handler, logging.LogRecord]] = []
        self._dropped = 0

    def hold(self) -> None:
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """One awaited answer is in (kept with ``keep_secret`` first) or given up; the last release writes what was held."""
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            held, self._held, dropped, self._dropped = self._held, [], self._dropped, 0
        for handler, record in held:
            handler.handle(record)
        if dropped:
            logging.getLogger(__name__).warning("%d log records were dropped while a secret answer was awaited", dropped)

    def keeps(self, handler: logging.Handler, record: logging.LogRecord) -> bool:
        """Take the record for later if answers are awaited; False if it is to be written now."""
        if record.levelno >= HELD_BELOW:
            return False
        with self._lock:
            if not self._holders:
                return False
            self._held.append((handler, record))
            if len(self._held) > MAX_HELD:
                self._held.pop(0)
                self._dropped += 1
            return True


HOLD = LogHold()


class HoldingFilter(logging.Filter):
    """Passes a handler's records to ``HOLD`` while a secret answer is awaited."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        return not HOLD.keeps(self.handler, record)


def secrets_in(config: Any, key: str = "") -> Iterable[str]:
    """Every secret-looking value in a config tree: values of keys ending in token, secret, key or password,
    and the password of any URL with credentials (``http://user:pass@host``)."""
    if isinstance(config, Mapping):
        for name, value in config.items():
            yield from secrets_in(value, str(name))
    elif isinstance(config, list | tuple):
        for value in config:
            yield from secrets_in(value, key)
    elif isinstance(config, str):
        if _SECRET_KEY.search(key):
            yield config
        for match in _URL_PASSWORD.finditer(config):
            yield match.group(2)


class RedactingFormatter(logging.Formatter):
    """Another formatter's output (message, arguments and traceback) with secrets redacted."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


QUIET_LOGGERS = ("aiosqlite",)
"""Loggers whose debug lines show SQL parameters (prompts, replies): kept at INFO or above."""


def install(config: Mapping[str, Any], handlers: Iterable[logging.Handler]) -> None:
    """Redact the config's secrets from now on, on these log handlers and wherever ``redact`` is applied."""
    for secret in secrets_in(config):
        keep_secret(secret)
    for handler in handlers:
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))
        if not any(isinstance(f, HoldingFilter) for f in handler.filters):
            handler.addFilter(HoldingFilter(handler))
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, logging.getLogger(name).getEffectiveLevel()))
