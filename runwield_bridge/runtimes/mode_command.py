"""``/mode`` and the agent's side of ``/model``: in a Session an external agent drives, show the agent's own modes and
models beside RunWield's, and put the agent's session in the one chosen (every client of the Session is told)."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.builtin_commands import choose
from ..core.catalog import UnknownChoice
from ..core.commands import Command, CommandContext
from ..core.events import SelectionChanged
from ..core.interactions import Choice
from ..core.runtime import OwnChoice
from .own_choices import AgentRuntimes


def mode_command(runtimes: AgentRuntimes) -> Command:
    """The ``/mode`` command over the Sessions' runtimes and their external agents."""

    async def run(ctx: CommandContext, args: str) -> None:
        agent = await runtimes.agent(ctx.session.id)
        if agent is None:
            await ctx.say("/mode shows an external agent's modes; this Session's own model drives it (choose its Agent with /agent).")
            return
        found = await runtimes.opened(ctx.session.id)
        if found is None:
            await ctx.say(f"The external agent {agent.name} has not opened its session yet: its modes show after its first turn.")
            return
        _, _, mode = found
        if not mode.offered:
            how = f"it runs with `{mode.current}` ([agents.{agent.name}] mode)" if mode.current else "it chooses its own"
            await ctx.say(f"The external agent {agent.name} offers no modes to choose from; {how}.")
            return
        offered = [Choice(id, name, "(current)" if id == mode.current else "") for id, name in mode.offered]
        wanted = await choose(ctx, args, f"Choose the mode of {agent.name}", offered, "mode")
        if wanted is not None and (warnings := await _applied(ctx, runtimes, "mode", wanted)) is not None:
            await ctx.say(f"Mode of {agent.name}: `{wanted}`." + "".join(f"\n{warning}" for warning in warnings))

    return Command("mode", "Show or change the external agent's own mode (its permission mode)", run, hint="mode (optional)")


async def _applied(ctx: CommandContext, runtimes: AgentRuntimes, kind: OwnChoice, value: str) -> list[str] | None:
    """Apply the agent's own choice and tell the Session's clients its new choices; None (said why) when refused."""
    try:
        warnings = await runtimes.choose_own(ctx.session.id, kind, value)
    except UnknownChoice as exc:
        await ctx.say(f"{str(exc)[0].upper()}{str(exc)[1:]}. Nothing changed.")
        return None
    record = ctx.session
    await ctx.emit(SelectionChanged(record.agent, record.model, record.reasoning, await runtimes.of(record.id), await runtimes.own_choices(record.id)))
    return warnings


def agent_commands(runtimes: AgentRuntimes, commands: Iterable[Command]) -> list[Command]:
    """``commands`` with ``/mode`` added and ``/model`` also offering the external agent's own models."""
    return [*(agent_models(command, runtimes) if command.name == "model" else command for command in commands), mode_command(runtimes)]


def agent_models(model: Command, runtimes: AgentRuntimes) -> Command:
    """``/model`` offering, in a Session an external agent drives, its models as "NAME: model" before RunWield's."""

    async def run(ctx: CommandContext, args: str) -> str | None:
        own = await runtimes.own_choices(ctx.session.id)
        if own is None or own.model is None:
            return await model.run(ctx, args)
        offered = [Choice(f"{own.agent}: {value}", f"{own.agent}: {name}", "(current)" if value == own.model else "") for value, name in own.models]
        native = [Choice(m.id, m.name, m.description) for m in ctx.models]
        wanted = await choose(ctx, args, f"Choose the model ({own.agent}'s own, or RunWield's)", [*offered, *native], "model")
        value = wanted.removeprefix(f"{own.agent}: ") if wanted else None
        if wanted is None or value == wanted:
            return None if wanted is None else await model.run(ctx, wanted)
        assert value is not None
        if await _applied(ctx, runtimes, "model", value) is not None:
            await ctx.say(f"Model: {own.agent}: {dict(own.models)[value]}.")
        return None

    return Command(model.name, model.description, run, model.aliases, model.hint, model.source, model.advertised)
