"""Chat menus for clients without forms: a question as chat text, and the reply rules that answer it.

Select and approval: a number in range, or a unique exact label or value (trimmed, case-insensitive);
``cancel`` cancels only when no option matches it. Text: any non-blank text (``cancel`` is text).
Interview (the rules of ``other_choice``): a number or unique exact label picks that option, ``Other``
(or its number) asks for the text, and any other meaningful text is the Other answer. A standalone
``<sender_context>`` block of valid ``openab.sender.v1`` JSON is set aside; metadata alone, malformed
metadata, conflicting answers and attachments answer nothing. Whatever answers nothing leaves the
question waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.commands import parse_invocation
from ..core.interactions import Choice, Outcome, Question
from . import other_choice
from .other_choice import OTHER_LABEL, NotAnAnswer, match_option, read_choice
from .transport import ParseError, parse_json

SENDER_OPEN, SENDER_CLOSE = "<sender_context>", "</sender_context>"
SENDER_SCHEMA = "openab.sender.v1"
OTHER = Choice("other", OTHER_LABEL, "type your own answer")


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A prompt read as a reply: its text blocks (sender metadata set aside) and what else it carried."""

    texts: tuple[str, ...] = ()
    metadata: int = 0
    malformed: bool = False
    attachments: int = 0

    @property
    def command(self) -> str | None:
        """The slash command this message is, when it is one text block and nothing else but metadata."""
        if len(self.texts) == 1 and not (self.malformed or self.attachments) and parse_invocation(self.texts[0]):
            return self.texts[0].strip()
        return None


@dataclass(frozen=True, slots=True)
class NoMatch:
    """The reply answers nothing; the reason is shown with the repeated question."""

    reason: str


@dataclass(frozen=True, slots=True)
class TypeOther:
    """The user chose Other without saying what: ask once for the text."""


Decision = Outcome | NoMatch | TypeOther


def read_reply(blocks: Sequence[Any]) -> ChatReply:
    """Split prompt content blocks into reply text, sender metadata and attachments."""
    texts: list[str] = []
    metadata = attachments = 0
    malformed = False
    for block in blocks:
        if getattr(block, "type", None) != "text":
            attachments += 1
            continue
        stripped = block.text.strip()
        if not stripped.startswith(SENDER_OPEN):
            texts.append(block.text)
        elif is_sender_context(stripped):
            metadata += 1
        else:
            malformed = True
    return ChatReply(tuple(texts), metadata, malformed, attachments)


def is_sender_context(text: str) -> bool:
    """Whether a text block is exactly one ``<sender_context>`` element holding valid openab.sender.v1 JSON."""
    if not (text.startswith(SENDER_OPEN) and text.endswith(SENDER_CLOSE)):
        return False
    try:
        data = parse_json(text[len(SENDER_OPEN) : -len(SENDER_CLOSE)])
    except ParseError:
        return False
    return isinstance(data, dict) and data.get("schema") == SENDER_SCHEMA and isinstance(data.get("sender_id"), str)


def numbered(question: Question) -> tuple[Choice, ...]:
    """The numbered lines of a menu: the options, and Other last for a choice interview."""
    if question.kind == "interview" and question.options:
        return (*question.options, OTHER)
    return question.options


def reply_rule(question: Question) -> str:
    if question.free_text:
        return "Reply with your answer."
    count = len(numbered(question))
    if question.kind == "interview":
        return f"Reply with a number (1-{count}) or an option, or type your own answer."
    return f"Reply with a number (1-{count}) or an option's name, or `cancel`."


def render_menu(question: Question) -> str:
    """The question as chat text: the prompt, numbered choices and the reply rule."""
    lines = [question.prompt]
    for number, choice in enumerate(numbered(question), 1):
        lines.append(f"{number}. {choice.label}" + (f" — {choice.description}" if choice.description else ""))
    lines.append(reply_rule(question))
    return "\n".join(lines)


def did_not_match(question: Question, no_match: NoMatch) -> str:
    """The one message a reply that answers nothing gets: why, and the question again."""
    return f"That did not answer the question: {no_match.reason}. It is still waiting.\n\n{render_menu(question)}"


def other_prompt(question: Question) -> str:
    return other_choice.other_prompt(question.prompt)


def interpret(question: Question, reply: ChatReply, typing_other: bool = False) -> Decision:
    """What a chat reply does to a waiting question. ``typing_other``: the user chose Other and owes its text."""
    if reply.malformed:
        return NoMatch("the sender metadata in it is not valid openab.sender.v1")
    if reply.attachments:
        return NoMatch("attachments cannot answer it")
    texts = [t.strip() for t in reply.texts if t.strip()]
    if not texts:
        return NoMatch("there was no answer in it")
    if question.free_text or typing_other:
        return Outcome.answer("\n".join(texts), other=typing_other)
    decisions = list(dict.fromkeys(_choose(question, text) for text in texts))
    if len(decisions) > 1 and not all(isinstance(d, NoMatch) for d in decisions):
        return NoMatch("it holds conflicting answers")
    return decisions[0]


def _choose(question: Question, reply: str) -> Decision:
    """One trimmed, non-blank reply to a select, approval or choice interview."""
    options = question.options
    try:
        if question.kind == "interview":
            return _interview_choice(question, read_choice(numbered(question), reply))
        index = match_option(options, reply)
    except NotAnAnswer as exc:
        return NoMatch(str(exc))
    if index is not None:
        return Outcome.answer(options[index].value)
    if reply.casefold() == "cancel":
        return Outcome.cancelled("the user replied cancel")
    if parse_invocation(reply):
        return NoMatch("a command cannot run while this question waits")
    if reply.isascii() and reply.isdigit():
        return NoMatch(f"{reply} is not one of the numbers 1-{len(options)}")
    return NoMatch(f'"{reply}" does not match any option')


def _interview_choice(question: Question, picked: int | str) -> Decision:
    if isinstance(picked, str):
        return Outcome.answer(picked, other=True)
    if picked == len(question.options):
        return TypeOther()
    return Outcome.answer(question.options[picked].value)
