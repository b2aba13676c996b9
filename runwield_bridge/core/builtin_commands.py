"""The built-in slash commands: /agent, /model (/models), /help, /compact, /spawn, and the terminal-UI commands that do not
run here."""

from __future__ import annotations

from .catalog import BUILTIN_AGENTS, UnknownChoice, agent_profile
from .commands import Command, CommandContext
from .interactions import Choice, Outcome, select
from .spawned import SPAWN

TERMINAL_ONLY = ("copy", "theme", "quit", "exit", "new", "resume", "login")


async def choose(ctx: CommandContext, wanted: str, prompt: str, choices: list[Choice], what: str) -> str | None:
    """The value named in the arguments (by value or label, any case), else the one the user picks;
    None (after saying why) if none is picked."""
    if wanted:
        key = wanted.casefold()
        return next((c.value for c in choices if key in (c.value.casefold(), c.label.casefold())), wanted)
    outcome: Outcome = await ctx.ask(select(prompt, choices))
    if outcome.answered and outcome.value is not None:
        return outcome.value
    await ctx.say(f"No {what} was chosen ({outcome.status}); nothing changed.")
    return None


async def agent_command(ctx: CommandContext, args: str) -> None:
    current = ctx.session.agent
    choices = [Choice(a.id, a.name, a.description + (" (current)" if a.id == current else "")) for a in BUILTIN_AGENTS]
    wanted = await choose(ctx, args, "Choose the Agent for this Session", choices, "Agent")
    if wanted is None:
        return
    try:
        profile = agent_profile(wanted)
    except UnknownChoice as exc:
        await ctx.say(f"{exc}. Nothing changed.")
        return
    if profile.id == current:
        await ctx.say(f"The {profile.name} Agent is already active.")
        return
    await ctx.select(agent=profile.id)


async def model_command(ctx: CommandContext, args: str) -> None:
    current = ctx.session.model
    choices = [Choice(m.id, m.name, m.description + (" (current)" if m.id == current else "")) for m in ctx.models]
    wanted = await choose(ctx, args, "Choose the model for this Session", choices, "model")
    if wanted is None:
        return
    if wanted == current:
        await ctx.say(f"The model {wanted} is already selected.")
        return
    try:
        record = await ctx.select(model=wanted)
    except UnknownChoice as exc:
        await ctx.say(f"{exc}. Nothing changed.")
        return
    level = f" (reasoning: {record.reasoning})" if record.reasoning else ""
    await ctx.say(f"Model: {record.model}{level}.")


async def help_command(ctx: CommandContext, args: str) -> None:
    lines = ["Commands:"]
    for command in ctx.commands:
        if command.advertised:
            usage = f"/{command.name}" + (f" [{command.hint}]" if command.hint else "")
            aliases = f" (also /{', /'.join(command.aliases)})" if command.aliases else ""
            lines.append(f"- {usage}: {command.description}{aliases}")
    terminal = ", ".join("/" + n for n in TERMINAL_ONLY)
    lines.append(f"The Session Host does not run terminal-UI commands ({terminal}); your client may offer its own.")
    await ctx.say("\n".join(lines))


async def compact_command(ctx: CommandContext, args: str) -> None:
    await ctx.compact()


async def terminal_only(ctx: CommandContext, args: str) -> None:
    await ctx.say(f"/{ctx.name} belongs to a terminal UI and does not run over ACP; nothing was done.")


BUILTIN_COMMANDS: tuple[Command, ...] = (
    Command("agent", "Choose the Agent this Session runs as", agent_command, hint="Agent (optional)"),
    Command("model", "Choose the model for this Session", model_command, aliases=("models",), hint="model (optional)"),
    Command("help", "List the commands", help_command),
    Command("compact", "Fold the older part of the conversation into a summary (the transcript keeps all)", compact_command),
    SPAWN,
    *(Command(name, "A terminal-UI command", terminal_only, advertised=False) for name in TERMINAL_ONLY),
)
