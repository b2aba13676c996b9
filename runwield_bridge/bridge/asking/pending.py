"""Questions put to the people in a conversation: answered by a button or the next message, else expired.

Nothing here answers on anyone's behalf: a question ends answered by an allowed person, declined
by one, expired, or cancelled (``/cancel``, or the turn ended).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ...channels.contract import Channel
from ...channels.types import Button, ButtonPress, Conversation, MessageRef, Sender
from ..delivery import deliver
from ...channels.unfinished import Keeper, MemoryMessageLog, MessageLog

log = logging.getLogger(__name__)
PRESS_PREFIX = "wld"
DECLINE = "d"
NOT_OPEN = "This question is no longer open."


class InvalidAnswer(ValueError):
    """A typed answer that does not fit; the message says what would."""


class ChatOutcome(Enum):
    ANSWERED = "answered"
    DECLINED = "declined"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Answer:
    """How a question ended; ``value`` is the chosen option's index or the parsed typed answer."""

    outcome: ChatOutcome
    value: Any = None
    by: Sender | None = None
    label: str = ""


@dataclass(frozen=True)
class ChatQuestion:
    """What to ask and which answers count."""

    text: str
    options: Sequence[str] = ()
    options_as_buttons: bool = True
    parse: Callable[[str], Any] | None = None
    """Turns a typed answer into a value (raising InvalidAnswer); without it, typing picks an option."""
    label_of: Callable[[Any], str] = str
    """How a parsed answer is shown once the question is settled."""
    typed_with_buttons: bool = True
    """Whether typed answers count where buttons are shown (permissions: only a click counts)."""
    decline: str | None = None
    hint: str = ""
    expired_text: str = "⌛ No answer in time; the question was withdrawn."
    cancelled_text: str = "⏹ Cancelled."


