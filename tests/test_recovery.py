"""Recovery: a process executing a Plan is killed with SIGKILL mid-validation; a fresh host reopens the work."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from plan_kit import Recorder, bench, start_app
from waiting import PATIENCE
from runwield_bridge.core.git import worktree_gitdir

CHILD = """
import asyncio, sys
from pathlib import Path
from runwield_bridge.app import App
from runwield_bridge.config import load_settings

async def main(config: str, plan_id: str, session_id: str) -> None:
    app = await App.start(load_settings(config))

    async def work(worktree: Path) -> None:
        (worktree / "feature.txt").write_text("partial work\\n")

    async def emit(event) -> None:
        pass

    await app.executor.start(plan_id, work=work, emit=emit, session_id=session_id)

asyncio.run(main(*sys.argv[1:]))
"""


def wait_for_lines(path: Path, count: int, timeout: float = PATIENCE) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{path} never had {count} lines")


async def test_a_killed_execution_is_reopened_with_its_work_preserved_and_nothing_repeated(database_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "validation-runs.txt"
    # The first run records its pid and blocks (the process is killed meanwhile); a second run passes at once.
    command = f'echo $$ >> {marker}; if [ $(wc -l < {marker}) -lt 2 ]; then exec sleep 60; fi'
    setup = await bench(tmp_path, [command], database_url=database_url)
    plan, session_id, config = setup.plan, setup.session_id, tmp_path / "wld.toml"
    await setup.app.close()

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), str(config), plan.id, session_id])
    try:
        await asyncio.to_thread(wait_for_lines, marker, 1)
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        child.kill()
        for pid in marker.read_text().split() if marker.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGKILL)  # the orphaned validation command and its group

    app = await start_app(config)  # a fresh host, as after a restart
    [stopped] = await app.store.executions.list_executions(plan_id=plan.id)
    worktree = Path(stopped.worktree)
    gitdir = worktree_gitdir(worktree)
    (gitdir / "index.lock").write_text("")  # as a git process killed mid-write would leave it

    [report] = await app.executor.recover(session_id)
    record = report.execution
    assert record.state == "interrupted" and (await app.plans.get(plan.id)).state == "interrupted"
    assert [s.name for s in report.finished] == ["worktree", "agent", "snapshot"]
    assert [(s.name, s.detail, s.state) for s in report.uncertain] == [("validate", command, "interrupted")]
    assert report.choices == ("continue", "reopen", "hold", "abandon")
    assert report.changes == "?? feature.txt"
    assert (worktree / "feature.txt").read_text() == "partial work\n", "partial work is preserved"
    assert not (gitdir / "index.lock").exists()
    assert any("index.lock" in line for line in report.repaired)
    text = report.describe()
    assert "was interrupted" in text and "has not been repeated" in text
    assert f"Choose: continue (runs validation `{command}` again, then the rest), reopen for review, hold, or abandon" in text
    assert len(marker.read_text().splitlines()) == 1, "recovery repeats nothing"

    [again] = await app.executor.recover(session_id)
    assert again.repaired == () and again.uncertain == report.uncertain
    assert await app.executor.recover("ses_unrelated") == []

    events = Recorder()
    assert (await app.executor.choose(record.id, "hold", emit=events)).state == "held"
    [held] = await app.executor.recover(session_id)
    assert "is on hold" in held.describe()
    assert len(marker.read_text().splitlines()) == 1

    agent_runs = []

    async def work(path: Path) -> None:
        agent_runs.append(path)

    finished = await app.executor.choose(record.id, "continue", work=work, emit=events)
    assert finished.state == "validated"
    assert agent_runs == [], "the finished Agent step is not repeated"
    assert len(marker.read_text().splitlines()) == 2, "the uncertain command ran again only after the informed choice"
    assert events.notices()[-1].text.startswith("Validation passed: 1 of 1")
    assert await app.executor.recover(session_id) == []
    await app.close()
