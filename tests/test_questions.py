"""Forms in chat: which become buttons, how typed answers are read, what is refused and why."""

from __future__ import annotations

import asyncio

import pytest
from acp.schema import ElicitationSchema

from runwield_bridge.channels.types import ButtonPress, Capabilities, Conversation, Sender
from runwield_bridge.bridge.asking.pending import Answer, ChatOutcome, ChatQuestion, ChatQuestions, InvalidAnswer
from runwield_bridge.bridge.asking.forms import Unsupported, form_fields, parse_request, parse_value, run_form, secret_names, single_choice
from tests.bridge_kit import RecordingChannel

HERE = Conversation("memory", "1")
ME = Sender("me", "me")


def schema(properties: dict, required: list[str] | None = None) -> ElicitationSchema:
    return ElicitationSchema.model_validate({"type": "object", "properties": properties, "required": required or []})


def test_a_single_choice_of_two_to_four_options_is_for_buttons() -> None:
    assert single_choice(form_fields(schema({"c": {"type": "string", "enum": ["a", "b"]}})))
    assert single_choice(form_fields(schema({"ok": {"type": "boolean"}})))
    assert not single_choice(form_fields(schema({"c": {"type": "string", "enum": list("abcde")}})))
    assert not single_choice(form_fields(schema({"c": {"type": "string", "enum": ["a", "b"]}, "d": {"type": "string"}})))


def test_typed_answers_are_checked_against_the_schema() -> None:
    [name, age, tags, when] = form_fields(
        schema(
            {
                "name": {"type": "string", "minLength": 2, "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
                "tags": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]}, "maxItems": 2},
                "when": {"type": "string", "format": "date"},
            },
            ["name", "age"],
        )
    )
    assert parse_value(name, " Ann ") == "Ann"
    assert parse_value(age, "41") == 41
    assert parse_value(tags, "2, 1") == ["y", "x"]
    assert parse_value(when, "2026-11-30") == "2026-11-30"
    assert parse_value(when, "-") == "-", "an optional field can be skipped"
    for field, bad in [(name, "A"), (name, "Annabel"), (age, "old"), (age, "200"), (tags, "3"), (when, "tomorrow"), (name, "-")]:
        with pytest.raises(InvalidAnswer):
            parse_value(field, bad)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"sessionId": "s", "mode": "telepathy", "message": "?"}, "mode 'telepathy'"),
        ({"sessionId": "s", "mode": "form", "message": "?", "requestedSchema": "nope"}, "malformed"),
        ({"sessionId": "s", "mode": "url", "message": "?"}, "malformed"),
    ],
)
def test_unsupported_and_malformed_requests_are_refused_with_a_reason(params: dict, reason: str) -> None:
    with pytest.raises(Unsupported, match=reason):
        parse_request(params)


def test_fields_a_chat_cannot_ask_for_are_refused() -> None:
    with pytest.raises(Unsupported, match="cannot ask"):
        form_fields(schema({"blob": {"type": "_binary"}}))
    with pytest.raises(Unsupported, match="not defined"):
        form_fields(schema({}, ["ghost"]))


async def test_a_form_is_answered_by_the_next_messages_and_can_be_declined() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=1000, buttons=False, edits=False))
    interactions = ChatQuestions()

    async def ask(question: ChatQuestion, timeout: float) -> Answer:
        return await interactions.ask(channel, HERE, question, timeout)

    form = schema({"name": {"type": "string"}, "colour": {"type": "string", "enum": ["red", "blue"]}}, ["name", "colour"])
    result = asyncio.create_task(run_form("Tell me", form, ask, 5))
    await channel.wait_for("1/2. name")
    assert interactions.offer_text(HERE, "Bo", ME) is None
    await channel.wait_for("2/2. colour")
    assert "Please reply with a number" in (interactions.offer_text(HERE, "purple", ME) or "")
    assert interactions.offer_text(HERE, "2", ME) is None
    assert await result == {"action": "accept", "content": {"name": "Bo", "colour": "blue"}}
    assert "→ blue (by me)" in channel.texts(), "a chosen number is shown as its option"

    cancelled = asyncio.create_task(run_form("Again", form, ask, 5))
    await channel.wait_for("Again")
    assert interactions.cancel(HERE) == 1
    assert await cancelled == {"action": "cancel"}


async def test_an_unanswered_question_expires_and_a_stale_button_says_so() -> None:
    channel = RecordingChannel()
    interactions = ChatQuestions()
    answer = await interactions.ask(channel, HERE, ChatQuestion("Sure?", options=("Yes", "No")), timeout=0.05)
    assert answer.outcome is ChatOutcome.EXPIRED
    [(_, buttons)] = list(channel.messages.values())[:1]
    assert buttons == (), "the buttons are taken away once the question is over"
    assert "No answer in time" in channel.texts()[0]
    assert interactions.press(channel, ButtonPress(HERE, ME, "wld:deadbeef:0")) == "This question is no longer open."


