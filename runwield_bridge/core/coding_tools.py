"""The native runtime's coding tools: find and search files, read, edit and write them, run a command.

Every path stays inside the project (``project_paths.confined``), also at the moment it is read or written (each
component opened without following a symlink); every change and every command is first put to
``ToolContext.permit`` (``tool_gate``), which refuses unless a rule, a grant or the person allows it. Only regular
files are read or written; the file work runs on threads, never on the event loop, and a search is bounded in time
and bytes and matches with RE2 (linear time).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import re2

from .models import ToolSpec
from .project_paths import (
    DIRECTORY_FLAGS,
    NotRegularFile,
    OutsideProject,
    confined,
    directory,
    kind_of,
    open_regular,
    path_pattern,
    read_file,
    read_prefix,
    relative,
    replace_file,
)
from .tool_gate import Change
from .tools import Tool, ToolContext, ToolError
from .validation import run_command, tail

MAX_READ_BYTES = 64 * 1024
MAX_EDIT_BYTES = 16 * 1024 * 1024  # larger files are not edited (the whole file is read and written again)
MAX_RESULTS = 200  # file names from find_files, matching lines from search_files
MAX_LINE = 300  # characters of a matching line shown by search_files
MAX_SEARCH_BYTES = 1024 * 1024  # larger files are not searched
MAX_SEARCH_TOTAL = 32 * 1024 * 1024  # bytes one search reads in all before it stops
SEARCH_SECONDS = 10.0  # how long one search_files or find_files goes on before it stops with what it found
MAX_DEPTH = 64  # directories nested deeper than this are not walked
PROGRESS_INTERVAL = 0.2  # seconds between two streamed updates of a command's output
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})

# The file work of the tools runs here, never on the event loop: a slow disk, a huge tree or a long search holds
# one of these threads, not every Session of the process.
_FILE_WORK = ThreadPoolExecutor(8, thread_name_prefix="wld-files")
T = TypeVar("T")


async def _off_loop(work: Callable[[], T], what: str, stop: threading.Event | None = None) -> T:
    """``work()`` on a file-work thread; a cancelled call sets ``stop`` so a search ends soon. A file that cannot be
    used (a symlink met, not a regular file, an OS error) is a ToolError naming ``what``."""
    try:
        return await asyncio.get_running_loop().run_in_executor(_FILE_WORK, work)
    except asyncio.CancelledError:
        if stop is not None:
            stop.set()
        raise
    except (OutsideProject, NotRegularFile) as exc:
        raise ToolError(f"cannot {what}: {exc}") from None
    except OSError as exc:
        name = f" {exc.filename!r}" if isinstance(exc.filename, str) and not os.path.isabs(exc.filename) else ""
        raise ToolError(f"cannot {what}: {exc.strerror or exc}{name}") from None


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


class Bound:
    """How far one search may go: until it is cancelled, ``SEARCH_SECONDS`` have passed, or ``MAX_SEARCH_TOTAL``
    bytes were read; ``reason`` says which stopped it."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.seconds = SEARCH_SECONDS
        self.deadline = time.monotonic() + self.seconds
        self.left = MAX_SEARCH_TOTAL
        self.reason: str | None = None

    def over(self) -> bool:
        if self.reason is None:
            if self.stop.is_set():
                self.reason = "it was cancelled"
            elif time.monotonic() > self.deadline:
                self.reason = f"it stopped after {self.seconds:g} s"
        return self.reason is not None

    def take(self, size: int) -> bool:
        """Whether ``size`` more bytes may be read."""
        if size > self.left:
            self.reason = f"it stopped after reading {_size(MAX_SEARCH_TOTAL - self.left)}"
            return False
        self.left -= size
        return True

    def note(self, what: str) -> str:
        return f"\n(the {what} stopped early, before every file was looked at: {self.reason}; narrow it with `path` or `glob`)"


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):g} MiB" if count >= 1024 * 1024 else f"{count} bytes"


Opener = Callable[[], "tuple[int, os.stat_result]"]


