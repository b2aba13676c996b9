"""A choice with Other: RunWield's form and the bridge's reading of it are one definition; asked in chat as one question."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ElicitationSchema

from runwield_bridge.acp.forms import form_outcome, requested_schema
from runwield_bridge.acp.other_choice import NotAnAnswer, read_choice, recognise
from runwield_bridge.channels.types import ButtonPress, Capabilities, Conversation, Sender
from runwield_bridge.bridge.asking.pending import Answer, ChatQuestion, ChatQuestions
from runwield_bridge.bridge.asking.forms import run_form
from runwield_bridge.core.interactions import Choice, Outcome, Question, interview
from runwield_bridge.core.interview import run_interview
from runwield_bridge.core.tools import ToolContext
from tests.bridge_kit import RecordingChannel

HERE = Conversation("memory", "1")
ME = Sender("me", "me")
LANGUAGE = interview("Which language?", [Choice(o, o) for o in ("Python", "Rust", "Go")])
TERMINAL = Capabilities(max_message_length=10_000, buttons=False, edits=False)


def schema(raw: dict[str, Any]) -> ElicitationSchema:
    return ElicitationSchema.model_validate(raw)


def runwield_form(question: Any = LANGUAGE) -> ElicitationSchema:
    """What the Session Host sends for a question, as the bridge receives it."""
    return schema(requested_schema(question))


def test_the_session_hosts_interview_form_is_recognised_as_one_choice_with_other() -> None:
    form = recognise(runwield_form())
    assert form is not None
    assert [o.label for o in form.options] == ["Python", "Rust", "Go", "Other"]
    assert form.options[form.other].label == "Other" and form.listed == 3
    assert form_outcome(LANGUAGE, {"action": "accept", "content": form.content(1)}) == Outcome.answer("Rust")
    other = form_outcome(LANGUAGE, {"action": "accept", "content": form.content("Kotlin")})
    assert other == Outcome.answer("Kotlin", other=True)


def test_another_agents_form_of_exactly_that_shape_is_recognised() -> None:
    form = recognise(
        schema(
            {
                "type": "object",
                "properties": {"note": {"type": "string"}, "pick": {"type": "string", "enum": ["tea", "other", "coffee"]}},
                "required": ["pick"],
            }
        )
    )
    assert form is not None and (form.choice, form.text, form.other) == ("pick", "note", 1)
    assert form.content("mate") == {"pick": "other", "note": "mate"}
    assert form.content(2) == {"pick": "coffee"}


PICK = {"type": "string", "enum": ["tea", "coffee", "Other"]}


@pytest.mark.parametrize(
    "properties, required",
    [
        ({"pick": PICK, "note": {"type": "string"}, "extra": {"type": "string"}}, ["pick"]),  # a third field
        ({"pick": PICK, "note": {"type": "string"}}, ["pick", "note"]),  # the text is required
        ({"pick": PICK, "note": {"type": "string"}}, []),  # the choice is optional
        ({"pick": PICK, "note": {"type": "string", "format": "email"}}, ["pick"]),  # the text has a format
        ({"pick": PICK, "note": {"type": "integer"}}, ["pick"]),  # not text
        ({"pick": {"type": "string", "enum": ["tea", "coffee"]}, "note": {"type": "string"}}, ["pick"]),  # no Other
        ({"pick": {"type": "string", "enum": ["Other", "other "]}, "note": {"type": "string"}}, ["pick"]),  # two Others
        ({"pick": {"type": "string", "enum": ["Other"]}, "note": {"type": "string"}}, ["pick"]),  # nothing but Other
    ],
)
def test_forms_of_any_other_shape_are_not_taken_for_a_choice_with_other(properties: dict, required: list[str]) -> None:
    assert recognise(schema({"type": "object", "properties": properties, "required": required})) is None


def test_reply_rules_a_number_or_unique_label_picks_other_meaningful_text_is_other() -> None:
    options = recognise(runwield_form()).options  # type: ignore[union-attr]
    assert [read_choice(options, reply) for reply in ("2", "rust", "GO", "4", "other", "5", "only on CI", "cancel")] == [
        1, 1, 2, 3, 3, "5", "only on CI", "cancel"
    ]
    with pytest.raises(NotAnAnswer, match="no answer"):
        read_choice(options, "?!")


async def test_an_other_option_from_the_model_is_not_offered_twice(tmp_path: Path) -> None:
    asked: list[Question] = []

    async def ask(question: Question) -> Outcome:
        asked.append(question)
        return Outcome.answer("Kotlin", other=True)

    arguments = {"questions": [{"question": "Which language?", "options": ["Python", "Rust", "other"]}]}
    result = json.loads(await run_interview(arguments, ToolContext("s", tmp_path, ask)))
    assert [c.label for c in asked[0].options] == ["Python", "Rust"], "Other is always offered, once"
    assert recognise(runwield_form(asked[0])) is not None, "so a chat still asks it as one question"
    assert result["answers"] == [{"question": "Which language?", "type": "other", "answer": "Kotlin"}]


class Chat:
    """The bridge's asking of one form in a conversation, without a platform."""

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        self.channel = RecordingChannel(capabilities)
        self.interactions = ChatQuestions()

    def ask_form(self, form: ElicitationSchema, message: str = "Which language?") -> asyncio.Task[dict[str, Any]]:
        async def ask(question: ChatQuestion, timeout: float) -> Answer:
            return await self.interactions.ask(self.channel, HERE, question, timeout)

        return asyncio.create_task(run_form(message, form, ask, 5))

    async def asked(self, text: str) -> tuple[str, list[str]]:
        """The latest question showing ``text``, and its buttons' labels."""
        await self.channel.wait_for(text)
        said, buttons = [m for m in self.channel.messages.values() if text in m[0]][-1]
        return said, [b.label for b in buttons]

    def press(self, label: str) -> str:
        [(_, buttons)] = [m for m in self.channel.messages.values() if any(b.label == label for b in m[1])]
        [button] = [b for b in buttons if b.label == label]
        return self.interactions.press(self.channel, ButtonPress(HERE, ME, str(button.data)))

    def type(self, text: str) -> str | None:
        return self.interactions.offer_text(HERE, text, ME)


