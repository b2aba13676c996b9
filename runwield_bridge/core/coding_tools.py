"""The native runtime's coding tools: find and search files, read, edit and write them, run a command.

Every path stays inside the project (``project_paths.confined``); every change and every command is first
put to ``ToolContext.permit`` (``tool_gate``), which refuses unless a rule, a grant or the person allows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from .models import ToolSpec
from .project_paths import OutsideProject, confined, path_pattern, relative
from .tool_gate import Change
from .tools import Tool, ToolContext, ToolError
from .validation import run_command, tail

MAX_READ_BYTES = 64 * 1024
MAX_RESULTS = 200  # file names from find_files, matching lines from search_files
MAX_LINE = 300  # characters of a matching line shown by search_files
MAX_SEARCH_BYTES = 1024 * 1024  # larger files are not searched
PROGRESS_INTERVAL = 0.2  # seconds between two streamed updates of a command's output
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})


def _path(ctx: ToolContext, arguments: dict[str, Any], key: str = "path", default: str | None = None) -> Path:
    name = arguments.get(key, default)
    if not isinstance(name, str) or not name.strip():
        raise ToolError(f"{key!r} is required (a path relative to the project)")
    try:
        return confined(ctx.cwd, name)
    except OutsideProject as exc:
        raise ToolError(str(exc)) from None


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str):
        raise ToolError(f"{key!r} is required (a string)")
    return value


def _walk(ctx: ToolContext, start: Path) -> Iterator[Path]:
    """Files under ``start`` in name order, not following symlinked directories, skipping VCS and dependency dirs."""
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            path = Path(folder, name)
            try:
                confined(ctx.cwd, relative(ctx.cwd, path))
            except OutsideProject:
                continue  # a symlink pointing out of the project is not followed
            yield path


async def _find_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    pattern = path_pattern(_text(arguments, "pattern"))
    start = _path(ctx, arguments, default=".")
    found = [name for path in _walk(ctx, start) if pattern.fullmatch(name := relative(ctx.cwd, path))]
    if not found:
        return "no files match"
    return _bounded(found, "files")


async def _search_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    query = _text(arguments, "query")
    flags = re.IGNORECASE if arguments.get("ignore_case") else 0
    try:
        matcher = re.compile(query if arguments.get("regex") else re.escape(query), flags)
    except re.error as exc:
        raise ToolError(f"not a valid regular expression: {exc}") from None
    only = path_pattern(arguments["glob"]) if isinstance(arguments.get("glob"), str) else None
    hits: list[str] = []
    for path in _walk(ctx, _path(ctx, arguments, default=".")):
        name = relative(ctx.cwd, path)
        if (only is not None and not only.fullmatch(name)) or path.stat().st_size > MAX_SEARCH_BYTES:
            continue
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if matcher.search(line):
                hits.append(f"{name}:{number}: {line.strip()[:MAX_LINE]}")
        if len(hits) > MAX_RESULTS:
            break
    return _bounded(hits, "matching lines") if hits else "no matches"


def _bounded(lines: list[str], what: str) -> str:
    if len(lines) <= MAX_RESULTS:
        return "\n".join(lines)
    return "\n".join(lines[:MAX_RESULTS]) + f"\n(only the first {MAX_RESULTS} {what} are shown; narrow the search)"


async def _list_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, arguments, default=".")
    if not path.is_dir():
        raise ToolError(f"no such directory: {arguments.get('path', '.')}")
    return "\n".join(sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir() if not p.name.startswith(".")))


async def _read_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, arguments)
    if not path.is_file():
        raise ToolError(f"no such file: {arguments.get('path')}")
    text = path.read_bytes()[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if "offset" not in arguments and "limit" not in arguments:
        return text
    first, count = _line_range(arguments)
    lines = text.splitlines(keepends=True)
    chosen = lines[first - 1 : first - 1 + count]
    rest = len(lines) - (first - 1 + len(chosen))
    more = f"\n({rest} more lines; read on from line {first + len(chosen)})" if rest > 0 else ""
    return "".join(chosen) + more


def _line_range(arguments: dict[str, Any]) -> tuple[int, int]:
    first, count = arguments.get("offset", 1), arguments.get("limit", 2000)
    if not isinstance(first, int) or not isinstance(count, int) or first < 1 or count < 1:
        raise ToolError("'offset' (the first line, from 1) and 'limit' (how many lines) must be positive whole numbers")
    return first, count


def _writable(ctx: ToolContext, arguments: dict[str, Any]) -> Path:
    path = _path(ctx, arguments)
    name = relative(ctx.cwd, path)
    if path.is_dir() or ".git" in Path(name).parts:
        raise ToolError(f"cannot write {arguments.get('path')!r}: it is a directory or inside .git")
    return path


async def _allowed(ctx: ToolContext, change: Change) -> None:
    """Go ahead only when permitted: raises with the reason otherwise."""
    refusal = "refused: nobody can be asked for permission here" if ctx.permit is None else await ctx.permit(change)
    if refusal is not None:
        what = f"`{change.target}` was not run" if change.kind == "command" else f"{change.target} was not changed"
        raise ToolError(f"{what}: {refusal}")


async def _edit_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _writable(ctx, arguments)
    old, new = _text(arguments, "old"), _text(arguments, "new")
    if not path.is_file():
        raise ToolError(f"no such file: {arguments.get('path')}")
    if not old:
        raise ToolError("'old' must not be empty; use write_file to create a file")
    text = path.read_text(encoding="utf-8")
    found = text.count(old)
    if found != 1:
        raise ToolError(f"the old text was found {found} times in {relative(ctx.cwd, path)}; it must be found exactly once (quote more of the surrounding lines)")
    await _allowed(ctx, Change("write", relative(ctx.cwd, path)))
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return f"Edited {relative(ctx.cwd, path)}"


async def _write_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _writable(ctx, arguments)
    content = _text(arguments, "content")
    await _allowed(ctx, Change("write", relative(ctx.cwd, path)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return f"Wrote {relative(ctx.cwd, path)} ({len(content.encode())} bytes)"


async def _run_command(arguments: dict[str, Any], ctx: ToolContext) -> str:
    command = _text(arguments, "command").strip()
    if not command:
        raise ToolError("'command' is required")
    await _allowed(ctx, Change("command", command))
    stream = OutputStream(ctx.progress)
    try:
        result = await run_command(command, ctx.cwd, ctx.command_timeout, stream.feed)
    finally:
        await stream.close()
    output = result.output or "(no output)\n"
    if result.timed_out:
        raise ToolError(f"{output}\n`{command}` timed out after {ctx.command_timeout:g}s and was stopped, with everything it started")
    if result.exit_code != 0:
        raise ToolError(f"{output}\n`{command}` failed with exit code {result.exit_code}")
    return f"{output}\n(exit code 0)"


class OutputStream:
    """A command's output so far, sent as it arrives: at once, then at most once per ``PROGRESS_INTERVAL``;
    ``close`` sends what is left, so every piece of output is shown before the call ends."""

    def __init__(self, send: Callable[[str], Awaitable[None]] | None) -> None:
        self.send = send
        self.text = ""
        self.sent = ""
        self.pump: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    def feed(self, chunk: str) -> None:
        self.text = tail(self.text + chunk)
        if self.send is not None and self.pump is None:
            self.pump = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        assert self.send is not None
        while self.sent != self.text:
            self.sent = self.text
            await self.send(self.sent)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closed.wait(), PROGRESS_INTERVAL)
        self.pump = None

    async def close(self) -> None:
        self.closed.set()
        if self.pump is not None:
            await self.pump


def _params(required: tuple[str, ...], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


_STRING = {"type": "string"}
_PATH = {"type": "string", "description": "relative to the project directory"}

CODING_TOOLS: tuple[Tool, ...] = (
    Tool(ToolSpec("list_files", "List a directory in the project", _params(("path",), path=_PATH)), "search", _list_files),
    Tool(
        ToolSpec("find_files", "Find files by name: a glob such as **/*.py or src/*.toml, relative to the project",
                 _params(("pattern",), pattern=_STRING, path=_PATH)),
        "search", _find_files,
    ),
    Tool(
        ToolSpec("search_files", f"Search file contents for a substring (or a regex with regex=true); returns path:line: text, at most {MAX_RESULTS} lines",
                 _params(("query",), query=_STRING, path=_PATH, glob={"type": "string", "description": "only files matching this glob"},
                         regex={"type": "boolean"}, ignore_case={"type": "boolean"})),
        "search", _search_files,
    ),
    Tool(
        ToolSpec("read_file", "Read a text file in the project, whole or from line `offset` (from 1) for `limit` lines",
                 _params(("path",), path=_PATH, offset={"type": "integer", "minimum": 1}, limit={"type": "integer", "minimum": 1})),
        "read", _read_file,
    ),
    Tool(
        ToolSpec("edit_file", "Replace the exact text `old` (which must occur exactly once) with `new` in a file; asks the user first",
                 _params(("path", "old", "new"), path=_PATH, old=_STRING, new=_STRING)),
        "edit", _edit_file,
    ),
    Tool(
        ToolSpec("write_file", "Create or overwrite a text file in the project; asks the user first",
                 _params(("path", "content"), path=_PATH, content=_STRING)),
        "edit", _write_file,
    ),
    Tool(
        ToolSpec("run_command", "Run a shell command in the project directory (output streamed, with a timeout); asks the user first",
                 _params(("command",), command=_STRING)),
        "execute", _run_command,
    ),
)
"""The coding tools, registered by the built-in plugin."""