def _files(root: Path, start: Path, bound: Bound) -> Iterator[tuple[str, Opener]]:
    """The regular files under ``start`` (or ``start`` itself, a file) as (project-relative name, how to open it), in
    name order, a directory's files before its subdirectories. Every directory is opened from its parent without
    following a symlink; a symlink is followed only to a regular file inside the project; VCS and dependency
    directories and anything that is not a regular file (a FIFO, a device, a socket) are skipped."""
    shown = relative(root, start)
    mode = os.stat(start).st_mode
    if not stat.S_ISDIR(mode):
        if stat.S_ISREG(mode):
            yield shown, functools.partial(_open_resolved, root, start)
            return
        raise NotRegularFile(f"{shown!r} is {kind_of(mode)}, not a directory or a regular file")
    with directory(root, start) as fd:
        yield from _tree(root, fd, "" if shown == "." else shown, bound, 0)


def _tree(root: Path, fd: int, prefix: str, bound: Bound, depth: int) -> Iterator[tuple[str, Opener]]:
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        if depth == 0:
            raise
        return  # a subdirectory that cannot be listed is left out
    subdirectories = []
    for entry in entries:
        if bound.over():
            return
        name = f"{prefix}/{entry.name}" if prefix else entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS and depth < MAX_DEPTH:
                    subdirectories.append(entry.name)
            elif entry.is_file(follow_symlinks=False):
                yield name, functools.partial(open_regular, fd, entry.name, name)
            elif entry.is_symlink() and (target := _linked_file(root, name)) is not None:
                yield name, functools.partial(_open_resolved, root, target)
        except OSError:
            continue  # gone or unreadable since it was listed
    for sub in subdirectories:
        if bound.over():
            return
        try:
            inner = os.open(sub, DIRECTORY_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone, unreadable, or swapped for a symlink since it was listed
        try:
            yield from _tree(root, inner, f"{prefix}/{sub}" if prefix else sub, bound, depth + 1)
        finally:
            os.close(inner)


def _linked_file(root: Path, name: str) -> Path | None:
    """Where the symlink ``name`` leads, if that is a regular file inside the project (a symlink pointing out of the
    project, to a directory, to nothing or to a FIFO is not followed)."""
    try:
        target = confined(root, name)
        return target if stat.S_ISREG(os.stat(target).st_mode) else None
    except (OutsideProject, OSError):
        return None


def _open_resolved(root: Path, path: Path) -> tuple[int, os.stat_result]:
    parts = path.relative_to(root.resolve()).parts
    with directory(root, path.parent) as dir_fd:
        return open_regular(dir_fd, parts[-1], "/".join(parts))


async def _find_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    pattern = path_pattern(_text(arguments, "pattern"))
    start = _path(ctx, arguments, default=".")
    stop = threading.Event()

    def find() -> str:
        bound = Bound(stop)
        found: list[str] = []
        for name, _ in _files(ctx.cwd, start, bound):
            if pattern.fullmatch(name):
                found.append(name)
                if len(found) > MAX_RESULTS:
                    break
        note = bound.note("search") if bound.reason else ""
        return (_bounded(found, "files") if found else "no files match") + note

    return await _off_loop(find, f"search {arguments.get('path', '.')!r}", stop)


def _matcher(arguments: dict[str, Any], query: str) -> Any:
    """The query as an RE2 pattern (linear time: no pattern can stall a search), or as a literal."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not arguments.get("ignore_case")
    options.literal = not arguments.get("regex")
    try:
        return re2.compile(query, options)
    except re2.error as exc:
        raise ToolError(_regex_refusal(query, exc)) from None


_RE2_LACKS = (
    (re.compile(r"invalid perl operator: \(\?[=!]"), "lookahead ((?=...), (?!...))"),
    (re.compile(r"invalid perl operator: \(\?<[=!]"), "lookbehind ((?<=...), (?<!...))"),
    (re.compile(r"invalid perl operator: \(\?>"), "an atomic group ((?>...))"),
    (re.compile(r"invalid perl operator: \(\?\("), "a conditional group ((?(1)...|...))"),
    (re.compile(r"invalid perl operator: \(\?#"), "a comment group ((?#...))"),
    (re.compile(r"invalid perl operator: \(\?P$"), "a named backreference ((?P=name))"),
    (re.compile(r"invalid escape sequence: \\[1-9]"), "a backreference (\\1 to \\9)"),
    (re.compile(r"invalid escape sequence: \\Z"), "\\Z (write \\z, or $)"),
    (re.compile(r"bad repetition operator: [*+?}]\+"), "a possessive quantifier (*+, ++, ?+)"),
    (re.compile(r"invalid repetition size"), "a repetition count over 1000"),
)


def _regex_refusal(pattern: str, exc: Exception) -> str:
    """Why ``pattern`` is refused: what RE2 does not support, or that it is not a regular expression at all."""
    raw = exc.args[0] if exc.args else exc
    message = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    lacks = next((what for check, what in _RE2_LACKS if check.search(message)), None)
    if lacks is not None:
        return (
            f"the regular expression {pattern!r} uses {lacks}, which search_files does not support: it matches with "
            "RE2 syntax (linear time), which has no backreferences, lookahead, lookbehind, atomic groups, possessive "
            "quantifiers or conditionals; rewrite the pattern without it"
        )
    try:
        re.compile(pattern)
    except re.error:
        return f"not a valid regular expression: {message}"
    return f"the regular expression {pattern!r} is not supported by RE2 syntax, which search_files uses: {message}"


async def _search_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    query = _text(arguments, "query")
    matcher = _matcher(arguments, query)
    only = path_pattern(arguments["glob"]) if isinstance(arguments.get("glob"), str) else None
    start = _path(ctx, arguments, default=".")
    literal = not arguments.get("regex")
    stop = threading.Event()

    def search() -> str:
        bound = Bound(stop)
        hits: list[str] = []
        for name, opener in _files(ctx.cwd, start, bound):
            if only is not None and not only.fullmatch(name):
                continue
            try:
                fd, info = opener()
            except (OSError, OutsideProject, NotRegularFile):
                continue  # gone, swapped, or not a regular file any more
            try:
                if info.st_size > MAX_SEARCH_BYTES or not bound.take(info.st_size):
                    if bound.reason:
                        break
                    continue
                data = read_prefix(fd, MAX_SEARCH_BYTES + 1)
            finally:
                os.close(fd)
            if len(data) > MAX_SEARCH_BYTES or b"\x00" in data[:8192]:
                continue  # grew past the limit since its size was looked at; binary
            text = data.decode("utf-8", errors="replace")
            if literal and not matcher.search(text):
                continue  # a literal found in a line is found in the whole text
            for number, line in enumerate(text.splitlines(), 1):
                if bound.over():
                    break
                if matcher.search(line):
                    hits.append(f"{name}:{number}: {line.strip()[:MAX_LINE]}")
            if len(hits) > MAX_RESULTS or bound.over():
                break
        note = bound.note("search") if bound.reason else ""
        return (_bounded(hits, "matching lines") if hits else "no matches") + note

    return await _off_loop(search, f"search {arguments.get('path', '.')!r}", stop)


def _bounded(lines: list[str], what: str) -> str:
    if len(lines) <= MAX_RESULTS:
        return "\n".join(lines)
    return "\n".join(lines[:MAX_RESULTS]) + f"\n(only the first {MAX_RESULTS} {what} are shown; narrow the search)"


async def _list_files(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, arguments, default=".")
    shown = arguments.get("path", ".")

    def listing() -> str:
        if not path.is_dir():
            raise ToolError(f"no such directory: {shown}")
        with directory(ctx.cwd, path) as fd, os.scandir(fd) as entries:
            names = [entry.name + "/" if entry.is_dir() else entry.name for entry in entries if _listed(entry)]
        return "\n".join(sorted(names))

    return await _off_loop(listing, f"list {shown!r}")


def _listed(entry: os.DirEntry[str]) -> bool:
    """Whether ``list_files`` shows ``entry``: not hidden, and a directory or a regular file (or a symlink to one)."""
    try:
        return not entry.name.startswith(".") and (entry.is_dir() or entry.is_file())
    except OSError:
        return False


async def _read_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _path(ctx, arguments)
    shown = arguments.get("path")

    def read() -> tuple[bytes, int]:
        if not path.exists():
            raise ToolError(f"no such file: {shown}")
        data, info = read_file(ctx.cwd, path, MAX_READ_BYTES)
        return data, info.st_size

    data, size = await _off_loop(read, f"read {shown!r}")
    text = data.decode("utf-8", errors="replace")
    cut = f"\n(read_file shows the first {MAX_READ_BYTES // 1024} KiB of this file's {size} bytes)" if size > len(data) else ""
    if "offset" not in arguments and "limit" not in arguments:
        return text + cut
    first, count = _line_range(arguments)
    lines = text.splitlines(keepends=True)
    chosen = lines[first - 1 : first - 1 + count]
    rest = len(lines) - (first - 1 + len(chosen))
    more = f"\n({rest} more lines; read on from line {first + len(chosen)})" if rest > 0 else ""
    return "".join(chosen) + more + cut


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


def _edited(text: str, old: str, new: str, name: str) -> str:
    found = text.count(old)
    if found != 1:
        raise ToolError(f"the old text was found {found} times in {name}; it must be found exactly once (quote more of the surrounding lines)")
    return text.replace(old, new, 1)


def _decoded(data: bytes, info: Any, name: str) -> str:
    if info.st_size > MAX_EDIT_BYTES or len(data) > MAX_EDIT_BYTES:
        raise ToolError(f"{name} is {info.st_size} bytes, more than edit_file edits ({_size(MAX_EDIT_BYTES)})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{name} is not UTF-8 text; edit_file edits text files") from None


def _linked(info: Any, name: str) -> str:
    """A note for a file that had other hard links: they were left as they were."""
    if info is None or info.st_nlink < 2:
        return ""
    return f"; it had {info.st_nlink - 1} other hard link(s), which keep the old content: {name} is a new file now"


async def _edit_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _writable(ctx, arguments)
    old, new = _text(arguments, "old"), _text(arguments, "new")
    name = relative(ctx.cwd, path)
    if not old:
        raise ToolError("'old' must not be empty; use write_file to create a file")

    def look() -> None:
        if not path.exists():
            raise ToolError(f"no such file: {arguments.get('path')}")
        data, info = read_file(ctx.cwd, path, MAX_EDIT_BYTES + 1)
        _edited(_decoded(data, info, name), old, new, name)

    await _off_loop(look, f"edit {name!r}")
    await _allowed(ctx, Change("write", name))

    def change(data: bytes | None, info: Any) -> bytes:
        """The edit made again on the file as it is now: it may have changed while the question waited."""
        if data is None:
            raise ToolError(f"{name} is gone since the edit was asked; nothing was changed")
        return _edited(_decoded(data, info, name), old, new, name).encode("utf-8")

    info = await _off_loop(lambda: replace_file(ctx.cwd, path, change, read=MAX_EDIT_BYTES + 1), f"edit {name!r}")
    return f"Edited {name}{_linked(info, name)}"


async def _write_file(arguments: dict[str, Any], ctx: ToolContext) -> str:
    path = _writable(ctx, arguments)
    content = _text(arguments, "content")
    name = relative(ctx.cwd, path)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("'content' is not valid text (it has a lone surrogate)") from None

    def look() -> None:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise NotRegularFile(f"{name!r} is {kind_of(mode)}, not a regular file")

    await _off_loop(look, f"write {name!r}")
    await _allowed(ctx, Change("write", name))
    info = await _off_loop(lambda: replace_file(ctx.cwd, path, lambda *_: data, create=True), f"write {name!r}")
    return f"Wrote {name} ({len(data)} bytes{_linked(info, name)})"


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
