"""The Code Review page in headless Chromium at a phone's width (390 px) with JavaScript off: the page never scrolls
sideways, a long line scrolls inside its diff, and the plain form publishes. The screenshot is docs/images/code-review.png."""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import async_playwright

from tests.code_review_kit import reviewed
from tests.test_review_browser import CHROMIUM_ARGS, chromium
from waiting import PATIENCE

SCREENSHOT = Path(__file__).parent.parent / "docs" / "images" / "code-review.png"
PHONE = {"width": 390, "height": 844}


async def test_on_a_phone_the_page_fits_its_width_and_publishes_without_javascript(tmp_path: Path) -> None:
    executable = chromium()
    setup = await reviewed(tmp_path)
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            context = await browser.new_context(viewport=PHONE, java_script_enabled=False)
            page = await context.new_page()
            page.set_default_timeout(PATIENCE * 1000)
            await page.goto(setup.link.url)
            assert await page.title() == "Code review: Add a README"
            widths = await page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert widths[0] <= widths[1] == PHONE["width"], f"the page scrolls sideways: {widths}"
            diff = page.locator("#f1 pre.diff")
            assert await diff.evaluate("pre => pre.scrollWidth > pre.clientWidth"), "the long line scrolls inside its block"
            assert "value_39" in await diff.inner_text()
            SCREENSHOT.parent.mkdir(exist_ok=True)
            await page.screenshot(path=str(SCREENSHOT), full_page=True)

            waiting = asyncio.create_task(setup.hub.wait(setup.link.review_id))
            await page.get_by_label("Notes").fill("Ship it.")
            await page.get_by_role("button", name="Publish").click()
            await page.get_by_text("the chat reports the commit").wait_for()
            outcome = await asyncio.wait_for(waiting, PATIENCE)
            assert (outcome.state, outcome.notes) == ("publish", "Ship it.")
            await browser.close()
    finally:
        await setup.app.close()
