"""/load-plan and /plan-review over `wld acp` (chat menus and forms), with the review page served by the same process."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from acp_session import FORMS_INIT, menus, model_requests, say, since, text_since, wld_session
from acp_wire import WireClient
from test_acp_interactions import SENDER
from waiting import PATIENCE

CONFIG = '[web]\nlisten = "127.0.0.1:0"\n'
LINK = re.compile(r"in your browser: (http://127\.0\.0\.1:\d+/review/[A-Za-z0-9_-]+)")


async def make_plan(client: WireClient, sid: str) -> None:
    assert (await say(client, sid, "make a plan to add a README"))["result"] == {"stopReason": "end_turn"}


async def reply(client: WireClient, sid: str, *blocks: str) -> tuple[dict[str, Any], str]:
    """Send a message (text blocks); its response and the text the agent sent back."""
    start = len(client.messages)
    response = await say(client, sid, *blocks)
    return response, text_since(client, start, sid)


async def heard(client: WireClient, sid: str, start: int, needle: str, timeout: float = PATIENCE) -> str:
    """The agent's text since ``start``, once it contains ``needle`` (sent by a turn the Session started itself)."""
    await client.wait_message(lambda _: needle in text_since(client, start, sid), timeout)
    return text_since(client, start, sid)


def review_link(text: str) -> str:
    match = LINK.search(text)
    assert match, text
    return match.group(1)


async def decide(url: str, action: str, **fields: str) -> str:
    """POST a decision to a review page, as its form does."""
    async with aiohttp.ClientSession() as http, http.post(url, data={"revision": "1", "action": action} | fields) as response:
        assert response.status == 200, await response.text()
        return await response.text()


@pytest.fixture
async def chat(tmp_path: Path):
    async with wld_session(tmp_path, config=CONFIG) as session:
        yield session


async def test_a_saved_plan_is_a_message_of_its_own_whose_next_steps_are_commands_that_work(chat) -> None:
    client, sid = chat
    start = len(client.messages)
    await make_plan(client, sid)
    [saved] = [u for u in since(client, start, sid) if "planSaved" in u.get("_meta", {}).get("runwield", {})]
    meta = saved["_meta"]["runwield"]["planSaved"]
    plan_id = meta["planId"]
    assert meta["title"] == "Add a README" and meta["revision"] == 1 and meta["summary"] == "Add a README."
    assert meta["actions"] == [
        {"label": "Review", "command": f"/load-plan {plan_id} review"},
        {"label": "Execute", "command": f"/load-plan {plan_id} execute"},
    ]
    text = saved["content"]["text"]
    assert text.startswith("📋 Plan “Add a README” (revision 1)\nAdd a README.") and f"Review (/load-plan {plan_id} review)" in text
    assert saved["messageId"], "a message of its own"

    _, text = await reply(client, sid, meta["actions"][1]["command"])
    assert "Start its review now?" in text, "Execute on a draft offers its review first"
    _, text = await reply(client, sid, "Review")
    url = review_link(text)
    _, text = await reply(client, sid, meta["actions"][0]["command"])
    assert text.startswith("A review is already open.") and review_link(text) == url, "Review goes straight to the link"
    _, text = await reply(client, sid, f"/load-plan {plan_id} fly")
    assert "There is no action 'fly'" in text and "Nothing changed." in text


