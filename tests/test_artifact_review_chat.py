"""Artifact Review in the chats (the real Bridge, real platform libraries, the fakes of Telegram, Discord and Slack): the
link arrives while the agent waits, as a URL button; the answer given in the browser comes back as a new message."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from tests.platform_kit import PLATFORM_WORLDS
from waiting import PATIENCE

PROMPT = "review the file report.md asking Is the summary right?"
LINK = re.compile(r"in your browser: (http://127\.0\.0\.1:\d+/artifact/[A-Za-z0-9_-]+)")


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "report.md").write_text("# Weekly report\n\nAll green.\n")
    return folder


async def answer(url: str, feedback: str) -> None:
    """Answer the review on its page, as its form does."""
    async with aiohttp.ClientSession() as http:
        async with http.get(url) as page:
            assert page.status == 200 and "<h1>Weekly report</h1>" in await page.text()
        async with http.post(url, data={"action": "answer", "feedback": feedback}) as response:
            assert response.status == 200, await response.text()


@pytest.mark.parametrize(("platform", "feedback", "told"), [
    ("telegram", "", "📝 The reviewer accepted report.md without comments."),
    ("discord", "Say which tests ran.", "📝 The reviewer answered about report.md:"),
    ("slack", "Say which tests ran.", "📝 The reviewer answered about report.md:"),
])  # fmt: skip
async def test_the_review_link_is_a_url_button_and_the_answer_a_new_message_below_it(
    platform: str, feedback: str, told: str, tmp_path: Path
) -> None:
    async with PLATFORM_WORLDS[platform](section={"cwd": str(project(tmp_path))}) as world:
        thread = await world.mention(PROMPT)
        link_message, buttons = await world.buttons(thread, "in your browser", timeout=PATIENCE)  # while the agent waits
        url = LINK.search(world.current(link_message)).group(1)
        assert [(world.label(b), b.get("url")) for b in buttons] == [("Review the file", url)], "the link is a URL button"
        assert "Is the summary right?" in world.current(link_message)
        before = len(world.texts(thread))

        await answer(url, feedback)
        answered = await world.reply_containing(thread, told, timeout=PATIENCE, final=True)
        assert feedback in world.current(answered), "the reviewer's notes reach the chat"
        assert any(told in text for text in world.texts(thread)[before:]), "a new message below the link"
        assert LINK.search(world.current(link_message)), "the link's message above is left as it was"
