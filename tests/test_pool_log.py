"""A task cancelled while SQLAlchemy's pool takes its connection back is no error; any other failure there is."""

from __future__ import annotations

import asyncio
import logging
import sys

from runwield_bridge.core.store.pool_log import POOL_LOGGERS, RESET_FAILED, install


def pool_record(error: BaseException) -> logging.LogRecord:
    try:
        raise error
    except BaseException:
        exc_info = sys.exc_info()
    return logging.LogRecord(POOL_LOGGERS[0], logging.ERROR, __file__, 1, RESET_FAILED, None, exc_info)


def test_a_cancelled_checkin_is_a_debug_line_and_any_other_failure_stays_an_error(caplog) -> None:
    install()
    install()  # once is enough: a second install adds nothing
    logger = logging.getLogger(POOL_LOGGERS[0])
    assert len(logger.filters) == 1
    caplog.set_level(logging.DEBUG, logger=POOL_LOGGERS[0])
    cancelled, failed = pool_record(asyncio.CancelledError()), pool_record(OSError("disk I/O error"))
    logger.handle(cancelled)
    logger.handle(failed)
    # these two records, not whatever another test's pool logs meanwhile (a connection collected by the GC, say)
    assert [r for r in caplog.records if r is cancelled or r is failed] == [cancelled, failed]
    assert (cancelled.levelno, cancelled.exc_info) == (logging.DEBUG, None) and "cancelled" in cancelled.getMessage()
    assert failed.levelno == logging.ERROR and failed.exc_info is not None
