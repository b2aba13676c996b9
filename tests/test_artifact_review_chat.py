"""Artifact Review in the chats (real `wld` bridge code, real platform libraries, the fakes): the link arrives while
the agent waits, as a URL button; the answer given in the browser comes back as a new message with the notes."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from tests.bridge_kit import OWNER, bridge_world
from tests.platform_kit import discord_world, slack_world
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


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_on_discord_and_slack_the_review_link_is_a_url_button_and_the_answer_a_new_message_in_the_thread(
    platform: str, tmp_path: Path
) -> None:
    worlds = {"discord": discord_world, "slack": slack_world}
    async with worlds[platform](section={"cwd": str(project(tmp_path))}) as world:
        thread = await world.mention(PROMPT)
        link_message, buttons = await world.buttons(thread, "in your browser", timeout=PATIENCE)
        url = LINK.search(world.current(link_message)).group(1)
        assert [(world.label(b), b.get("url")) for b in buttons] == [("Review the file", url)], "the link is a URL button"
        assert "Is the summary right?" in world.current(link_message)
        before = len(world.texts(thread))

        await answer(url, "Say which tests ran.")
        told = await world.reply_containing(thread, "📝 The reviewer answered about report.md", timeout=PATIENCE, final=True)
        assert "Say which tests ran." in world.current(told), "the reviewer's notes reach the chat"
        assert any("📝" in text for text in world.texts(thread)[before:]), "a new message below the link"
        assert LINK.search(world.current(link_message)), "the link's message above is left as it was"


async def test_on_telegram_the_review_link_is_a_url_button_and_an_empty_answer_is_reported_as_accepted(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, telegram={"cwd": str(project(tmp_path))}) as world:
        await world.send(OWNER, OWNER, PROMPT)
        link = await world.reply_containing(OWNER, "in your browser")
        url = LINK.search(link["text"]).group(1)

        def keyboard() -> list[dict[str, str]]:
            markup = world.fake.messages[(OWNER, link["message_id"])].get("reply_markup") or {}
            return [b for row in markup.get("inline_keyboard", []) for b in row]

        await world.fake.wait_until(lambda: bool(keyboard()), timeout=PATIENCE)  # while the agent waits for the answer
        assert keyboard() == [{"text": "Review the file", "url": url}]
        await answer(url, "")
        told = await world.reply_containing(OWNER, "📝 The reviewer accepted report.md without comments.")
        assert told["message_id"] > link["message_id"], "a new message below the link"
