"""Secrets kept out of logs and messages: the configured secret values, and secret-shaped parts of URLs and tokens."""

from __future__ import annotations

import logging
import re
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


def keep_secret(value: str) -> None:
    """Redact ``value`` (and its URL-encoded form) from now on."""
    if len(value) >= MIN_SECRET_LENGTH:
        _known.update({value, quote(value, safe="")})


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
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, logging.getLogger(name).getEffectiveLevel()))
