"""Tools the runtime offers to models: what a tool is, and what it gets to work with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .background import BackgroundWork, StartBackground
from .events import Event
from .interactions import Outcome, Question
from .models import ToolSpec
from .tool_gate import Permit

COMMAND_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where a tool runs; how it asks the user a question and for permission to change files or run a command
    (None where nobody can be asked: a change is then refused); where a long tool streams its output so far; what
    it shows the user once the call has ended (``shown``: a saved Plan, say), and how it shows something at once,
    while the call goes on (``show``: a review link it waits on; None where nobody is shown anything); and how it
    starts work that outlives the turn (None where it cannot)."""

    session_id: str
    cwd: Path
    ask: Callable[[Question], Awaitable[Outcome]] | None = None
    permit: Permit | None = None
    progress: Callable[[str], Awaitable[None]] | None = None
    command_timeout: float = COMMAND_TIMEOUT
    shown: list[Event] = field(default_factory=list)
    background: StartBackground | None = None
    show: Callable[[Event], Awaitable[None]] | None = None

    def start_background(self, work: BackgroundWork, title: str) -> str:
        """Run ``work`` after the turn ends; its result comes back as a new turn of the Session. Returns the task id."""
        if self.background is None:
            work.close()
            raise ToolError("background tasks cannot be started here")
        return self.background(work, title)


ToolFunc = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool: its spec for the model, its ACP kind, and its implementation."""

    spec: ToolSpec
    kind: str
    run: ToolFunc

    def title(self, arguments: dict[str, Any]) -> str:
        detail = next((arguments[key] for key in ("command", "path", "pattern", "query") if isinstance(arguments.get(key), str)), "")
        return f"{self.spec.name} {detail}".strip()


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model."""
