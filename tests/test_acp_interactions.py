"""Questions over the wire: chat menus for clients without forms, native forms for clients with them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp_session import (
    FORMS_INIT,
    menus,
    model_requests,
    probe_env,
    say,
    selection,
    since,
    text_since,
    wld_session,
)
from acp_wire import WireClient

SENDER = '<sender_context>\n{"schema": "openab.sender.v1", "sender_id": "42", "sender_name": "ann"}\n</sender_context>'
BAD_SENDER = "<sender_context>\n{not json}\n</sender_context>"
LINK = {"type": "resource_link", "uri": "file:///tmp/photo.png", "name": "photo.png"}


@pytest.fixture
async def chat(tmp_path: Path):
    """A client without forms, with the probe plugin's question commands."""
    async with wld_session(tmp_path, env=probe_env(tmp_path)) as session:
        yield session


@pytest.fixture
async def forms(tmp_path: Path):
    """A client that advertises ``elicitation.form``."""
    async with wld_session(tmp_path, init=FORMS_INIT) as session:
        yield session


async def ask_and_reply(client: WireClient, session_id: str, command: str, *reply: str | dict[str, Any]) -> str:
    """Run a command that asks a question, reply to it, and return what was said after the reply."""
    await say(client, session_id, command)
    start = len(client.messages)
    await say(client, session_id, *reply)
    return text_since(client, start, session_id)


def answered_before_response(client: WireClient, response: dict[str, Any], update_text: str) -> bool:
    """Whether the chat message containing ``update_text`` came before ``response`` on the wire."""
    position = next(
        i for i, m in enumerate(client.messages)
        if m.get("method") == "session/update" and update_text in json.dumps(m["params"]["update"].get("content", {}))
    )
    return position < client.messages.index(response)


# chat menus


async def test_a_menu_repeats_once_for_9_banana_and_a_command_then_1_still_selects(chat) -> None:
    client, sid = chat
    await say(client, sid, "/agent guide")
    start = len(client.messages)
    asked = await say(client, sid, "/agent")
    assert asked["result"] == {"stopReason": "end_turn"}
    [menu] = menus(client, start, sid, "asked")
    assert "1. Build" in menu and "2. Guide" in menu and "Reply with a number (1-2)" in menu
    for reply in ("9", "banana", "/agent"):
        before = len(client.messages)
        assert (await say(client, sid, reply))["result"] == {"stopReason": "end_turn"}
        [repeat] = menus(client, before, sid)
        assert "did not answer" in repeat and "still waiting" in repeat and "Reply with a number (1-2)" in repeat
        assert since(client, before, sid, "config_option_update") == []
    assert model_requests(client, start, sid) == 0, "a bare /agent and its replies never reach the model"
    before = len(client.messages)
    assert (await say(client, sid, "1"))["result"] == {"stopReason": "end_turn"}
    assert "Now working as the Build Agent" in text_since(client, before, sid)
    [update] = since(client, before, sid, "config_option_update")
    assert selection(update)["mode"] == "build"


async def test_cancel_with_no_matching_option_settles_as_cancelled(chat) -> None:
    client, sid = chat
    await say(client, sid, "/agent")
    start = len(client.messages)
    await say(client, sid, "  Cancel ")
    assert "No Agent was chosen (cancelled); nothing changed." in text_since(client, start, sid)
    start = len(client.messages)
    await say(client, sid, "hello")
    assert text_since(client, start, sid) == "You said: hello", "the next message is an ordinary prompt"


async def test_cancel_matching_an_option_selects_that_option(chat) -> None:
    client, sid = chat
    assert "outcome=answered value=stop" in await ask_and_reply(client, sid, "/fruit", "cancel")


async def test_labels_and_values_match_trimmed_and_case_insensitive(chat) -> None:
    client, sid = chat
    for reply, value in (("  PEAR ", "pear"), ("apple", "apple"), ("2", "pear")):
        assert f"outcome=answered value={value}" in await ask_and_reply(client, sid, "/fruit", reply)


async def test_session_cancel_settles_a_waiting_menu_before_the_next_prompt(chat) -> None:
    client, sid = chat
    await say(client, sid, "/agent")
    await client.notify("session/cancel", {"sessionId": sid})
    start = len(client.messages)
    assert (await say(client, sid, "hello"))["result"] == {"stopReason": "end_turn"}
    assert menus(client, start, sid) == [], "the menu no longer claims the message"
    assert text_since(client, start, sid) == "You said: hello"


