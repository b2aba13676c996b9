"""The review page in headless Chromium (Debian's, through Playwright): line and general feedback, then approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from runwield_bridge.app import App
from runwield_bridge.config import WebConfig, load_settings
from runwield_bridge.core.reviews import Feedback, LineComment, ReviewHub, static_link_base
from runwield_bridge.web.review import add_review_routes
from runwield_bridge.web.server import WebServer
from waiting import PATIENCE

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PLAN = "# Cache the index\n\nThe index is rebuilt on every request.\n\n1. Add an LRU cache\n2. Invalidate on write\n"


def chromium() -> str:
    """Debian's Chromium; its absence fails the test (never a skip), saying how to install it."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}: run `apt-get update && apt-get install -y chromium` (as .ci/run does)")
    return CHROMIUM


async def test_a_reviewer_sends_feedback_then_approves_the_revised_plan(tmp_path: Path) -> None:
    executable = chromium()
    (tmp_path / "wld.toml").write_text("")
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    session = await app.session_host.create(str(tmp_path))
    plan = await app.plans.write(cwd=tmp_path, title="Cache the index", body=PLAN, session_id=session.id)
    server = WebServer(WebConfig(listen="127.0.0.1:0"))
    hub = ReviewHub(app.store, app.plans, static_link_base("http://unused"))
    add_review_routes(server, hub)
    await server.start()
    hub.link_base = static_link_base(server.base_url)
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            page = await browser.new_page()
            page.set_default_timeout(PATIENCE * 1000)  # a page's waits are bounded as the rest are, not by Playwright's 30 s

            first = await hub.start(plan.id, session.id)
            waiting = asyncio.create_task(hub.wait(first.review_id))
            await page.goto(first.url)
            assert await page.title() == "Review: Cache the index"
            assert await page.locator("h1").inner_text() == "Cache the index"
            await page.get_by_text("Comment on line 5").click()
            await page.get_by_label("Comment on line 5").fill("Bound it: 1000 entries.")
            await page.get_by_label("General feedback").fill("Measure before and after.")
            await page.get_by_role("button", name="Send feedback").click()
            await page.get_by_text("goes back to the Agent with your feedback").wait_for()

            outcome = await asyncio.wait_for(waiting, PATIENCE)
            assert outcome.state == "changes_requested"
            assert outcome.feedback == Feedback(
                "Measure before and after.", (LineComment(5, "1. Add an LRU cache", "Bound it: 1000 entries."),)
            )

            await app.plans.revise(plan.id, PLAN.replace("LRU cache", "LRU cache of 1000 entries"), session_id=session.id)
            await page.goto(first.url)
            assert "has been revised since" in await page.locator("main").inner_text()

            second = await hub.start(plan.id, session.id)
            waiting = asyncio.create_task(hub.wait(second.review_id))
            await page.goto(second.url)
            assert "LRU cache of 1000 entries" in await page.locator("article").inner_text()
            await page.get_by_role("button", name="Approve revision 2").click()
            await page.get_by_text("is approved").wait_for()
            outcome = await asyncio.wait_for(waiting, PATIENCE)
            assert outcome.approved and outcome.revision == 2
            await browser.close()
        stored = await app.plans.get(plan.id)
        assert (stored.state, stored.approved_revision) == ("approved", 2)
    finally:
        await server.stop()
        await app.close()