async def test_a_choice_with_other_is_one_question_with_buttons_and_a_listed_choice_answers_at_once() -> None:
    chat = Chat()
    result = chat.ask_form(runwield_form())
    _, buttons = await chat.asked("Which language?")
    assert buttons == ["Python", "Rust", "Go", "Other", "Cancel"]
    assert chat.press("Rust") == "Answer recorded."
    assert await result == {"action": "accept", "content": {"answer": "Rust"}}
    assert len([kind for kind, _ in chat.channel.log if kind == "send"]) == 1, "no question about the Other text"


async def test_typed_text_that_names_no_option_is_the_other_answer() -> None:
    chat = Chat()
    result = chat.ask_form(runwield_form())
    await chat.asked("Which language?")
    assert chat.type("only on CI") is None
    assert await result == {"action": "accept", "content": {"answer": "_other", "other": "only on CI"}}
    assert chat.channel.texts() == ["❓ Which language?\n\n→ only on CI (by me)"], "the answer is shown as typed"


async def test_a_bare_other_asks_for_its_text_once_and_takes_the_next_reply_whatever_it_is() -> None:
    chat = Chat()
    result = chat.ask_form(runwield_form())
    await chat.asked("Which language?")
    chat.press("Other")
    said, buttons = await chat.asked("Type your own answer to: Which language?")
    assert buttons == ["Cancel"]
    assert chat.type("2") is None, "a number is the text now, not an option"
    assert await result == {"action": "accept", "content": {"answer": "_other", "other": "2"}}
    assert sum("Type your own answer" in text for text in chat.channel.texts()) == 1


async def test_on_a_terminal_the_choice_is_a_numbered_menu_and_other_by_number_asks_once() -> None:
    chat = Chat(TERMINAL)
    result = chat.ask_form(runwield_form())
    said, buttons = await chat.asked("Which language?")
    assert buttons == [] and "1. Python\n2. Rust\n3. Go\n4. Other" in said
    assert "Other answer" not in said
    assert "did not answer" in (chat.type("...") or ""), "no letter or digit: no answer, the question waits"
    assert chat.type("4") is None
    await chat.asked("Type your own answer to")
    assert chat.type("Zig") is None
    assert await result == {"action": "accept", "content": {"answer": "_other", "other": "Zig"}}


async def test_more_than_four_options_are_a_numbered_menu_where_buttons_exist() -> None:
    chat = Chat()
    many = interview("Which language?", [Choice(o, o) for o in ("Python", "Rust", "Go", "C", "Zig")])
    result = chat.ask_form(runwield_form(many))
    said, buttons = await chat.asked("Which language?")
    assert buttons == ["Cancel"] and "5. Zig\n6. Other" in said
    assert chat.type("zig") is None
    assert await result == {"action": "accept", "content": {"answer": "Zig"}}


async def test_a_form_with_unrelated_optional_fields_is_asked_as_a_form_not_as_a_choice_with_other() -> None:
    chat = Chat()
    form = schema(
        {
            "type": "object",
            "properties": {"pick": PICK, "note": {"type": "string", "title": "Note"}, "cups": {"type": "integer", "title": "Cups"}},
            "required": ["pick"],
        }
    )
    result = chat.ask_form(form, "Your order")
    await chat.asked("1/3. pick")
    assert chat.type("2") is None
    said, _ = await chat.asked("2/3. Note (optional; reply - to skip)")
    assert "3/3. Cups" in said, "the two text fields are one message"
    assert chat.type("-") == "Noted. Next: 3. Cups"
    assert chat.type("2") is None
    assert await result == {"action": "accept", "content": {"pick": "coffee", "cups": 2}}
