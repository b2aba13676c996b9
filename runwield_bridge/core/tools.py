"""Tools the runtime offers to models: read-only project inspection by default."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .background import BackgroundWork, StartBackground
from .interactions import Outcome, Question
from .models import ToolSpec

MAX_READ_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where a tool runs, how it asks the user a question (None where nobody can be asked), and how it starts
    work that outlives the turn (None where it cannot)."""

    session_id: str
    cwd: Path
    ask: Callable[[Question], Awaitable[Outcome]] | None = None
    background: StartBackground | None = None

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
        detail = arguments.get("path") or ""
        return f"{self.spec.name} {detail}".strip()


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


def _inside(ctx: ToolContext, relative: str) -> Path:
    root = ctx.cwd.resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise ToolError(f"{relative!r} is outside the project directory")
    return target


async def _read_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _inside(ctx, str(arguments.get("path", "")))
    if not path.is_file():
        raise ToolError(f"no such file: {arguments.get('path')}")
    data = path.read_bytes()[:MAX_READ_BYTES]
    return data.decode("utf-8", errors="replace")


async def _list_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _inside(ctx, str(arguments.get("path", ".")))
    if not path.is_dir():
        raise ToolError(f"no such directory: {arguments.get('path', '.')}")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir() if not p.name.startswith("."))
    return "\n".join(names)


async def _write_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _inside(ctx, str(arguments.get("path", "")))
    if path == ctx.cwd.resolve() or ".git" in path.relative_to(ctx.cwd.resolve()).parts:
        raise ToolError(f"cannot write {arguments.get('path')!r}")
    content = str(arguments.get("content", ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return f"Wrote {arguments.get('path')} ({len(content.encode())} bytes)"


_PATH_PARAM = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

BUILTIN_TOOLS: tuple[Tool, ...] = (
    Tool(ToolSpec("read_file", "Read a text file in the project", _PATH_PARAM), "read", _read_file),
    Tool(ToolSpec("list_files", "List a directory in the project", _PATH_PARAM), "search", _list_files),
)

_WRITE_PARAM = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}

WORKTREE_TOOLS: tuple[Tool, ...] = (
    Tool(ToolSpec("write_file", "Write a text file in the worktree (only while executing a Plan)", _WRITE_PARAM), "edit", _write_file),
)
"""Tools offered only to turns that work in a RunWield-owned worktree: they change files."""
