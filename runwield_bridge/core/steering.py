"""Steering: input a client adds to the turn that is already running."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class SteeringResult:
    """What happened to steered input: injected into the running turn, or left for an ordinary prompt."""

    outcome: Literal["injected", "promptRequired"]
    reason: Literal["noRunningTurn", "questionPending"] | None = None


INJECTED = SteeringResult("injected")
NO_RUNNING_TURN = SteeringResult("promptRequired", "noRunningTurn")
QUESTION_PENDING = SteeringResult("promptRequired", "questionPending")


class SteeringRejected(ValueError):
    """Steered input that is not accepted at all (empty, or a slash command); nothing was delivered."""


class SteeringInbox:
    """Input waiting for the running turn's next model request; each input is taken exactly once."""

    def __init__(self) -> None:
        self._texts: list[str] = []

    def __bool__(self) -> bool:
        return bool(self._texts)

    def put(self, text: str) -> None:
        self._texts.append(text)

    def take(self) -> list[str]:
        texts, self._texts = self._texts, []
        return texts
