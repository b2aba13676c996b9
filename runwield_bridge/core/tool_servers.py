"""Tool servers a client brings for one Session (ACP's ``mcpServers``): started with the Session, their tools
offered to its turns, stopped with it. The core only names them; ``runtimes/mcp_servers.py`` runs them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .tools import Tool


@dataclass(frozen=True, slots=True)
class StdioServerSpec:
    """A tool server started as a local process that speaks on its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


class ToolServers(Protocol):
    """A Session's running tool servers: their tools, and the servers that could not be used (in words)."""

    tools: tuple[Tool, ...]
    problems: tuple[str, ...]

    async def aclose(self) -> None: ...


StartToolServers = Callable[[Sequence[StdioServerSpec], Path], Awaitable[ToolServers]]
"""Start these servers in this working directory; a server that cannot be used is one of the problems."""
