"""The chat-menu reply rules and the form answer rules, as fast unit tests (with hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp.schema import PromptRequest
from acp_wire import load_schema
from hypothesis import given
from hypothesis import strategies as st

from runwield_bridge.acp.forms import form_outcome, form_request
from runwield_bridge.acp.menus import (
    ChatReply,
    NoMatch,
    TypeOther,
    interpret,
    read_reply,
    render_menu,
)
from runwield_bridge.acp.updates import wire
from runwield_bridge.core.interactions import Choice, Outcome, PendingQuestion, approval, interview, select, text

FRUIT = select("Pick a fruit", [Choice("apple", "Apple"), Choice("pear", "Pear", "green"), Choice("fig", "Fig")])
LANGUAGE = interview("Which language?", [Choice("Python", "Python"), Choice("Rust", "Rust")])
SENDER = {"schema": "openab.sender.v1", "sender_id": "7", "sender_name": "ann"}


def blocks(*items: str | dict[str, Any]) -> list[Any]:
    """Prompt content as the server receives it (strings are text blocks)."""
    prompt = [{"type": "text", "text": i} if isinstance(i, str) else i for i in items]
    return PromptRequest.model_validate({"sessionId": "s", "prompt": prompt}).prompt


def reply(*items: str | dict[str, Any]) -> ChatReply:
    return read_reply(blocks(*items))


def sender_block(data: Any) -> str:
    return f"<sender_context>\n{json.dumps(data)}\n</sender_context>"


@pytest.mark.parametrize(
    ("text_", "expected"),
    [
        ("2", Outcome.answer("pear")),
        (" PEAR ", Outcome.answer("pear")),
        ("fig", Outcome.answer("fig")),
        ("cancel", Outcome.cancelled("the user replied cancel")),
    ],
)
def test_select_replies(text_: str, expected: Outcome) -> None:
    assert interpret(FRUIT, reply(text_)) == expected


@pytest.mark.parametrize("text_", ["9", "0", "banana", "/agent", "/model fast", "1.", "apple pie"])
def test_select_replies_that_leave_the_menu_waiting(text_: str) -> None:
    assert isinstance(interpret(FRUIT, reply(text_)), NoMatch)


def test_cancel_is_an_option_when_an_option_matches_it() -> None:
    menu = select("Stop?", [Choice("go", "Go on"), Choice("stop", "Cancel")])
    assert interpret(menu, reply("CANCEL")) == Outcome.answer("stop")


def test_a_reply_matching_two_options_is_ambiguous() -> None:
    menu = select("Which?", [Choice("a", "b"), Choice("b", "c")])
    assert isinstance(interpret(menu, reply("b")), NoMatch)


def test_approvals_without_options_are_yes_and_no() -> None:
    question = approval("Deploy?")
    assert "1. Yes\n2. No" in render_menu(question)
    for answer, value in (("yes", "accept"), ("No", "decline"), ("1", "accept"), ("2", "decline"), ("decline", "decline")):
        assert interpret(question, reply(answer)) == Outcome.answer(value)
    assert isinstance(interpret(question, reply("y")), NoMatch)
    assert interpret(question, reply("cancel")).status == "cancelled"


def test_text_questions_take_any_non_blank_text_and_cancel_is_text() -> None:
    question = text("Name?")
    assert interpret(question, reply("cancel")) == Outcome.answer("cancel")
    assert interpret(question, reply("/agent")) == Outcome.answer("/agent")
    assert interpret(question, reply("first", "second")) == Outcome.answer("first\nsecond")
    assert isinstance(interpret(question, reply("   ")), NoMatch)
    link = {"type": "resource_link", "uri": "file:///a.png", "name": "a.png"}
    assert isinstance(interpret(question, reply("a name", link)), NoMatch)


def test_interview_replies() -> None:
    assert interpret(LANGUAGE, reply("2")) == Outcome.answer("Rust")
    assert interpret(LANGUAGE, reply("python")) == Outcome.answer("Python")
    assert interpret(LANGUAGE, reply("3")) == TypeOther()
    assert interpret(LANGUAGE, reply(" other ")) == TypeOther()
    assert interpret(LANGUAGE, reply("Kotlin, please")) == Outcome.answer("Kotlin, please", other=True)
    assert interpret(LANGUAGE, reply("cancel")) == Outcome.answer("cancel", other=True)
    assert isinstance(interpret(LANGUAGE, reply("?!")), NoMatch)
    assert interpret(LANGUAGE, reply("Other"), typing_other=True) == Outcome.answer("Other", other=True)
    assert interpret(interview("Anything else?"), reply("no")) == Outcome.answer("no")
    assert "3. Other" in render_menu(LANGUAGE)


def test_sender_context_blocks() -> None:
    assert interpret(FRUIT, reply(sender_block(SENDER), "1")) == Outcome.answer("apple")
    assert isinstance(interpret(FRUIT, reply(sender_block(SENDER))), NoMatch), "metadata alone selects nothing"
    for bad in ("<sender_context>{oops</sender_context>", sender_block({**SENDER, "schema": "other.v2"}), sender_block([1])):
        assert isinstance(interpret(FRUIT, reply(bad, "1")), NoMatch), bad
    assert isinstance(interpret(FRUIT, reply("1", "2")), NoMatch), "conflicting answers"
    assert interpret(FRUIT, reply("1", "apple")) == Outcome.answer("apple"), "the same answer twice is no conflict"
    assert reply(sender_block(SENDER), "/agent").command == "/agent"
    assert reply("/agent", "/help").command is None


labels = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=12).map(str.strip).filter(
        lambda s: s and s not in ("cancel", "other")
    ),
    min_size=1,
    max_size=6,
    unique_by=str.casefold,
)


@given(labels, st.data())
def test_any_number_in_range_or_label_in_any_case_selects_and_others_wait(names: list[str], data: st.DataObject) -> None:
    menu = select("Pick", [Choice(f"v{i}", name) for i, name in enumerate(names)])
    index = data.draw(st.integers(0, len(names) - 1))
    assert interpret(menu, reply(str(index + 1))) == Outcome.answer(f"v{index}")
    typed = "".join(c.upper() if data.draw(st.booleans()) else c for c in names[index])
    assert interpret(menu, reply(f"  {typed}\t")) == Outcome.answer(f"v{index}")
    outside = data.draw(st.integers(len(names) + 1, 10**6) | st.integers(-5, 0))
    assert isinstance(interpret(menu, reply(str(outside))), NoMatch)


@given(st.text(min_size=1).filter(lambda s: s.strip()))
def test_a_text_question_answers_with_any_non_blank_text(answer: str) -> None:
    assert interpret(text("Say something"), reply(answer)) == Outcome.answer(answer.strip())


# forms


async def test_form_requests_follow_the_official_schema_and_keep_labels() -> None:
    schema = load_schema()
    for question in (FRUIT, text("Name?"), approval("Deploy?"), LANGUAGE, interview("Anything else?")):
        params = wire(form_request("ses_1", PendingQuestion(question, "ses_1", "call-1")))
        message = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": params}
        assert schema.check("agent", "request", "elicitation/create", message) is None
        assert "default" not in json.dumps(params)
    fields = wire(form_request("s", PendingQuestion(FRUIT, "s")))["requestedSchema"]["properties"]
    assert [o["title"] for o in fields["answer"]["oneOf"]] == ["Apple", "Pear", "Fig"]


@pytest.mark.parametrize(
    ("question", "response", "expected"),
    [
        (FRUIT, {"action": "accept", "content": {"answer": "fig"}}, Outcome.answer("fig")),
        (FRUIT, {"action": "decline"}, Outcome.declined()),
        (FRUIT, {"action": "cancel"}, Outcome.cancelled("the form was cancelled")),
        (FRUIT, {"action": "accept", "content": {"answer": "kiwi"}}, "Choose one of the listed options."),
        (FRUIT, {"action": "accept"}, "An answer is required."),
        (text("Name?"), {"action": "accept", "content": {"answer": " Ann "}}, Outcome.answer("Ann")),
        (LANGUAGE, {"action": "accept", "content": {"answer": "Rust", "other": "stray"}}, Outcome.answer("Rust")),
        (LANGUAGE, {"action": "accept", "content": {"answer": "_other", "other": "Go"}}, Outcome.answer("Go", other=True)),
        (LANGUAGE, {"action": "accept", "content": {"answer": "_other"}}, "Choosing Other needs your answer in the Other answer field."),
    ],
)
def test_form_answers(question: Any, response: dict[str, Any], expected: Outcome | str) -> None:
    assert form_outcome(question, response) == expected


def test_an_unknown_form_action_fails_the_question() -> None:
    assert form_outcome(FRUIT, {"action": "_later"}).status == "failed"
