"""SQLAlchemy's pool logs a task cancelled while it hands a connection back (``Exception during reset or similar``)
as an error with a traceback. At shutdown that is expected: the pool still takes the connection back. Such a
record is turned into a DEBUG line without the traceback; any other failure there stays an error."""

from __future__ import annotations

import asyncio
import logging

POOL_LOGGERS = ("sqlalchemy.pool.impl.AsyncAdaptedQueuePool", "sqlalchemy.pool.impl.NullPool", "sqlalchemy.pool.impl.StaticPool")
RESET_FAILED = "Exception during reset or similar"


def quiet_cancelled_checkins(record: logging.LogRecord) -> bool:
    """A logging filter: a cancellation while a connection is handed back becomes a DEBUG line (kept, not dropped)."""
    if record.msg == RESET_FAILED and record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.msg, record.exc_info, record.exc_text = f"{RESET_FAILED}: cancelled while a connection was handed back", None, None
    return True


def install() -> None:
    for name in POOL_LOGGERS:
        logger = logging.getLogger(name)
        if quiet_cancelled_checkins not in logger.filters:
            logger.addFilter(quiet_cancelled_checkins)
