"""Questions put to the people in a conversation: answered by a button or the next message, else expired.

Nothing here answers on anyone's behalf: a question ends answered by an allowed person, declined
by one, expired, or cancelled (``/cancel``, or the turn ended).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ...channels.contract import Channel
from ...channels.types import Button, ButtonPress, Conversation, MessageRef, Sender
from ..delivery import deliver
from ...channels.unfinished import Keeper, MemoryMessageLog, MessageLog
from ...redaction import HOLD
from .secret_replies import SENT, delete_reply, hide, warning

log = logging.getLogger(__name__)
PRESS_PREFIX = "wld"
DECLINE = "d"
DONE = "done"
SKIP_ALL = "-"
"""What Done hands ``parse`` when nothing is chosen (an optional multi-select skipped; a required one refuses it)."""
NOT_OPEN = "This question is no longer open."


class InvalidAnswer(ValueError):
    """A typed answer that does not fit; the message says what would."""


class NeedMore(ValueError):
    """A typed answer that was taken, but the question wants more (the next fields of a batch); the message says what."""


class Withdrawn(ValueError):
    """A typed reply that cancels the question: ``cancel`` where no option is called that."""


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
    pressed_hint: str | None = None
    """The hint where the options are buttons, if not ``hint`` (which says how to type an answer)."""
    multi: bool = False
    """Options are toggle buttons with a Done button; Done hands the chosen numbers (``1, 3``) to ``parse``."""
    secret: bool = False
    """The reply is deleted from the chat where the platform allows it, never shown, and redacted from logs."""


@dataclass(eq=False)
class _Pending:
    token: str
    channel: Channel
    conversation: Conversation
    question: ChatQuestion
    buttons: bool
    future: asyncio.Future[Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    message: MessageRef | None = None
    chosen: list[int] = field(default_factory=list)
    """The options toggled on so far (a multi-select)."""
    drawing: asyncio.Lock = field(default_factory=asyncio.Lock)
    chores: set[asyncio.Task[None]] = field(default_factory=set)
    """Redrawing toggled buttons, deleting secret replies: done before the question's outcome is shown."""

    def later(self, chore: Awaitable[None]) -> None:
        task = asyncio.ensure_future(chore)
        self.chores.add(task)
        task.add_done_callback(self.chores.discard)

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
        if question.secret:
            question = replace(question, text=f"{question.text}\n\n{warning(channel)}")
            HOLD.hold()  # from before the question shows: the reply's update is logged before it is read
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
            try:
                await asyncio.gather(*pending.chores, return_exceptions=True)
                if pending.message is not None and pending.future.done():
                    await _show_outcome(pending, pending.future.result())
                if keeper is not None and pending.message is not None:
                    await keeper.done(pending.message)
            finally:
                if question.secret:
                    HOLD.release()
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
        elif pending.question.multi and (choice == DONE or choice.isdigit() and int(choice) < len(pending.question.options)):
            return self._toggle(pending, choice, sender)
        elif choice.isdigit() and int(choice) < len(pending.question.options):
            answer = Answer(ChatOutcome.ANSWERED, int(choice), sender, pending.question.options[int(choice)])
        else:
            return "That button does not belong to this question."
        return "Answer recorded." if pending.settle(answer) else "This question was already answered."

    def _toggle(self, pending: _Pending, choice: str, sender: Sender) -> str:
        """A multi-select's button: an option toggles (its buttons redrawn), Done answers with the options chosen."""
        question, chosen = pending.question, pending.chosen
        if choice == DONE:
            assert question.parse is not None
            numbers = ", ".join(str(index + 1) for index in sorted(chosen))
            try:
                value = question.parse(numbers or SKIP_ALL)
            except InvalidAnswer as exc:
                return str(exc)
            answer = Answer(ChatOutcome.ANSWERED, value, sender, question.label_of(value))
            return "Answer recorded." if pending.settle(answer) else "This question was already answered."
        index = int(choice)
        chosen.remove(index) if index in chosen else chosen.append(index)
        pending.later(_redraw(pending))
        picked = [question.options[i] for i in sorted(chosen)]
        return f"Chosen: {', '.join(picked)}" if picked else "Nothing chosen yet."

    def has_open(self, conversation: Conversation) -> bool:
        return bool(self._by_conversation.get(conversation.key))

    def offer_text(self, conversation: Conversation, text: str, sender: Sender, message_id: str | None = None) -> str | None:
        """Give a typed message to the oldest open question here; returns a correction to send, if any.

        Call only when ``has_open``: an open question claims the next message, answer or not. ``message_id``: the
        message's own id, so the reply to a secret question can be deleted from the chat.
        """
        pendings = self._by_conversation.get(conversation.key, [])
        pending = next((p for p in pendings if p.takes_text), None)
        if pending is None:
            return "Please answer the question above with its buttons, or send /cancel."
        question = pending.question
        if question.secret:
            hide(text)
            if message_id is not None:
                pending.later(delete_reply(pending.channel, MessageRef(conversation, message_id)))
        try:
            if question.parse is not None:
                value = question.parse(text)
                label = SENT if question.secret else question.label_of(value)
                answer = Answer(ChatOutcome.ANSWERED, value, sender, label)
            else:
                index = choose(question.options, text)
                answer = Answer(ChatOutcome.ANSWERED, index, sender, question.options[index])
        except Withdrawn:
            answer = Answer(ChatOutcome.CANCELLED, by=sender)
        except (InvalidAnswer, NeedMore) as exc:
            return str(exc) if isinstance(exc, NeedMore) else f"{exc} (Or send /cancel.)"
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
    pressed = buttons and question.options_as_buttons and question.pressed_hint is not None
    hint_text = (question.pressed_hint or "") if pressed else question.hint or (_default_hint(question) if not buttons or question.parse else "")
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
        buttons = [Button(_option_label(pending, i, label), f"{PRESS_PREFIX}:{pending.token}:{i}") for i, label in enumerate(question.options)]
    if question.multi and question.options_as_buttons:
        buttons.append(Button("Done", f"{PRESS_PREFIX}:{pending.token}:{DONE}"))
    if question.decline:
        buttons.append(Button(question.decline, f"{PRESS_PREFIX}:{pending.token}:{DECLINE}"))
    return buttons


def _option_label(pending: _Pending, index: int, label: str) -> str:
    """An option's button; a multi-select's shows whether it is chosen."""
    if not pending.question.multi:
        return label
    return f"{'☑' if index in pending.chosen else '☐'} {label}"


async def _redraw(pending: _Pending) -> None:
    """A multi-select's buttons as chosen now (one redraw at a time, each showing the latest choice)."""
    async with pending.drawing:
        if pending.message is None or pending.future.done():
            return
        try:
            await pending.channel.edit(pending.message, render(pending.question, pending.buttons), _buttons(pending))
        except Exception as exc:  # the choice stands; only its display lags
            log.warning("could not redraw a multi-select in %s: %s", pending.conversation.key, exc)


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