@pytest.mark.parametrize(
    ("choices", "buttons", "hint"),
    [
        (["Execute", "Not now"], ["Execute", "Not now"], ""),  # the question's own "no" is the one way
        (["Publish", "Hold"], ["Publish", "Hold", "Cancel"], ""),  # else one Cancel button (it declines)
        (list("abcde") + ["Cancel"], [], "Reply with a number."),  # a numbered menu with its own Cancel: no button, no /cancel
        (list("abcde"), ["Cancel"], "Reply with a number."),
    ],
)
async def test_each_question_has_one_visible_way_to_say_no(choices: list[str], buttons: list[str], hint: str) -> None:
    channel = RecordingChannel(Capabilities(max_message_length=1000, url_buttons=True))
    interactions = ChatQuestions()
    form = schema({"answer": {"type": "string", "title": "Choice", "enum": choices}}, ["answer"])
    result = asyncio.create_task(run_form("What now?", form, lambda q, t: interactions.ask(channel, HERE, q, t), 5))
    await channel.wait_for("What now?")
    [(text, shown)] = list(channel.messages.values())
    assert [b.label for b in shown] == buttons
    assert "Decline" not in text and "/cancel" not in text and "Choice" not in text, text
    assert hint in text
    interactions.cancel(HERE)
    await result


def test_a_string_field_is_secret_when_write_only_meta_secret_or_a_password() -> None:
    properties = {
        "a": {"type": "string", "writeOnly": True},
        "b": {"type": "string", "_meta": {"secret": True}},
        "c": {"type": "string", "format": "password"},
        "d": {"type": "string"},
        "e": {"type": "integer", "writeOnly": True},
    }
    params = {"mode": "form", "requestedSchema": {"type": "object", "properties": properties}}
    assert secret_names(params) == {"a", "b", "c"}
    fields = form_fields(schema({name: {k: v for k, v in p.items() if k != "writeOnly"} for name, p in properties.items()}), secret_names(params))
    assert [f.name for f in fields if f.secret] == ["a", "b", "c"]
    assert secret_names({"mode": "form", "requestedSchema": "nope"}) == set()


async def test_three_fields_are_one_message_answered_one_per_line_or_one_message_each() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=1000))
    interactions = ChatQuestions()

    async def ask(question: ChatQuestion, timeout: float) -> Answer:
        return await interactions.ask(channel, HERE, question, timeout)

    form = schema({"name": {"type": "string"}, "age": {"type": "integer"}, "note": {"type": "string"}, "city": {"type": "string"}}, ["name", "age"])
    result = asyncio.create_task(run_form("Tell me", form, ask, 5))
    first = await channel.wait_for("1/4. name")
    assert "2/4. age" in first and "3/4. note (optional; reply - to skip)" in first and "4/4" not in first
    assert interactions.offer_text(HERE, "Bo\n7\n-\nRome", ME) == "That is 4 answers, and 3 are still open: one per line, please. (Or send /cancel.)"
    assert interactions.offer_text(HERE, "Bo\nseven", ME) == "2. age: Please reply with a whole number. Nothing in that message was taken. (Or send /cancel.)"
    assert interactions.offer_text(HERE, "Bo", ME) == "Noted. Next: 2. age"
    assert interactions.offer_text(HERE, "7\n-", ME) is None
    await channel.wait_for("4/4. city")
    assert interactions.offer_text(HERE, "Rome", ME) is None
    assert await result == {"action": "accept", "content": {"name": "Bo", "age": 7, "city": "Rome"}}
    assert "→ Bo; 7; (skipped) (by me)" in channel.texts()[0]


async def test_cancel_typed_to_a_choice_without_such_an_option_cancels_the_form() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=1000, buttons=False))
    interactions = ChatQuestions()
    form = schema({"size": {"type": "string", "enum": ["S", "M", "L"]}, "note": {"type": "string"}}, ["size"])
    result = asyncio.create_task(run_form("Order", form, lambda q, t: interactions.ask(channel, HERE, q, t), 5))
    await channel.wait_for("1/2. size")
    assert "ambiguous" not in (interactions.offer_text(HERE, "s", ME) or "")
    await channel.wait_for("2/2. note")
    interactions.cancel(HERE)
    assert await result == {"action": "cancel"}
    again = asyncio.create_task(run_form("Order", form, lambda q, t: interactions.ask(channel, HERE, q, t), 5))
    await channel.wait_for("Order")
    assert interactions.offer_text(HERE, "cancel", ME) is None
    assert await again == {"action": "cancel"}


async def test_where_the_chat_cannot_delete_a_secret_reply_the_warning_says_so_and_the_answer_is_never_shown() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=1000, buttons=False))  # like the terminal: no delete
    interactions = ChatQuestions()
    form = schema({"token": {"type": "string", "format": "password", "minLength": 8}}, ["token"])
    result = asyncio.create_task(run_form("Token?", form, lambda q, t: interactions.ask(channel, HERE, q, t), 5, frozenset({"token"})))
    asked = await channel.wait_for("Token?")
    assert "🔒 This answer is sent to the agent and not kept. This chat cannot delete messages: clear your reply yourself." in asked
    assert interactions.offer_text(HERE, "short", ME) == "Please write at least 8 characters. (Or send /cancel.)"
    assert interactions.offer_text(HERE, "s3cret-value", ME) is None
    assert await result == {"action": "accept", "content": {"token": "s3cret-value"}}
    assert "→ 🔒 sent (by me)" in channel.texts()[-1] and not [t for t in channel.texts() if "s3cret" in t or "short" in t]
