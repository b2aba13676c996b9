"""The core's own tools and commands, registered through the same hooks as every plugin's."""

from __future__ import annotations

from collections.abc import Callable

from ..core.builtin_commands import BUILTIN_COMMANDS
from ..core.commands import Command
from ..core.interview import USER_INTERVIEW
from ..core.tools import BUILTIN_TOOLS, Tool
from ..hookspecs import hookimpl


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    """``read_file`` and ``list_files`` (confined to the project directory) and ``user_interview``."""
    for tool in (*BUILTIN_TOOLS, USER_INTERVIEW):
        register(tool)


@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``/agent``, ``/model``, ``/help`` and the terminal-UI commands that say they do not run here."""
    for command in BUILTIN_COMMANDS:
        register(command)
