"""``/mode`` and the agent's side of ``/model``: in a Session an external agent drives, show the agent's own modes and
models beside RunWield's, and put the agent's session in the one chosen."""

from __future__ import annotations

from ..core.builtin_commands import choose
from collections.abc import Iterable

from ..core.commands import Command, CommandContext
from ..core.interactions import Choice
from .acp_agents import ExternalAgents
from .agent_modes import self_approval_warning
from .choice import PREFIX, RuntimeChoices


def mode_command(agents: ExternalAgents, choices: RuntimeChoices) -> Command:
    """The ``/mode`` command over the configured external agents and the Sessions' runtime choices."""

    async def run(ctx: CommandContext, args: str) -> None:
        runtime = await choices.of(ctx.session.id)
        if not runtime.startswith(PREFIX):
            await ctx.say("/mode shows an external agent's modes; this Session's own model drives it (choose its Agent with /agent).")
            return
        agent = agents.get(runtime.removeprefix(PREFIX))
        agent_session, _ = await choices.agent_session(ctx.session.id)
        mode = agent.modes.get(agent_session)
        if mode is None:
            await ctx.say(f"The external agent {agent.name} has not opened its session yet: its modes show after its first turn.")
            return
        if not mode.offered:
            how = f"it runs with `{mode.current}` ([agents.{agent.name}] mode)" if mode.current else "it chooses its own"
            await ctx.say(f"The external agent {agent.name} offers no modes to choose from; {how}.")
            return
        offered = [Choice(id, name, "(current)" if id == mode.current else "") for id, name in mode.offered]
        wanted = await choose(ctx, args, f"Choose the mode of {agent.name}", offered, "mode")
        if wanted is None:
            return
        if wanted not in dict(mode.offered):
            await ctx.say(f"{agent.name} offers no mode {wanted!r} (it offers {', '.join(dict(mode.offered))}). Nothing changed.")
            return
        if wanted != mode.current:
            conn = await agent.connection()
            await conn.set_session_mode(session_id=agent_session, mode_id=wanted)
            mode.current = wanted
        warning = f"\n{self_approval_warning(agent.name, wanted)}" if agent.adapter.approves_itself(wanted) else ""
        await ctx.say(f"Mode of {agent.name}: `{wanted}`.{warning}")

    return Command("mode", "Show or change the external agent's own mode (its permission mode)", run, hint="mode (optional)")


def agent_commands(agents: ExternalAgents, choices: RuntimeChoices, commands: Iterable[Command]) -> list[Command]:
    """``commands`` with ``/mode`` added and ``/model`` also offering the external agent's own models."""
    return [*(agent_models(command, agents, choices) if command.name == "model" else command for command in commands), mode_command(agents, choices)]


def agent_models(model: Command, agents: ExternalAgents, choices: RuntimeChoices) -> Command:
    """``/model`` offering, in a Session an external agent drives, its models as "NAME: model" before RunWield's."""

    async def run(ctx: CommandContext, args: str) -> str | None:
        runtime = await choices.of(ctx.session.id)
        agent = agents.agents.get(runtime.removeprefix(PREFIX)) if runtime.startswith(PREFIX) else None
        agent_session, _ = await choices.agent_session(ctx.session.id)
        own = agent.modes.get(agent_session) if agent else None
        if agent is None or own is None or own.model_option is None:
            return await model.run(ctx, args)
        offered = [Choice(f"{agent.name}: {value}", f"{agent.name}: {name}", "(current)" if value == own.model else "") for value, name in own.models]
        native = [Choice(m.id, m.name, m.description) for m in ctx.models]
        wanted = await choose(ctx, args, f"Choose the model ({agent.name}'s own, or RunWield's)", [*offered, *native], "model")
        value = wanted.removeprefix(f"{agent.name}: ") if wanted else None
        if wanted is None or value == wanted:
            return None if wanted is None else await model.run(ctx, wanted)
        if value not in dict(own.models):
            await ctx.say(f"{agent.name} offers no model {value!r}. Nothing changed.")
            return None
        conn = await agent.connection()
        await conn.set_config_option(config_id=own.model_option, session_id=agent_session, value=value)
        own.model = value
        await ctx.say(f"Model: {agent.name}: {value}.")
        return None

    return Command(model.name, model.description, run, model.aliases, model.hint, model.source, model.advertised)
