"""The core's own tools and commands, registered through the same hooks as every plugin's."""

from __future__ import annotations

from collections.abc import Callable

from ..core.builtin_commands import BUILTIN_COMMANDS
from ..core.commands import Command
from ..core.interview import USER_INTERVIEW
from ..core.coding_tools import CODING_TOOLS
from ..core.tools import Tool
from ..hookspecs import hookimpl


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    """The coding tools (confined to the project directory; changes and commands ask first) and ``user_interview``."""
    for tool in (*CODING_TOOLS, USER_INTERVIEW):
        register(tool)


@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``/agent``, ``/model``, ``/help`` and the terminal-UI commands that say they do not run here."""
    for command in BUILTIN_COMMANDS:
        register(command)
