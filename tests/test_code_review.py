"""Code Review through the real `wld bridge` and the fake Telegram: the validated change's link is a URL button beside
the delivery question; the page (real HTTP) shows the change, the validation and the commit message; Request changes
makes the Session revise in the same worktree and validate again; Publish from the page reports the commit in the
chat; a second decision on the same round is refused."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.bridge_kit import telegram_section
from tests.code_review_kit import CODE_LINK, fetch, post
from tests.fakes.telegram_api import TelegramFake
from tests.plan_kit import git, make_project
from tests.test_chat_journey import BRANCH, TITLE, Operator, decide, plan_under_review, wld_bridge
from tests.wld_process import free_port
from tests.wld_process import write_config as write_wld_config

CHECK = "grep -q hello README.md && echo found hello"


async def code_review_offered(me: Operator, after: int, round_: int) -> tuple[str, dict, dict]:
    """The round's Code Review link, its message (the URL button checked) and the delivery question below it."""
    link = await me.sees(f"round {round_}) in your browser", after=after)
    url = CODE_LINK.search(link["text"]).group(1)
    [button] = me.buttons(link)
    assert (button["text"], button["url"]) == ("Review the code", url), "the Code Review link is a URL button"
    question = await me.sees("validation passed. What now?", after=after)
    assert question["message_id"] > link["message_id"] and "Publish" in [b["text"] for b in me.buttons(question)]
    return url, link, question


@contextlib.asynccontextmanager
async def executing(tmp_path: Path, mode: str) -> AsyncIterator[tuple[Operator, Path, dict[str, Any]]]:
    """`wld bridge` with the fake Telegram, an approved Plan executed in ``mode``: the operator, the project and the
    answered question of how to execute it."""
    project = make_project(tmp_path / "proj")
    async with TelegramFake() as fake:
        config = write_wld_config(
            tmp_path / "wld.toml",
            {
                "web": {"listen": f"127.0.0.1:{free_port()}"},
                "validation": {"commands": [CHECK]},
                "channels": {"telegram": telegram_section(fake) | {"cwd": str(project)}},
            },
        )
        me = Operator(fake)
        async with wld_bridge(config, fake):
            url, link_id = await plan_under_review(me)
            await decide(url, "approve")
            approval = await me.sees("The review approved revision 1", after=link_id)
            question = await me.answers(f"Execute “{TITLE}” now?", "Execute", after=approval["message_id"])
            yield me, project, await me.answers("be executed?", mode, after=question["message_id"])


async def test_a_code_review_requests_changes_then_publishes_from_the_page(tmp_path: Path) -> None:
    async with executing(tmp_path, "All at once") as (me, project, mode):
        first, _, delivery = await code_review_offered(me, mode["message_id"], 1)

        status, page = await fetch(first)
        assert status == 200
        assert "README.md" in page and "+1" in page, "the changed file with its counts"
        assert re.search(r'<span class="ln added"><span class="num">1</span><span class="sign">\+</span>hello', page), "its added line"
        assert "grep -q hello README.md" in page and "found hello" in page, "the validation command and its output"
        assert f"{TITLE}\n\nRunWield Plan" in page, "the commit message Publish will use"

        status, _ = await post(first, round="1", action="changes", notes="")
        assert status == 400, "Request changes needs notes"
        status, _ = await post(first, round="1", action="changes", notes="Also write NOTES.md saying thanks")
        assert status == 200
        told = await me.sees("requested changes in the browser", after=delivery["message_id"])
        assert "Also write NOTES.md saying thanks" in told["text"], "the reviewer's notes reach the chat"
        second, _, again = await code_review_offered(me, delivery["message_id"], 2)
        assert second != first
        revision = "\n".join(me.text(i) for i in range(told["message_id"], again["message_id"]))
        assert "write_file NOTES.md" in revision and "✅ Validation passed: 1 of 1 commands passed" in revision, "revised, then validated again"

        status, page = await fetch(first)
        assert status == 410 and "has been revised since" in page, "the stale page says so"
        status, page = await fetch(second)
        assert "NOTES.md" in page and "thanks" in page

        status, _ = await post(second, round="2", action="publish", notes="Looks good.")
        assert status == 200
        chose = await me.sees("chose Publish in the browser", after=again["message_id"])
        assert "Looks good." in chose["text"]
        published = await me.sees(f"Published branch {BRANCH} at commit", after=again["message_id"])
        assert git(project, "show", f"{BRANCH}:NOTES.md") == "thanks", "the revision was made in the same worktree and branch"
        assert git(project, "rev-parse", BRANCH)[:12] in published["text"]

        status, page = await post(second, round="2", action="abandon", confirm="yes")
        assert status == 409 and "closed" in page, "a second decision on the same round is refused"
        assert git(project, "show", f"{BRANCH}:README.md") == "hello"


async def test_load_plan_offers_a_new_code_review_for_an_executed_plan_and_the_old_link_is_closed(tmp_path: Path) -> None:
    async with executing(tmp_path, "All at once") as (me, project, mode):
        first, _, delivery = await code_review_offered(me, mode["message_id"], 1)
        await me.says("/cancel")
        await me.fake.wait_until(lambda: "Cancelled" in me.text(delivery["message_id"]), timeout=20)

        await me.says("/load-plan")
        listing = await me.answers("Choose a Plan", "1", after=delivery["message_id"])
        menu = await me.answers("what next?", "Execute", after=listing["message_id"])
        second, _, _ = await code_review_offered(me, menu["message_id"], 1)
        assert second != first
        status, page = await fetch(first)
        assert status == 409 and "answered or withdrawn" in page, "the link of the withdrawn question no longer decides"
        status, page = await fetch(second)
        assert status == 200 and "README.md" in page


async def test_request_changes_on_a_pair_execution_makes_the_notes_its_next_increment(tmp_path: Path) -> None:
    async with executing(tmp_path, "Pair Execution") as (me, project, mode):
        checkpoint = await me.sees("Checkpoint 1", after=mode["message_id"])
        await me.says("done")
        link, _, delivery = await code_review_offered(me, checkpoint["message_id"], 1)

        assert (await post(link, round="1", action="changes", notes="Also write NOTES.md saying thanks"))[0] == 200
        told = await me.sees("requested changes in the browser", after=delivery["message_id"])
        second = await me.sees("Checkpoint 2", after=told["message_id"] - 1)
        assert "NOTES.md" in second["text"], "the notes were the Agent's next increment, in the same worktree"
