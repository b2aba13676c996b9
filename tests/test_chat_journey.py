"""The operator's journey in Telegram: a request, a Plan, its review in the browser, execution, validation and
publication, each step a new message at the bottom of the chat (real bridge, real python-telegram-bot, the fake)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.bridge_kit import OWNER, bridge_world
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import (
    FAKES,
    PLATFORM_WORLDS,
    SECTIONS,
    discord_world,
    slack_world,
    wld_bridge,
)
from tests.wld_process import free_port
from tests.wld_process import write_config as write_wld_config
from tests.code_review_kit import CODE_LINK, fetch
from tests.plan_kit import git, make_project
from waiting import PATIENCE, until

REQUEST = "make a plan to write README.md saying hello"
TITLE = "Write README.md saying hello"
BRANCH = "runwield/write-readme-md-saying-hello-1"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/review/[A-Za-z0-9_-]+)")


class Operator:
    """The person on the phone: reads the chat from the bottom, presses buttons, types answers."""

    def __init__(self, fake: TelegramFake) -> None:
        self.fake = fake

    def messages(self) -> list[dict[str, Any]]:
        return self.fake.bot_messages(OWNER)

    def bottom(self) -> int:
        """The id of the newest message in the chat (0 if none)."""
        return max((m["message_id"] for m in self.messages()), default=0)

    async def says(self, text: str) -> None:
        self.fake.push_message(OWNER, OWNER, text)

    async def sees(self, text: str, after: int = 0, timeout: float = 20.0) -> dict[str, Any]:
        """The first finished message newer than ``after`` that shows ``text``."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [
                m for m in self.messages()
                if m["message_id"] > after and text in (m.get("text") or "") and not m["text"].endswith(" …")
            ]  # fmt: skip
            return bool(found)

        await self.fake.wait_until(seen, timeout=timeout)
        return found[0]

    async def answers(self, prompt: str, label: str, after: int = 0) -> dict[str, Any]:
        """Answer the question showing ``prompt``: press its button ``label``, or type ``label`` where it has none."""
        question = await self.sees(prompt, after)
        buttons = [b for row in (question.get("reply_markup") or {}).get("inline_keyboard", []) for b in row if b["text"] == label]
        if buttons:
            self.fake.push_callback_query(OWNER, OWNER, buttons[0]["callback_data"], message_id=question["message_id"])
        else:
            await self.says(label)
        return question

    def buttons(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [b for row in (self.fake.messages[(OWNER, message["message_id"])].get("reply_markup") or {}).get("inline_keyboard", []) for b in row]

    async def presses(self, message: dict[str, Any], label: str) -> None:
        [button] = [b for b in self.buttons(message) if b["text"] == label]
        self.fake.push_callback_query(OWNER, OWNER, button["callback_data"], message_id=message["message_id"])

    def text(self, message_id: int) -> str:
        return self.fake.messages[(OWNER, message_id)].get("text") or ""


def streaming_noted(channel: str) -> bool:
    """Whether the state database notes a reply streaming on ``channel`` as unfinished (what a crash now leaves for the
    next start to end)."""
    with contextlib.closing(sqlite3.connect(Path(os.environ["WLD_HOME"]) / "wld.db")) as db:
        return bool(db.execute("SELECT 1 FROM unfinished_messages WHERE channel = ? AND kind = 'reply'", (channel,)).fetchall())


async def decide(url: str, action: str, revision: int = 1, **fields: str) -> str:
    """POST a decision to the review page, as its form does."""
    data = {"revision": str(revision), "action": action} | fields
    async with aiohttp.ClientSession() as http, http.post(url, data=data) as response:
        assert response.status == 200, await response.text()
        return await response.text()


@contextlib.asynccontextmanager
async def journey(tmp_path: Path, commands: list[str]) -> AsyncIterator[tuple[Operator, Path]]:
    project = make_project(tmp_path / "proj")
    settings = {"validation": {"commands": commands}}
    async with bridge_world(tmp_path=tmp_path, telegram={"cwd": str(project)}, **settings) as world:
        yield Operator(world.fake), project


async def plan_under_review(me: Operator) -> tuple[str, int]:
    """Ask for a Plan and open its review from /load-plan; the review link and the id of its message."""
    await me.says(REQUEST)
    await me.sees("Saved Plan")
    await me.says("/load-plan")
    listing = await me.answers("Choose a Plan", "1")
    assert f"1. {TITLE} (draft, just now)" in listing["text"], "each Plan with its state and age"
    await me.answers("what next?", "Review")
    message = await me.sees("in your browser")
    match = LINK.search(message["text"])
    assert match, message["text"]
    return match.group(1), message["message_id"]


async def test_a_new_plan_is_a_message_of_its_own_whose_review_and_execute_buttons_work(tmp_path: Path) -> None:
    async with journey(tmp_path, []) as (me, project):
        await me.says(REQUEST)
        plan = await me.sees(f"📋 Plan “{TITLE}” (revision 1)")
        assert plan["text"] == f"📋 Plan “{TITLE}” (revision 1)\n{TITLE}.", "the title and summary, nothing else"
        assert [b["text"] for b in me.buttons(plan)] == ["Review", "Execute"]
        tool = await me.sees("write_plan")
        reply = await me.sees("Saved Plan", after=plan["message_id"])
        assert tool["message_id"] < plan["message_id"] < reply["message_id"], "the Plan comes below the tool line, the reply below it"
        assert "The tool returned" not in reply["text"]

        await me.presses(plan, "Execute")
        await me.sees("executes once a review approves it", after=plan["message_id"])
        mark = me.fake.mark()
        await me.presses(plan, "Review")
        notice = await me.fake.wait_for_call("answerCallbackQuery", since=mark)
        assert notice["text"].startswith("A question is open here"), "a step never answers an open question"
        first = await me.answers("executes once a review approves it", "Not now", after=plan["message_id"])
        await me.sees(f"Plan “{TITLE}” stays as it is (draft).", after=first["message_id"])
        await me.presses(plan, "Review")
        link = await me.sees("in your browser", after=first["message_id"])
        [button] = me.buttons(link)
        assert button["text"] == "Review the Plan" and button["url"] == LINK.search(link["text"]).group(1), "the link is a URL button"
        assert not re.search("Choose a Plan|what next", "\n".join(m["text"] for m in me.messages())), "no menus on the way"


async def test_a_review_decided_in_the_browser_reaches_the_chat_as_new_messages(tmp_path: Path) -> None:
    async with journey(tmp_path, ["grep -q hello README.md"]) as (me, project):
        url, link_id = await plan_under_review(me)
        link_text = me.text(link_id)

        await decide(url, "feedback", general="Mention the licence.")
        feedback = await me.sees("back with feedback", after=link_id)
        assert "Mention the licence." in feedback["text"]
        revised = await me.sees("revision 2", after=link_id)
        assert me.text(link_id) == link_text, "nothing was edited into the link's message above"
        assert revised["message_id"] >= feedback["message_id"]


async def review_link_in_chat(world: Any) -> tuple[Any, dict[str, Any], list[dict[str, Any]], str]:
    """Ask for a Plan and press its Review button: the thread, the Plan's message and its step buttons, and the link."""
    thread = await world.mention(REQUEST)
    plan, steps = await world.buttons(thread, f"📋 Plan “{TITLE}” (revision 1)", timeout=PATIENCE)
    assert [world.label(b) for b in steps] == ["Review", "Execute"], "a new Plan comes with its next steps"
    await world.reply_containing(thread, "Saved Plan", final=True)
    await world.click(plan, steps[0])
    link, buttons = await world.buttons(thread, "in your browser", timeout=PATIENCE)
    url = LINK.search(world.current(link)).group(1)
    assert [(world.label(b), b.get("url")) for b in buttons] == [("Review the Plan", url)], "the review link is a URL button"
    return thread, plan, steps, url


def button(world: Any, buttons: list[dict[str, Any]], label: str) -> dict[str, Any]:
    [found] = [b for b in buttons if world.label(b) == label]
    return found


async def typed(world: Any, thread: Any, prompt: str, answer: str) -> dict[str, Any]:
    """Answer the question showing ``prompt`` by typing ``answer`` (a chat menu's number, or a choice's label)."""
    question = await world.reply_containing(thread, prompt, timeout=PATIENCE, final=True)
    await world.say(thread, answer)
    return question


def index_of(texts: list[str], text: str) -> int:
    """Where the last message showing ``text`` is in the conversation (messages oldest first)."""
    return max(i for i, said in enumerate(texts) if text in said)


@pytest.mark.parametrize("platform", ["telegram", "discord", "slack"])
async def test_approval_execution_validation_and_publication_each_arrive_below_the_last_question(platform: str, tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    settings = {"validation": {"commands": ["grep -q hello README.md"]}}
    async with PLATFORM_WORLDS[platform](section={"cwd": str(project)}, **settings) as world:
        thread, _, _, url = await review_link_in_chat(world)

        await decide(url, "approve", general="Keep it short.")
        question, choices = await world.buttons(thread, f"Execute “{TITLE}” now?", timeout=PATIENCE)
        approval = await world.reply_containing(thread, "The review approved revision 1", final=True)
        assert "Keep it short." in world.current(approval), "the reviewer's notes reach the chat"
        await world.click(question, button(world, choices, "Execute"))
        mode, modes = await world.buttons(thread, "be executed?", timeout=PATIENCE)
        await world.click(mode, button(world, modes, "All at once"))

        delivery, offered = await world.buttons(thread, "What now?", timeout=PATIENCE)
        asked = world.current(delivery)
        assert f"Publish commits the validated work to branch {BRANCH}" in asked and "main, is not changed" in asked
        said = world.texts(thread)
        assert index_of(said, "The review approved") < index_of(said, f"Execute “{TITLE}” now?") < index_of(said, "be executed?") < index_of(said, "What now?")
        progress = "\n".join(said[index_of(said, "be executed?") + 1 : index_of(said, "What now?")])
        assert f"Creating the worktree and branch {BRANCH}" in progress, "execution progress is shown"
        assert "write_file README.md" in progress
        assert "✅ Validation passed: 1 of 1 commands passed" in progress, "the validation outcome comes before the question, a pass as ✅"

        [code_url] = CODE_LINK.findall(progress)
        _, link_buttons = await world.buttons(thread, "round 1) in your browser")
        assert button(world, link_buttons, "Review the code").get("url") == code_url, "the Code Review link is a URL button too"
        status, page = await fetch(code_url)
        assert status == 200 and "README.md" in page and "hello" in page, "the Code Review page shows the changed file and its lines"
        assert "grep -q hello README.md" in page, "and the validation commands"

        await world.click(delivery, button(world, offered, "Publish"))
        published = await world.reply_containing(thread, f"Published branch {BRANCH} at commit", timeout=PATIENCE, final=True)
        assert index_of(world.texts(thread), "Published branch") > index_of(world.texts(thread), "What now?"), "the commit is reported below"
        assert git(project, "show", f"{BRANCH}:README.md") == "hello"
        assert git(project, "rev-parse", BRANCH)[:12] in world.current(published)

        await world.say(thread, "/load-plan")
        listing = await typed(world, thread, "Reply with a number", "1")
        assert f"1. {TITLE} (published, just now)" in world.current(listing)
        await typed(world, thread, "what next?", "View plan details")
        details = await world.reply_containing(thread, "Published on branch", timeout=PATIENCE, final=True)
        assert f"Published on branch {BRANCH} at commit {git(project, 'rev-parse', BRANCH)[:12]}." in world.current(details)


async def test_what_follows_an_answered_question_is_a_new_message_below_it(tmp_path: Path) -> None:
    async with journey(tmp_path, []) as (me, project):
        await me.says(REQUEST)
        await me.sees("Saved Plan")
        await me.says("/load-plan")
        await me.answers("Choose a Plan", "1")
        first_menu = await me.answers("what next?", "View plan details")
        assert "1/1" not in first_menu["text"] and "Choice" not in first_menu["text"], "a one-field form is just its question"
        details = await me.sees("Steps", after=first_menu["message_id"])
        details_text = details["text"]
        second_menu = await me.answers("what next?", "Cancel", after=details["message_id"])
        cancelled = await me.sees(f"Cancelled; Plan “{TITLE}” is unchanged.")
        assert cancelled["message_id"] > second_menu["message_id"], "the result is below the question, not edited above it"
        assert me.text(details["message_id"]) == details_text

        await me.says("please interview me")
        last = await me.answers("Which language", "Rust")
        last = await me.answers("Should it include tests?", "Yes", after=last["message_id"])
        last = await me.answers("Anything else", "no", after=last["message_id"])
        answers = await me.sees("Your answers, in order: 1. Rust; 2. Yes; 3. no.")
        assert answers["message_id"] > last["message_id"]


@pytest.mark.parametrize("platform", ["telegram", "discord", "slack"])
async def test_the_whole_journey_through_wld_bridge_including_a_sigkill_and_a_restart(platform: str, tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    marker = tmp_path / "validation-runs.txt"
    # The first validation records its shell's pid and sleeps (the bridge is killed meanwhile); the second checks the work.
    command = f"echo $$ >> {marker}; if [ $(wc -l < {marker}) -lt 2 ]; then exec sleep 30; fi; grep -q hello README.md"
    async with FAKES[platform]() as fake:
        port = free_port()
        config = write_wld_config(
            tmp_path / "wld.toml",
            {
                "web": {"listen": f"127.0.0.1:{port}"},
                "validation": {"commands": [command]},
                "channels": {platform: SECTIONS[platform](fake) | {"cwd": str(project)}},
            },
        )
        async with wld_bridge(config, fake, platform, port) as (bridge, world):
            thread, plan, steps, url = await review_link_in_chat(world)
            await decide(url, "feedback", general="Mention the licence.")
            await world.reply_containing(thread, f"📋 Plan “{TITLE}” (revision 2)", timeout=PATIENCE, final=True)  # after the feedback

            await world.say(thread, "/plan_review")
            second, _ = await world.buttons(thread, "Review revision 2", timeout=PATIENCE)
            await decide(LINK.search(world.current(second)).group(1), "approve", revision=2, general="Keep it short.")
            question, choices = await world.buttons(thread, f"Execute “{TITLE}” now?", timeout=PATIENCE)
            approval = await world.reply_containing(thread, "The review approved revision 2", final=True)
            assert "Keep it short." in world.current(approval)
            await world.click(question, button(world, choices, "Execute"))
            mode, modes = await world.buttons(thread, "be executed?", timeout=PATIENCE)
            await world.click(mode, button(world, modes, "All at once"))
            await until(marker.exists, "the validation step under way")
            streaming = lambda: [t for t in world.texts(thread) if "⚙️ Validation" in t and t.endswith(" …")]  # noqa: E731
            await until(lambda: bool(streaming()), "the validation shown as running")
            await until(lambda: streaming_noted(platform), "the streaming reply noted as unfinished")
            bridge.proc.kill()
            await bridge.proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(marker.read_text().split()[0]), signal.SIGKILL)  # the orphaned validation command
        crashed_at = len(world.texts(thread))
        assert streaming(), "the kill left a reply streaming"

        async with wld_bridge(config, fake, platform, port) as (_, world):  # nobody says anything: the bridge reopens the Session
            report = await world.reply_containing(thread, f"Work on Plan “{TITLE}” was interrupted (branch {BRANCH})", timeout=PATIENCE, final=True)
            await until(lambda: not any(t.endswith("…") for t in world.texts(thread)), "no message left streaming")
            assert any("⚙️ Validation" in t and t.endswith("(interrupted)") for t in world.texts(thread)), "the cut-off reply is ended"
            assert "Uncertain: validation" in world.current(report) and "has not been repeated" in world.current(report)
            recovery, offered = await world.buttons(thread, "What now?", timeout=PATIENCE)
            await world.click(recovery, button(world, offered, "Continue"))

            delivery, offered = await world.buttons(thread, "validation passed. What now?", timeout=PATIENCE)
            said = world.texts(thread)
            outcome = "\n".join(said[index_of(said, "was interrupted") + 1 : index_of(said, "validation passed. What now?")])
            assert "Validation passed: 1 of 1 commands passed" in outcome, "the validation outcome is shown before the question"
            await world.click(delivery, button(world, offered, "Publish"))
            await world.reply_containing(thread, f"Published branch {BRANCH} at commit", timeout=PATIENCE, final=True)
            assert git(project, "show", f"{BRANCH}:README.md") == "hello"
            said = world.texts(thread)[crashed_at:]
            order = ["was interrupted", "validation passed. What now?", "Published branch"]
            assert [index_of(said, text) for text in order] == sorted(index_of(said, text) for text in order), "each step below the last"

            await world.click(plan, steps[0])  # a button from before the restart
            await until(lambda: world.current(plan).endswith("(expired)"), "the old Plan message marked expired")


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_on_discord_and_slack_review_decisions_arrive_as_new_messages_in_the_thread(platform: str, tmp_path: Path) -> None:
    worlds = {"discord": discord_world, "slack": slack_world}
    async with worlds[platform]() as world:
        thread = await world.mention(REQUEST)
        plan, steps = await world.buttons(thread, f"📋 Plan “{TITLE}” (revision 1)", timeout=PATIENCE)
        assert [world.label(b) for b in steps] == ["Review", "Execute"], "a new Plan comes with its next steps"
        await world.reply_containing(thread, "Saved Plan", final=True)
        await world.click(plan, steps[0])  # Review
        link_message, buttons = await world.buttons(thread, "in your browser", timeout=PATIENCE)
        url = LINK.search(world.current(link_message)).group(1)
        assert [b.get("url") for b in buttons] == [url], "the review link is a URL button"
        before = len(world.texts(thread))

        await decide(url, "feedback", general="Mention the licence.")
        await world.reply_containing(thread, "revision 2", timeout=20, final=True)
        after = world.texts(thread)[before:]
        assert any("back with feedback" in text for text in after) and any("revision 2" in text for text in after)

        await world.say(thread, "/plan-review")
        second, _ = await world.buttons(thread, "Review revision 2", timeout=PATIENCE)
        before = len(world.texts(thread))
        await decide(LINK.search(world.current(second)).group(1), "approve", revision=2, general="Keep it short.")
        await world.buttons(thread, f"Execute “{TITLE}” now?", timeout=PATIENCE)
        after = world.texts(thread)[before:]
        approved = next(i for i, text in enumerate(after) if "The review approved revision 2" in text)
        asked = next(i for i, text in enumerate(after) if "now?" in text)
        assert approved < asked and "Keep it short." in after[approved], "the approval and its notes come above the question"


async def test_a_failed_turn_says_its_error_once(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        told = await world.exchange(OWNER, OWNER, "please fail", "could not be completed")
        assert told["text"].count("asked to fail") == 1 and told["text"].count("❌") == 1, told["text"]
        assert world.texts(OWNER) == [told["text"]]


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_on_discord_and_slack_a_step_button_from_before_a_restart_is_marked_expired(platform: str, tmp_path: Path) -> None:
    fakes = {"discord": lambda: DiscordFake(install=False), "slack": SlackFake}
    worlds = {"discord": discord_world, "slack": slack_world}
    async with fakes[platform]() as fake:
        async with worlds[platform](fake=fake) as world:
            thread = await world.mention(REQUEST)
            plan, steps = await world.buttons(thread, f"📋 Plan “{TITLE}” (revision 1)", timeout=PATIENCE)
            await world.reply_containing(thread, "Saved Plan", final=True)
        async with worlds[platform](fake=fake) as world:  # the restarted bridge knows nothing of that Plan's buttons
            await world.click(plan, steps[0])
            await until(lambda: world.current(plan).endswith("(expired)"), "the old Plan message marked expired")
            assert "Review revision" not in "\n".join(world.texts(thread)), "the stale press did nothing"
