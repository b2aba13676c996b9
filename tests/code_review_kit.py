"""A validated execution to review: a project with a longer file, changed in the middle, and a new HTML file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from runwield_bridge.app import App
from runwield_bridge.core.code_reviews import CodeReviewHub, CodeReviewLink
from runwield_bridge.core.records import ExecutionRecord
from tests.plan_kit import Recorder, bench, git

CODE_LINK = re.compile(r"(http://127\.0\.0\.1:\d+/code-review/[A-Za-z0-9_-]+)")
"""A Code Review link as a chat message shows it."""
LONG_LINE = "    return " + " + ".join(f"value_{n}" for n in range(40))
BIG = "".join(f"def f{n}(value):\n    return value + {n}\n\n" for n in range(10))  # 30 lines
CHECK = "echo 'checked <b>every</b> function'"


@dataclass
class Reviewed:
    """The App, the validated execution, its Code Review hub and a link to its first round."""

    app: App
    project: Path
    execution: ExecutionRecord
    hub: CodeReviewHub
    link: CodeReviewLink

    @property
    def token(self) -> str:
        return self.link.url.rsplit("/", 1)[1]


async def reviewed(tmp_path: Path) -> Reviewed:
    setup = await bench(tmp_path, [CHECK])
    (setup.project / "big.py").write_text(BIG)
    git(setup.project, "add", "-A")
    git(setup.project, "commit", "-q", "-m", "big")

    async def work(worktree: Path) -> None:
        lines = (worktree / "big.py").read_text().splitlines()
        lines[13] = "    return value * 5  # changed"
        lines.insert(27, LONG_LINE)
        (worktree / "big.py").write_text("\n".join(lines) + "\n")
        (worktree / "notes.html").write_text("<script>alert(1)</script>\n")

    execution = await setup.app.executor.start(setup.plan.id, work=work, emit=Recorder(), session_id=setup.session_id)
    assert execution.state == "validated", execution.outcome
    hub = setup.app.review_pages.code_reviews
    assert hub is not None
    return Reviewed(setup.app, setup.project, execution, hub, await hub.start(execution, setup.session_id))


async def fetch(url: str) -> tuple[int, str]:
    """GET a page: its status and HTML."""
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


async def post(url: str, **fields: str) -> tuple[int, str]:
    """POST a form to a page, as the browser does: the status and the HTML answered."""
    async with aiohttp.ClientSession() as http, http.post(url, data=fields) as response:
        return response.status, await response.text()
