"""The bridge commands as Discord application (slash) commands: /cancel, /new, /resume, /spawn, /sessions, /status,
/queue and /models."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import get_args

import discord
from discord import app_commands

from ..bridge_commands import BRIDGE_COMMANDS
from ..settings import QueueMode

RunCommand = Callable[[discord.Interaction, str], Awaitable[None]]
ShowModels = Callable[[discord.Interaction], Awaitable[None]]
_DESCRIPTIONS = {command.name: command.description for command in BRIDGE_COMMANDS}
_QUEUE_CHOICES = [app_commands.Choice(name=value, value=value) for value in (*get_args(QueueMode), "clear")]


def slash_commands(run: RunCommand, show_models: ShowModels) -> list[app_commands.Command]:
    """``run(interaction, "/new AGENT")`` for the bridge commands; ``show_models(interaction)`` for /models."""

    @app_commands.command(name="cancel", description=_DESCRIPTIONS["cancel"])
    async def cancel(interaction: discord.Interaction) -> None:
        await run(interaction, "/cancel")

    @app_commands.command(name="new", description=_DESCRIPTIONS["new"])
    @app_commands.describe(agent="A configured agent (default: this channel's)")
    async def new(interaction: discord.Interaction, agent: str | None = None) -> None:
        await run(interaction, f"/new {agent or ''}".strip())

    @app_commands.command(name="resume", description=_DESCRIPTIONS["resume"])
    @app_commands.describe(session_id="The id of the session to continue here")
    async def resume(interaction: discord.Interaction, session_id: str) -> None:
        await run(interaction, f"/resume {session_id}")

    @app_commands.command(name="spawn", description="Start an agent on a task, here or in a new thread")
    @app_commands.describe(
        agent="A configured agent",
        task="What it should do (its first prompt)",
        thread="Open a new thread for it (default: bind this conversation)",
        resume="Continue this earlier session of the agent instead of starting one",
    )
    async def spawn(interaction: discord.Interaction, agent: str, task: str = "", thread: bool = False, resume: str | None = None) -> None:
        await run(interaction, spawn_command(agent, task, thread, resume))

    @app_commands.command(name="sessions", description=_DESCRIPTIONS["sessions"])
    async def sessions(interaction: discord.Interaction) -> None:
        await run(interaction, "/sessions")

    @app_commands.command(name="status", description=_DESCRIPTIONS["status"])
    async def status(interaction: discord.Interaction) -> None:
        await run(interaction, "/status")

    @app_commands.command(name="queue", description=_DESCRIPTIONS["queue"])
    @app_commands.describe(mode="A queue mode for what you send while the agent works, or clear to drop what waits")
    @app_commands.choices(mode=_QUEUE_CHOICES)
    async def queue(interaction: discord.Interaction, mode: str | None = None) -> None:
        await run(interaction, f"/queue {mode or ''}".strip())

    @app_commands.command(name="models", description="Choose this session's model")
    async def models(interaction: discord.Interaction) -> None:
        await show_models(interaction)

    return [cancel, new, resume, spawn, sessions, status, queue, models]


def spawn_command(agent: str, task: str, thread: bool, resume: str | None) -> str:
    """The /spawn a slash command's options say, as a person would type it."""
    words = [agent, "--thread" if thread else "--here", *(("--resume", resume) if resume else ())]
    return " ".join(["/spawn", *words, task]).strip()
