"""Structured questions a turn or command asks its user, and the broker that settles each exactly once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .metrics import WorkflowMetrics

QuestionKind = Literal["select", "text", "approval", "interview"]
Status = Literal["answered", "cancelled", "declined", "expired", "failed"]


@dataclass(frozen=True, slots=True)
class Choice:
    """One option of a question: the value the asker gets back and the label the user sees."""

    value: str
    label: str
    description: str = ""


YES_NO = (Choice("accept", "Yes"), Choice("decline", "No"))


@dataclass(frozen=True, slots=True)
class Question:
    """A question for the user. Build one with `select`, `text`, `approval` or `interview`."""

    kind: QuestionKind
    prompt: str
    choices: tuple[Choice, ...] = ()

    @property
    def options(self) -> tuple[Choice, ...]:
        """The choices offered: an approval without choices offers Yes (accept) and No (decline)."""
        return YES_NO if self.kind == "approval" and not self.choices else self.choices

    @property
    def free_text(self) -> bool:
        """Answered by typing: a text question, or an interview question without choices."""
        return not self.options and self.kind in ("text", "interview")


def _checked(kind: QuestionKind, prompt: str, choices: Sequence[Choice]) -> Question:
    values = [c.value for c in choices]
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate choice values in {values}")
    return Question(kind, prompt, tuple(choices))


def select(prompt: str, choices: Sequence[Choice]) -> Question:
    """A menu: the user picks one of the choices."""
    if not choices:
        raise ValueError("a select question needs at least one choice")
    return _checked("select", prompt, choices)


def text(prompt: str) -> Question:
    """A free-text question."""
    return Question("text", prompt)


def approval(prompt: str, choices: Sequence[Choice] = ()) -> Question:
    """A yes/no question (or a choice between the given approval options)."""
    return _checked("approval", prompt, choices)


def interview(prompt: str, choices: Sequence[Choice] = ()) -> Question:
    """One `user_interview` question: a choice list with an Other answer, or free text without choices."""
    return _checked("interview", prompt, choices)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a question settled. `value` is the chosen choice's value or the typed text."""

    status: Status
    value: str | None = None
    other: bool = False
    reason: str = ""

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    @classmethod
    def answer(cls, value: str, other: bool = False) -> Outcome:
        return cls("answered", value, other)

    @classmethod
    def cancelled(cls, reason: str = "") -> Outcome:
        return cls("cancelled", reason=reason)

    @classmethod
    def declined(cls) -> Outcome:
        return cls("declined")

    @classmethod
    def expired(cls) -> Outcome:
        return cls("expired")

    @classmethod
    def failed(cls, reason: str) -> Outcome:
        return cls("failed", reason=reason)


@dataclass(eq=False)
class PendingQuestion:
    """A question that has been asked and not yet settled."""

    question: Question
    session_id: str
    tool_call_id: str | None = None
    id: str = field(default_factory=lambda: f"q_{uuid.uuid4().hex[:16]}")
    _settled: asyncio.Future[Outcome] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def settled(self) -> Outcome | None:
        """The outcome, once settled."""
        return self._settled.result() if self._settled.done() else None

    def settle(self, outcome: Outcome) -> bool:
        """Settle the question; only the first call counts. Returns whether this call settled it."""
        if self._settled.done():
            return False
        self._settled.set_result(outcome)
        return True

    async def outcome(self) -> Outcome:
        return await asyncio.shield(self._settled)


class Presenter(Protocol):
    """Shows a question to the user."""

    async def present(self, pending: PendingQuestion) -> Outcome | None:
        """Return the outcome when the question was answered in place (a form); None when the
        answer arrives later through `PendingQuestion.settle` (a chat menu)."""


class InteractionBroker:
    """Holds each Session's pending question (one at a time) and settles it exactly once."""

    def __init__(self, timeout: float | None = None, metrics: WorkflowMetrics | None = None) -> None:
        self.timeout = timeout
        self.metrics = metrics or WorkflowMetrics(None)
        self._pending: dict[str, PendingQuestion] = {}

    def pending(self, session_id: str) -> PendingQuestion | None:
        return self._pending.get(session_id)

    async def ask(
        self, session_id: str, question: Question, presenter: Presenter, tool_call_id: str | None = None
    ) -> Outcome:
        """Ask and wait. Expiry, a failure to present and cancellation settle it; nothing answers by default."""
        if session_id in self._pending:
            raise RuntimeError(f"Session {session_id} already has a pending question")
        pending = PendingQuestion(question, session_id, tool_call_id)
        self._pending[session_id] = pending
        self.metrics.record(session_id, "question_asked", question=pending.id, kind=question.kind)
        try:
            outcome = await self._wait(pending, presenter)
        except asyncio.CancelledError:
            pending.settle(Outcome.cancelled("the turn was cancelled"))
            raise
        finally:
            del self._pending[session_id]
            status = pending.settled.status if pending.settled else None
            self.metrics.record(session_id, "question_settled", question=pending.id, status=status)
        return outcome

    async def _wait(self, pending: PendingQuestion, presenter: Presenter) -> Outcome:
        try:
            async with asyncio.timeout(self.timeout):
                shown = await presenter.present(pending)
                if shown is not None:
                    pending.settle(shown)
                return await pending.outcome()
        except TimeoutError:
            pending.settle(Outcome.expired())
        except Exception as exc:  # a presenter that breaks settles the question instead of hanging it
            pending.settle(Outcome.failed(f"the question could not be shown: {exc}"))
        return await pending.outcome()

