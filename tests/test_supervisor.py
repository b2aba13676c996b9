"""Long-lived tasks restart with growing delays, report each failure, and stop when asked."""

from __future__ import annotations

import asyncio

from runwield_bridge.bridge.supervisor import Backoff, Supervisor
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
