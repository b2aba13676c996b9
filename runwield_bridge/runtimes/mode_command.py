"""``/mode``: in a Session an external agent drives, show the agent's own modes and put its session in another one."""

from __future__ import annotations

from ..core.builtin_commands import choose
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