@dataclass(eq=False)
class _Pending:
    token: str
    channel: Channel
    conversation: Conversation
    question: ChatQuestion
    buttons: bool
    future: asyncio.Future[Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    message: MessageRef | None = None

    def asked_in(self, channel: Channel, conversation: Conversation) -> bool:
        return self.channel is channel and self.conversation.key == conversation.key

    @property
    def takes_text(self) -> bool:
        return not self.buttons or self.question.typed_with_buttons

    def settle(self, answer: Answer) -> bool:
        if self.future.done():
            return False
        self.future.set_result(answer)
        return True


class ChatQuestions:
    """Open questions, found by button token or by conversation (the oldest one claims typed text)."""

    def __init__(self, messages: MessageLog | None = None, instance: str | None = None) -> None:
        self._by_token: dict[str, _Pending] = {}
        self._by_conversation: dict[str, list[_Pending]] = {}
        self.messages = messages or MemoryMessageLog()
        """Where open questions' messages are noted, so a bridge starting after a crash can mark them expired."""
        self.instance = instance
        """The ``wld bridge`` instance asking (None where only one runs)."""
        self.watch: Callable[[Conversation, bool], None] | None = None
        """Told of each question opened in a conversation (True), and when its last open one ends (False)."""

    async def ask(self, channel: Channel, conversation: Conversation, question: ChatQuestion, timeout: float) -> Answer:
        """Show the question and wait for its answer, at most ``timeout`` seconds."""
        buttons = channel.capabilities.buttons and bool(
            (question.options and question.options_as_buttons) or question.decline
        )
        pending = _Pending(self._new_token(), channel, conversation, question, buttons)
        self._by_token[pending.token] = pending
        self._by_conversation.setdefault(conversation.key, []).append(pending)
        if self.watch is not None:
            self.watch(conversation, True)
        keeper: Keeper | None = None
        try:
            shown = _buttons(pending)
            pending.message = await deliver(channel, conversation, render(question, buttons), shown)
            if shown:
                keeper = Keeper(self.messages, channel.name, "question", self.instance)
                await keeper.kept(pending.message, render(question, buttons))
            try:
                answer = await asyncio.wait_for(asyncio.shield(pending.future), timeout)
            except TimeoutError:
                pending.settle(Answer(ChatOutcome.EXPIRED))
                answer = pending.future.result()
        except asyncio.CancelledError:
            pending.settle(Answer(ChatOutcome.CANCELLED))
            raise
        finally:
            self._forget(pending)
            if pending.message is not None and pending.future.done():
                await _show_outcome(pending, pending.future.result())
            if keeper is not None and pending.message is not None:
                await keeper.done(pending.message)
        return answer

    def press(self, channel: Channel, press: ButtonPress) -> str:
        """Answer by button; returns what the presser is told.

        A press counts only in the conversation that asked: the same button data sent from any
        other conversation (or channel) finds no open question, and the presser learns nothing more.
        """
        data, sender = press.data, press.sender
        token, _, choice = data.removeprefix(f"{PRESS_PREFIX}:").partition(":")
        pending = self._by_token.get(token)
        if pending is None or not data.startswith(f"{PRESS_PREFIX}:") or not pending.asked_in(channel, press.conversation):
            return NOT_OPEN
        if choice == DECLINE:
            answer = Answer(ChatOutcome.DECLINED, by=sender, label=pending.question.decline or "Declined")
        elif choice.isdigit() and int(choice) < len(pending.question.options):
            answer = Answer(ChatOutcome.ANSWERED, int(choice), sender, pending.question.options[int(choice)])
        else:
            return "That button does not belong to this question."
        return "Answer recorded." if pending.settle(answer) else "This question was already answered."

    def has_open(self, conversation: Conversation) -> bool:
        return bool(self._by_conversation.get(conversation.key))

    def offer_text(self, conversation: Conversation, text: str, sender: Sender) -> str | None:
        """Give a typed message to the oldest open question here; returns a correction to send, if any.

        Call only when ``has_open``: an open question claims the next message, answer or not.
        """
        pendings = self._by_conversation.get(conversation.key, [])
        pending = next((p for p in pendings if p.takes_text), None)
        if pending is None:
            return "Please answer the question above with its buttons, or send /cancel."
        question = pending.question
        try:
            if question.parse is not None:
                value = question.parse(text)
                answer = Answer(ChatOutcome.ANSWERED, value, sender, question.label_of(value))
            else:
                index = choose(question.options, text)
                answer = Answer(ChatOutcome.ANSWERED, index, sender, question.options[index])
        except InvalidAnswer as exc:
            return f"{exc} (Or send /cancel.)"
        pending.settle(answer)
        return None

    def cancel(self, conversation: Conversation) -> int:
        """Cancel every open question in the conversation; returns how many there were."""
        pendings = list(self._by_conversation.get(conversation.key, ()))
        return sum(p.settle(Answer(ChatOutcome.CANCELLED)) for p in pendings)

    def _new_token(self) -> str:
        while (token := secrets.token_hex(4)) in self._by_token:
            pass
        return token

    def _forget(self, pending: _Pending) -> None:
        self._by_token.pop(pending.token, None)
        queue = self._by_conversation.get(pending.conversation.key, [])
        if pending in queue:
            queue.remove(pending)
        if not queue and self._by_conversation.pop(pending.conversation.key, None) is not None and self.watch is not None:
            self.watch(pending.conversation, False)


def choose(options: Sequence[str], text: str) -> int:
    """The option a typed answer picks: its number, or its label (any case)."""
    answer = text.strip()
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return int(answer) - 1
    for index, label in enumerate(options):
        if answer.casefold() == label.casefold():
            return index
    raise InvalidAnswer(f"Please reply with a number from 1 to {len(options)}.")


def render(question: ChatQuestion, buttons: bool, hint: bool = True) -> str:
    """The question's text; options are numbered in the text where they are not buttons."""
    lines = [question.text]
    if question.options and not (buttons and question.options_as_buttons):
        lines.append("")
        lines.extend(f"{number}. {label}" for number, label in enumerate(question.options, 1))
    hint_text = question.hint or (_default_hint(question) if not buttons or question.parse else "")
    if hint_text and question.decline and not buttons:
        hint_text += " Send /cancel to stop."  # where the Cancel button cannot be shown, the one way to say no
    if hint and hint_text:
        lines.extend(["", hint_text])
    return "\n".join(lines)


def _default_hint(question: ChatQuestion) -> str:
    if question.options and question.parse is None:
        return "Reply with a number."
    return "Reply with your answer."


def _buttons(pending: _Pending) -> list[Button]:
    if not pending.buttons:
        return []
    question = pending.question
    buttons = []
    if question.options_as_buttons:
        buttons = [Button(label, f"{PRESS_PREFIX}:{pending.token}:{i}") for i, label in enumerate(question.options)]
    if question.decline:
        buttons.append(Button(question.decline, f"{PRESS_PREFIX}:{pending.token}:{DECLINE}"))
    return buttons


def outcome_line(question: ChatQuestion, answer: Answer) -> str:
    if answer.outcome in (ChatOutcome.ANSWERED, ChatOutcome.DECLINED):
        by = f" (by {answer.by.display_name or answer.by.name})" if answer.by else ""
        return f"→ {answer.label}{by}"
    if answer.outcome is ChatOutcome.EXPIRED:
        return question.expired_text
    return question.cancelled_text


async def _show_outcome(pending: _Pending, answer: Answer) -> None:
    """Replace the buttons with what happened (or say it in a new message where edits are impossible)."""
    line = outcome_line(pending.question, answer)
    channel = pending.channel
    try:
        if channel.capabilities.edits and pending.message is not None:
            await channel.edit(pending.message, f"{render(pending.question, pending.buttons, hint=False)}\n\n{line}")
        else:
            await channel.send(pending.conversation, line)
    except Exception as exc:  # the outcome stands even if it cannot be shown
        log.warning("could not show the outcome of a question in %s: %s", pending.conversation.key, exc)
