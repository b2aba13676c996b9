"""Slash commands: the registry of built-in and plugin commands, and the project's prompt templates and Skills.

Project commands are markdown files in the Session's project directory:

- ``.runwield/commands/NAME.md``: a prompt template; ``/NAME args`` sends its text to the model with
  ``$ARGUMENTS`` replaced by the arguments (appended when the template has no ``$ARGUMENTS``).
- ``.runwield/skills/NAME/SKILL.md``: a Skill; ``/NAME args`` asks the model to follow it for the arguments.

Both may start with a ``---`` front matter block of ``key: value`` lines (``description``, and for
templates ``argument-hint``; a Skill may set its ``name``). Built-in and plugin names and aliases win.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .events import Event, PlanLink, SessionSpawned
from .interactions import Outcome, Question
from .models import ModelInfo
from .records import SessionRecord

log = logging.getLogger(__name__)

COMMANDS_DIR = Path(".runwield") / "commands"
SKILLS_DIR = Path(".runwield") / "skills"
_NAME = r"[a-z0-9][a-z0-9_.:-]*"
_INVOCATION = re.compile(rf"/({_NAME})(?:\s+(.*))?", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class CommandContext:
    """What a running command may use: the Session, the user (ask, say, show a link, stream events), the selection,
    the Agent (``agent_turn``: a model turn on a prompt, its tools working in a directory such as a worktree;
    ``compact``: the runtime compacts the Session's context now), ``follow_up``: once an awaitable completes, run
    a command as the Session's own next turn, and ``spawn``: start the Session a /spawn argument asks for."""

    session: SessionRecord
    name: str
    commands: Sequence[Command]
    models: Sequence[ModelInfo]
    ask: Callable[[Question], Awaitable[Outcome]]
    say: Callable[[str], Awaitable[None]]
    select: Callable[..., Awaitable[SessionRecord]]
    emit: Callable[[Event], Awaitable[None]]
    show_link: Callable[[PlanLink], Awaitable[None]]
    agent_turn: Callable[[str, Path], Awaitable[None]]
    compact: Callable[[], Awaitable[None]]
    follow_up: Callable[[Awaitable[Any], Command, str], None]
    spawn: Callable[[str], Awaitable[SessionSpawned]]


CommandRun = Callable[[CommandContext, str], Awaitable[str | None]]
"""Runs a command with its arguments; returns a prompt for the model, or None when the command is done."""


@dataclass(frozen=True)
class Command:
    """A slash command. ``hint`` describes its input (empty: it takes none); unadvertised commands still run."""

    name: str
    description: str
    run: CommandRun
    aliases: tuple[str, ...] = ()
    hint: str = ""
    source: str = "built-in"
    advertised: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Invocation:
    """A command as typed: the command (None when unknown), the name used and the arguments."""

    command: Command | None
    name: str
    args: str


def parse_invocation(text: str) -> tuple[str, str] | None:
    """``(name, args)`` when the text is a slash command (``/name`` then optional arguments), else None."""
    match = _INVOCATION.fullmatch(text.strip())
    return (match.group(1).lower(), (match.group(2) or "").strip()) if match else None


class CommandRegistry:
    """Built-in commands first, then plugin commands whose names are free, then the project's files."""

    def __init__(self, builtins: Iterable[Command] = (), plugins: Iterable[Command] = ()) -> None:
        self._fixed: list[Command] = []
        self._taken: set[str] = set()
        for command in (*builtins, *plugins):
            if clash := self._taken.intersection(command.names):
                taken = ", ".join(sorted(clash))
                log.warning("command /%s (%s) ignored: %s already taken", command.name, command.source, taken)
                continue
            self._fixed.append(command)
            self._taken.update(command.names)

    def commands(self, cwd: str | Path) -> list[Command]:
        """Every command available in a project, in the order they are listed."""
        found = list(self._fixed)
        taken = set(self._taken)
        for command in project_commands(Path(cwd)):
            if command.name in taken:
                log.info("project command /%s (%s) is shadowed by a built-in", command.name, command.source)
                continue
            found.append(command)
            taken.add(command.name)
        return found

    def resolve(self, cwd: str | Path, text: str) -> Invocation | None:
        """The invocation the text asks for, or None when the text is not a slash command."""
        parsed = parse_invocation(text)
        if parsed is None:
            return None
        name, args = parsed
        command = next((c for c in self.commands(cwd) if name in c.names), None)
        return Invocation(command, name, args)


def project_commands(cwd: Path) -> list[Command]:
    """The prompt templates and Skills found in a project directory."""
    found: list[Command] = []
    for path in sorted((cwd / COMMANDS_DIR).glob("*.md")):
        meta, body = read_markdown(path)
        found.append(
            Command(
                path.stem.lower(),
                meta.get("description") or first_line(body) or f"Prompt template {path.name}",
                functools.partial(_expand_template, body),
                hint=meta.get("argument-hint", ""),
                source=str(path),
            )
        )
    for path in sorted((cwd / SKILLS_DIR).glob("*/SKILL.md")):
        meta, body = read_markdown(path)
        name = (meta.get("name") or path.parent.name).lower()
        found.append(
            Command(
                name,
                meta.get("description") or first_line(body) or f"Skill {name}",
                functools.partial(_use_skill, name, body),
                hint="what to apply the skill to",
                source=str(path),
            )
        )
    usable = [c for c in found if re.fullmatch(_NAME, c.name)]
    for command in set(found) - set(usable):
        log.warning("ignored %s: %r is not a command name", command.source, command.name)
    return usable


def read_markdown(path: Path) -> tuple[dict[str, str], str]:
    """A markdown file's ``---`` front matter (simple ``key: value`` lines) and its body."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---\n") or (end := text.find("\n---", 4)) < 0:
        return {}, text
    meta: dict[str, str] = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta, text[end + 4 :].lstrip("-").lstrip("\n")


def first_line(body: str) -> str:
    """The first non-empty line, without heading marks, for a description."""
    line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return line.lstrip("#").strip()[:100]


async def _expand_template(body: str, ctx: CommandContext, args: str) -> str:
    if "$ARGUMENTS" in body:
        return body.replace("$ARGUMENTS", args).strip()
    return f"{body.strip()}\n\n{args}" if args else body.strip()


async def _use_skill(name: str, body: str, ctx: CommandContext, args: str) -> str:
    task = args or "the current work"
    return f'Use the "{name}" skill.\n\n{body.strip()}\n\nApply it to: {task}'
