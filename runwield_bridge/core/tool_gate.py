"""Asking before a tool changes files or runs a command: the configured rules, the Session's standing grants,
else the person (Allow once / Always for this Session / Reject). Nothing is allowed by default."""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from .interactions import Choice, Outcome, Question, approval
from .project_paths import path_pattern

if TYPE_CHECKING:
    from .store.sessions import SessionRepository

ChangeKind = Literal["command", "write"]
ALLOW_ONCE = Choice("once", "Allow once")
ALWAYS = Choice("always", "Always for this Session")
REJECT = Choice("reject", "Reject")
SHELL_OPERATORS = (";", "&", "|", "`", "$(", ">", "<", "\n")
"""A command line with one of these is never allowed by a pattern: ``pytest *`` must not let ``pytest; rm -rf ~`` through."""
GRANT_ENTRY = "tool_grant"
"""The transcript entry that keeps an "Always for this Session" answer (replay and the model's history skip it)."""


@dataclass(frozen=True, slots=True)
class Change:
    """What a tool wants to do: run ``target`` (a command line), or write ``target`` (a project-relative path)."""

    kind: ChangeKind
    target: str

    @property
    def grant(self) -> str:
        """The key an "Always for this Session" answer is kept under: this exact command, or this file."""
        return f"{self.kind}:{self.target}"

    def question(self) -> Question:
        prompt = f"Run `{self.target}`?" if self.kind == "command" else f"Change the file `{self.target}`?"
        return approval(prompt, (ALLOW_ONCE, ALWAYS, REJECT))


@dataclass(frozen=True, slots=True)
class ToolRules:
    """``[tools]``: shell-style patterns on command lines, and on project-relative paths a tool may write."""

    commands: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def allows(self, change: Change) -> bool:
        if change.kind == "command":
            line = " ".join(change.target.split())
            plain = not any(op in change.target for op in SHELL_OPERATORS)
            return plain and any(fnmatch.fnmatchcase(line, pattern) for pattern in self.commands)
        return any(path_pattern(pattern).fullmatch(change.target) for pattern in self.writes)


WORKTREE_RULES = ToolRules(writes=("**",))
"""A turn carrying out an approved Plan may write anywhere in RunWield's own worktree without asking; commands still ask."""


class GrantBook(Protocol):
    """Where a Session's "Always for this Session" answers are kept, so they outlive a restart."""

    async def granted(self, session_id: str, key: str) -> bool: ...

    async def grant(self, session_id: str, key: str) -> None: ...


Ask = Callable[[Question, str | None], Awaitable[Outcome]]
"""Ask the user a question (for the tool call with this id, if any); the outcome may be expired or declined."""
Permit = Callable[[Change], Awaitable[str | None]]
"""Asks whether a change may go ahead: None when it may, else why not (in words for the model)."""
TurnPermit = Callable[[Change, str | None], Awaitable[str | None]]
"""A turn's ``Permit``, for the tool call with this id (the question, if one is asked, belongs to it)."""


class ToolGate:
    """Decides whether a change may go ahead for a Session."""

    def __init__(self, rules: ToolRules, grants: GrantBook) -> None:
        self.rules = rules
        self.grants = grants

    def permit(self, session_id: str, ask: Ask | None, extra: ToolRules | None = None) -> TurnPermit:
        """The turn's ``permit``: ``extra`` rules (a Plan's worktree allows writes) join the configured ones."""

        async def permit(change: Change, call_id: str | None) -> str | None:
            if self.rules.allows(change) or (extra is not None and extra.allows(change)):
                return None
            if await self.grants.granted(session_id, change.grant):
                return None
            if ask is None:
                return "refused: nobody can be asked for permission here"
            outcome = await ask(change.question(), call_id)
            if outcome.answered and outcome.value == ALWAYS.value:
                await self.grants.grant(session_id, change.grant)
                return None
            if outcome.answered and outcome.value == ALLOW_ONCE.value:
                return None
            if outcome.answered:
                return "refused: the user rejected it"
            return f"refused: the question was {outcome.status}, which counts as a rejection"

        return permit


class TranscriptGrants:
    """Grants kept as entries of the Session's transcript. Grants are never taken back, so one already seen
    is answered from memory; the transcript is read again only for a key not seen yet (another process may have added it)."""

    def __init__(self, sessions: SessionRepository) -> None:
        self.sessions = sessions
        self.seen: dict[str, set[str]] = {}

    async def granted(self, session_id: str, key: str) -> bool:
        seen = self.seen.setdefault(session_id, set())
        if key not in seen:
            seen.update(e.text for e in await self.sessions.transcript(session_id) if e.kind == GRANT_ENTRY)
        return key in seen

    async def grant(self, session_id: str, key: str) -> None:
        await self.sessions.append_many(session_id, [(GRANT_ENTRY, key, {})])
        self.seen.setdefault(session_id, set()).add(key)
