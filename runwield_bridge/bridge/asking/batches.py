"""Several fields of a form in one chat message: a numbered block, answered one per line or one message per field.

A message's non-blank lines answer the fields still open, in order (one line: the next field; the last open field
takes the whole message, so a text may run over several lines). A line that does not fit names its field, and
nothing in that message is taken; a message that answers only some fields is noted, and the next one goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .pending import InvalidAnswer, NeedMore

MAX_BATCH = 3
"""Fields asked in one message at most."""
HINT = "Reply with one answer per line, in this order, or one message per answer."


class Asked(Protocol):
    """A form field as a batch shows it."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...


@dataclass
class Batch:
    """Up to three fields asked together, and the answers taken so far."""

    fields: Sequence[Any]
    first: int
    """The number the first field has in the whole form."""
    parse: Callable[[Any, str], Any]
    """One field's typed answer as its value (raising InvalidAnswer)."""
    show: Callable[[Any, Any], str]
    """One field's value as the person chose it."""
    answers: dict[str, Any] = field(default_factory=dict)

    def take(self, text: str) -> dict[str, Any]:
        """Every field's value once all are answered; raises NeedMore (noted, the next field named) or InvalidAnswer."""
        waiting = self.fields[len(self.answers) :]
        lines = [line for line in text.splitlines() if line.strip()]
        if len(waiting) == 1 or not lines:
            lines = [text]
        if len(lines) > len(waiting):
            raise InvalidAnswer(f"That is {len(lines)} answers, and {len(waiting)} are still open: one per line, please.")
        taken: dict[str, Any] = {}
        for number, (asked, line) in enumerate(zip(waiting, lines), self.first + len(self.answers)):
            try:
                taken[asked.name] = self.parse(asked, line)
            except InvalidAnswer as exc:
                raise InvalidAnswer(f"{number}. {asked.title}: {exc} Nothing in that message was taken.") from None
        self.answers.update(taken)
        if len(self.answers) < len(self.fields):
            number = self.first + len(self.answers)
            raise NeedMore(f"Noted. Next: {number}. {self.fields[len(self.answers)].title}")
        return dict(self.answers)

    def label(self, values: dict[str, Any]) -> str:
        return "; ".join(self.show(asked, values[asked.name]) for asked in self.fields)


def groups(fields: Sequence[Any], alone: Callable[[Any], bool]) -> list[list[Any]]:
    """The fields in the messages that ask them: each field for which ``alone`` holds by itself (buttons, a secret),
    the others in runs of up to three."""
    out: list[list[Any]] = []
    for asked in fields:
        if alone(asked) or not out or len(out[-1]) >= MAX_BATCH or alone(out[-1][0]):
            out.append([asked])
        else:
            out[-1].append(asked)
    return out
