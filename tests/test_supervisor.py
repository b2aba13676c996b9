"""Long-lived tasks restart with growing delays, report each failure, and stop when asked."""

from __future__ import annotations

import asyncio

import pytest

from runwield_bridge.supervision import Backoff, Supervisor
from runwield_bridge.supervision import log as supervisor_log
from waiting import PATIENCE


def test_backoff_doubles_up_to_the_maximum_and_resets_after_a_long_run() -> None:
    backoff = Backoff(initial=1, maximum=5, reset_after=60)
    assert [backoff.next(None, 0), backoff.next(1, 0), backoff.next(4, 0), backoff.next(5, 0)] == [1, 2, 5, 5]
    assert backoff.next(5, 61) == 1


async def test_a_failing_task_is_restarted_and_each_failure_reported() -> None:
    runs: list[int] = []
    reports: list[tuple[str, float]] = []

    async def target() -> None:
        runs.append(len(runs))
        if len(runs) < 3:
            raise RuntimeError(f"boom {len(runs)}")

    async def on_failure(exc: BaseException, delay: float) -> None:
        reports.append((str(exc), delay))

    supervisor = Supervisor("flaky", target, on_failure, Backoff(initial=0.01, maximum=0.02))
    await asyncio.wait_for(supervisor.start(), PATIENCE)
    assert runs == [0, 1, 2]
    assert reports == [("boom 1", 0.01), ("boom 2", 0.02)]
    assert supervisor.failures == 2 and not supervisor.running


async def test_stop_cancels_a_running_task() -> None:
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    supervisor = Supervisor("forever", forever)
    supervisor.start()
    await started.wait()
    await supervisor.stop()
    assert not supervisor.running


async def test_an_unexpected_error_is_retried_with_backoff_and_its_traceback_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    runs: list[int] = []

    async def buggy() -> None:
        runs.append(len(runs))
        if len(runs) < 4:
            raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    supervisor = Supervisor("channel buggy", buggy, backoff=Backoff(initial=0.1, maximum=0.2))
    await asyncio.wait_for(supervisor.start(), PATIENCE)
    assert len(runs) == 4 and supervisor.failures == 3 and supervisor.config_error is None
    lines = [(r.getMessage(), r.exc_info is not None) for r in caplog.records if r.name == supervisor_log.name]
    assert lines == [
        ("channel buggy failed unexpectedly (TypeError: unsupported operand type(s) for +: 'int' and 'str'); retrying in 0.1s", True),
        ("channel buggy failed again (TypeError: unsupported operand type(s) for +: 'int' and 'str'); retrying in 0.2s", False),
        ("channel buggy failed again (TypeError: unsupported operand type(s) for +: 'int' and 'str'); retrying in 0.2s", False),
    ], lines
    assert caplog.text.count("Traceback") == 1