async def test_load_plan_lists_plans_and_its_menu_views_details_reviews_and_cancels(chat) -> None:
    client, sid = chat
    response, text = await reply(client, sid, "/load-plans")
    assert response["result"] == {"stopReason": "end_turn"}
    assert text.startswith("There are no saved Plans for this project yet")
    await make_plan(client, sid)
    start = len(client.messages)

    response, _ = await reply(client, sid, "/load-plan")
    assert response["result"] == {"stopReason": "end_turn"}, "the menu ends the request; the command waits"
    [plans_menu] = menus(client, start, sid)
    assert "Choose a Plan" in plans_menu and "1. Add a README" in plans_menu
    _, text = await reply(client, sid, SENDER, "1")  # a standalone openab.sender.v1 block, then the reply
    [actions] = menus(client, start, sid)[1:]
    for n, label in enumerate(["Resume planning", "View plan details", "Review", "Execute", "Cancel"], 1):
        assert f"{n}. {label}" in actions
    _, text = await reply(client, sid, "View plan details")
    assert "Plan “Add a README”" in text and "revision 1 of 1, draft" in text and "**Steps**" in text
    assert "File:" not in text, "no server path in the chat"
    assert len(menus(client, start, sid)) == 3, "the action menu comes again"
    _, text = await reply(client, sid, "4")
    assert "executes once a review approves it. Start its review now?" in text, "Execute on a draft offers its review"
    _, text = await reply(client, sid, "Not now")

    response, _ = await reply(client, sid, "/load-plan")
    await reply(client, sid, "1")
    start = len(client.messages)
    _, text = await reply(client, sid, "Review")
    url = review_link(text)
    [hint] = [u["_meta"]["runwield"]["planLink"] for u in since(client, start, sid) if "planLink" in u.get("_meta", {}).get("runwield", {})]
    assert hint["url"] == url and hint["revision"] == 1 and hint["planId"].startswith("plan_"), "PlanLink: text plus _meta hints"
    async with aiohttp.ClientSession() as http, http.get(url) as page:
        assert page.status == 200 and "Add a README" in await page.text()

    await reply(client, sid, "/load-plan")
    await reply(client, sid, "1")
    _, text = await reply(client, sid, "Review")
    assert text.startswith("A review is already open.") and review_link(text) == url, "no second review"

    await reply(client, sid, "/load-plan")
    await reply(client, sid, "1")
    _, text = await reply(client, sid, "cancel")
    assert text == "Cancelled; Plan “Add a README” is unchanged."
    assert model_requests(client, start, sid) == 0, "no command reached the model"


async def test_resume_planning_starts_an_agent_turn_on_the_plan(chat) -> None:
    client, sid = chat
    await make_plan(client, sid)
    await reply(client, sid, "/load-plan")
    await reply(client, sid, "1")
    start = len(client.messages)
    response, text = await reply(client, sid, "Resume planning")
    assert response["result"] == {"stopReason": "end_turn"}
    assert model_requests(client, start, sid) == 1
    assert "Resume planning Plan “Add a README”" in text, "the scripted model echoes the prompt it was given"


async def test_plan_review_in_each_state(chat) -> None:
    client, sid = chat
    _, text = await reply(client, sid, "/plan-review")
    assert "has no Plan to review yet" in text and "choose Review for the Plan in /load-plan" in text
    await make_plan(client, sid)
    _, text = await reply(client, sid, "/plan-review")
    first = review_link(text)
    assert "Review revision 1 of “Add a README”" in text, "a Plan never reviewed starts its review at once"

    _, text = await reply(client, sid, "/plan-review")
    assert text.startswith("A review is already open.") and review_link(text) == first

    start = len(client.messages)
    assert "Feedback sent" in await decide(first, "feedback", general="Mention the licence.")
    await heard(client, sid, start, "Saved Plan")  # the Session revised the Plan with the feedback
    _, text = await reply(client, sid, "/plan-review")
    second = review_link(text)
    assert second != first and "revision 2" in text, "after feedback, a new review of the current Plan"

    assert "is approved" in await decide(second, "approve", revision="2")
    await heard(client, sid, start, "Execute “Add a README” now?")
    _, text = await reply(client, sid, "Not now")
    _, text = await reply(client, sid, "/plan-review")
    assert "is already approved (revision 2)" in text and "No review was started" in text

    await say(client, sid, "make a plan to add a licence")
    _, text = await reply(client, sid, "/plan-review")
    assert "Review revision 1 of “Add a licence”" in text and review_link(text), "the newest Plan's first review"


async def test_load_plan_with_forms(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT, config=CONFIG) as (client, sid):
        await make_plan(client, sid)
        answers = iter([{"answer": None}, {"answer": "details"}, {"answer": "review"}])
        plan_ids: list[str] = []

        def answer(params: dict[str, Any]) -> dict[str, Any]:
            content = next(answers)
            if content["answer"] is None:  # the Plan menu: pick the only Plan
                plan_ids.extend(o["const"] for o in params["requestedSchema"]["properties"]["answer"]["oneOf"])
                content = {"answer": plan_ids[0]}
            return {"action": "accept", "content": content}

        client.on_request("elicitation/create", answer)
        response, text = await reply(client, sid, "/load-plan")
        assert response["result"] == {"stopReason": "end_turn"}
        assert "revision 1 of 1" in text and review_link(text)
        forms = [m["params"]["message"] for m in client.requests if m["method"] == "elicitation/create"]
        assert forms[0] == "Choose a Plan" and forms[1] == forms[2] == "Plan “Add a README” (revision 1): what next?"