async def test_approvals_show_yes_and_no(chat) -> None:
    client, sid = chat
    start = len(client.messages)
    for reply, value in (("no", "decline"), ("1", "accept"), ("DECLINE", "decline"), ("Yes", "accept")):
        assert f"outcome=answered value={value}" in await ask_and_reply(client, sid, "/approve", reply)
    menu = menus(client, start, sid)[0]
    assert "1. Yes" in menu and "2. No" in menu


async def test_a_text_question_takes_any_text_even_cancel_but_not_blank_or_attachments(chat) -> None:
    client, sid = chat
    await say(client, sid, "/note")
    for reply in (["   "], [LINK], ["call mum", LINK]):
        start = len(client.messages)
        await say(client, sid, *reply)
        assert len(menus(client, start, sid, "unmatched")) == 1
    start = len(client.messages)
    await say(client, sid, "cancel")
    assert "outcome=answered value=cancel" in text_since(client, start, sid)


async def test_sender_metadata_is_set_aside_and_bad_or_conflicting_replies_select_nothing(chat) -> None:
    client, sid = chat
    await say(client, sid, "/fruit")
    for reply in ([SENDER], [BAD_SENDER, "1"], ["1", "2"], ["1", LINK]):
        start = len(client.messages)
        await say(client, sid, *reply)
        assert len(menus(client, start, sid, "unmatched")) == 1, reply
    start = len(client.messages)
    await say(client, sid, SENDER, "pear")
    assert "outcome=answered value=pear" in text_since(client, start, sid)


async def test_a_chat_interview_asks_one_question_per_request_and_the_tool_gets_ordered_typed_answers(chat) -> None:
    client, sid = chat
    start = len(client.messages)
    first = await say(client, sid, "please interview me")
    assert first["result"] == {"stopReason": "end_turn"}
    [tool] = since(client, start, sid, "tool_call")
    assert tool["title"] == "user_interview"
    assert [u["status"] for u in since(client, start, sid, "tool_call_update")] == ["in_progress"], "the tool stays live"
    assert answered_before_response(client, first, "Which language should the example use?")
    assert "4. Other" in menus(client, start, sid, "asked")[0]

    steps = [("rust", "Should it include tests?"), ("Other", "Type your own answer to: Should it include tests?"),
             ("only on CI", "Anything else I should know?")]
    for reply, shown in steps:
        before = len(client.messages)
        response = await say(client, sid, reply)
        assert response["result"] == {"stopReason": "end_turn"}
        assert answered_before_response(client, response, shown)
        assert model_requests(client, before, sid) == 0, "a reply is not a new model turn"

    before = len(client.messages)
    await say(client, sid, "cancel")
    assert text_since(client, before, sid) == "Your answers, in order: 1. Rust; 2. only on CI; 3. cancel."
    [done] = [u for u in since(client, before, sid, "tool_call_update") if u["status"] == "completed"]
    answers = json.loads(done["content"][0]["content"]["text"])["answers"]
    assert [(a["type"], a["answer"]) for a in answers] == [("choice", "Rust"), ("other", "only on CI"), ("text", "cancel")]


async def test_interview_numbers_pick_choices_the_last_asks_for_other_and_other_text_is_other(chat) -> None:
    client, sid = chat
    for replies, expected in (
        (("Kotlin please", "2", "   ", "fine"), "1. Kotlin please; 2. No; 3. fine."),
        (("1", "3", "sometimes", "ok"), "1. Python; 2. sometimes; 3. ok."),
    ):
        await say(client, sid, "interview")
        for reply in replies:
            start = len(client.messages)
            await say(client, sid, reply)
        assert text_since(client, start, sid) == f"Your answers, in order: {expected}"


async def test_an_unanswered_chat_question_expires_and_the_next_message_is_a_prompt(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config="[sessions]\nquestion_timeout = 0.5\n") as (client, sid):
        await say(client, sid, "/agent")
        await client.wait_notification(lambda n: "No Agent was chosen (expired)" in json.dumps(n["params"]))
        start = len(client.messages)
        while "error" in (response := await say(client, sid, "1")):  # the expired turn is still being saved
            assert response["error"]["data"]["reason"] == "busy"
        assert text_since(client, start, sid) == "You said: 1"


# native forms


def elicitations(client: WireClient) -> list[dict[str, Any]]:
    return [m["params"] for m in client.requests if m["method"] == "elicitation/create"]


