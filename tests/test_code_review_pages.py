"""The Code Review page over real HTTP: the change with highlighted diffs and collapsed context, everything escaped,
the validation output and the commit message; each round decided once, a confirmed Abandon, bad forms refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.code_review_kit import fetch, post, reviewed
from waiting import PATIENCE


async def test_the_page_shows_the_change_its_validation_and_the_commit_message(tmp_path: Path) -> None:
    setup = await reviewed(tmp_path)
    try:
        status, page = await fetch(setup.link.url)
        assert status == 200
        assert "2 files changed" in page and "big.py" in page and "notes.html" in page
        assert "⋯ 10 unchanged lines" in page, "unchanged context before the hunk is collapsed"
        assert '<span class="ln removed"><span class="num">14</span>' in page and '<span class="ln added"><span class="num">14</span>' in page
        assert '<span class="k">return</span>' in page, "Python is highlighted"
        assert '<span class="nt">script</span>' in page and "<script>" not in page, "file content is highlighted text, never markup"
        assert "checked &lt;b&gt;every&lt;/b&gt; function" in page, "the validation output, escaped"
        assert "Add a README\n\nRunWield Plan" in page, "the commit message Publish will use"
    finally:
        await setup.app.close()


async def test_each_round_is_decided_once_and_abandon_needs_its_confirmation(tmp_path: Path) -> None:
    setup = await reviewed(tmp_path)
    try:
        base = setup.link.url.rsplit("/", 1)[0]
        assert (await fetch(f"{base}/not-a-token"))[0] == 404
        status, page = await post(setup.link.url, round="1", action="abandon")
        assert status == 400 and "confirm" in page
        assert (await post(setup.link.url, round="2", action="publish"))[0] == 400, "a form for another round"
        waiting = asyncio.create_task(setup.hub.wait(setup.link.review_id))
        status, page = await post(setup.link.url, round="1", action="abandon", confirm="yes", notes="Not needed.")
        assert status == 200 and "Abandoned" in page
        outcome = await asyncio.wait_for(waiting, PATIENCE)
        assert (outcome.state, outcome.notes) == ("abandon", "Not needed.")
        status, page = await post(setup.link.url, round="1", action="publish")
        assert status == 409 and "already abandoned" in page, "a second decision on the same round is refused"
        assert (await fetch(setup.link.url))[0] == 409
    finally:
        await setup.app.close()
