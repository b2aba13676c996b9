"""The ``mcpServers`` of ``session/new``, ``session/load`` and ``session/resume`` in the core's terms: stdio
servers to start, and a sentence for each server of a transport this agent does not offer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import McpServerStdio

from ..core.tool_servers import StdioServerSpec


def stdio_specs(servers: Sequence[Any] | None) -> tuple[list[StdioServerSpec], list[str]]:
    """The stdio servers, and what is said about the others (not advertised, so not started)."""
    specs: list[StdioServerSpec] = []
    refused: list[str] = []
    for server in servers or ():
        if isinstance(server, McpServerStdio):
            env = tuple((var.name, var.value) for var in server.env)
            specs.append(StdioServerSpec(server.name, server.command, tuple(server.args), env))
        else:
            kind = getattr(server, "type", "unknown")
            refused.append(f"MCP server {server.name!r} was not started: this agent supports only stdio MCP servers, not {kind}.")
    return specs, refused