async def test_a_forms_client_gets_agent_selection_as_a_form_with_its_labels(forms) -> None:
    client, sid = forms
    client.on_request("elicitation/create", lambda params: {"action": "accept", "content": {"answer": "guide"}})
    start = len(client.messages)
    assert (await say(client, sid, "/agent"))["result"] == {"stopReason": "end_turn"}
    [form] = elicitations(client)
    assert form["mode"] == "form" and form["sessionId"] == sid
    field = form["requestedSchema"]["properties"]["answer"]
    assert [(o["const"], o["title"]) for o in field["oneOf"]] == [("build", "Build"), ("guide", "Guide")]
    assert form["requestedSchema"]["required"] == ["answer"]
    assert "default" not in json.dumps(form), "nothing is answered by default"
    assert menus(client, start, sid) == [], "no chat menu when the client has forms"
    assert "Now working as the Guide Agent" in text_since(client, start, sid)
    [update] = since(client, start, sid, "config_option_update")
    assert selection(update) == {"mode": "guide", "model": "scripted", "thought_level": "medium"}


async def test_form_interviews_need_other_text_for_other_and_ignore_stray_other_text(forms) -> None:
    client, sid = forms
    answers = iter([
        {"action": "accept", "content": {"answer": "_other", "other": "  "}},
        {"action": "accept", "content": {"answer": "_other", "other": "Kotlin"}},
        {"action": "accept", "content": {"answer": "Yes", "other": "stray"}},
        {"action": "accept", "content": {"answer": "fine"}},
    ])
    client.on_request("elicitation/create", lambda params: next(answers))
    start = len(client.messages)
    assert (await say(client, sid, "interview me"))["result"] == {"stopReason": "end_turn"}
    shown = elicitations(client)
    assert len(shown) == 4
    assert "other" in shown[0]["requestedSchema"]["properties"] and shown[0]["toolCallId"]
    assert shown[1]["message"].startswith("Choosing Other needs your answer")
    assert text_since(client, start, sid) == "Your answers, in order: 1. Kotlin; 2. Yes; 3. fine."


async def test_a_declined_form_settles_and_the_next_message_gets_a_normal_answer(forms) -> None:
    client, sid = forms
    client.on_request("elicitation/create", lambda params: {"action": "decline"})
    start = len(client.messages)
    assert (await say(client, sid, "interview me"))["result"] == {"stopReason": "end_turn"}
    assert text_since(client, start, sid) == "The interview ended without all answers (declined)."
    start = len(client.messages)
    await say(client, sid, "hello")
    assert text_since(client, start, sid) == "You said: hello"


async def test_a_form_the_client_cannot_show_settles_the_question(forms) -> None:
    client, sid = forms  # no handler: the client answers elicitation/create with -32601
    start = len(client.messages)
    assert (await say(client, sid, "/agent"))["result"] == {"stopReason": "end_turn"}
    said = text_since(client, start, sid)
    assert "could not be asked" in said and "No Agent was chosen (failed)" in said
    start = len(client.messages)
    await say(client, sid, "hello")
    assert text_since(client, start, sid) == "You said: hello"


async def test_session_cancel_during_a_form_settles_it_and_closes_the_form(forms) -> None:
    client, sid = forms
    never = asyncio.Event()

    async def wait_forever(params: dict[str, Any]) -> dict[str, Any]:
        await never.wait()
        return {"action": "cancel"}

    client.on_request("elicitation/create", wait_forever)
    turn = asyncio.create_task(say(client, sid, "interview me"))
    await client.wait_message(lambda m: m.get("method") == "elicitation/create")
    await client.notify("session/cancel", {"sessionId": sid})
    assert (await turn)["result"] == {"stopReason": "cancelled"}
    [form] = [m for m in client.requests if m["method"] == "elicitation/create"]
    cancel = await client.wait_notification(lambda n: n["method"] == "$/cancel_request")
    assert cancel["params"] == {"requestId": form["id"]}
    start = len(client.messages)
    await say(client, sid, "hello")
    assert text_since(client, start, sid) == "You said: hello"


async def test_an_unanswered_form_expires(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def wait_forever(params: dict[str, Any]) -> dict[str, Any]:
        await never.wait()
        return {"action": "cancel"}

    async with wld_session(tmp_path, init=FORMS_INIT, config="[sessions]\nquestion_timeout = 0.5\n") as (client, sid):
        client.on_request("elicitation/create", wait_forever)
        start = len(client.messages)
        assert (await say(client, sid, "interview me"))["result"] == {"stopReason": "end_turn"}
        said = text_since(client, start, sid)
        assert "expired without an answer" in said and "(expired)" in said
        assert any(n["method"] == "$/cancel_request" for n in client.notifications)
