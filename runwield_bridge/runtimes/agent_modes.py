"""The external agent's mode for a RunWield Session or a chat's agent session: started in the one that asks the
person (per adapter, or ``[agents.NAME] mode``), said plainly when the agent approves its own actions in it, and
changed by ``/mode``; and the agent's own models, for ``/model``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import SessionModeState

from ..config import AgentConfig
from ..core.catalog import UnknownChoice
from ..core.events import AgentChoices
from ..core.models import ModelError
from ..core.runtime import OwnChoice
from .agent_adapters import AgentAdapter


@dataclass
class AgentMode:
    """The mode one agent session is in and the modes it offers (id, name): none for an agent without ACP modes;
    likewise its own models, when it offers them as a config option (``model_option``, its id)."""

    current: str | None
    offered: list[tuple[str, str]]
    model: str | None = None
    models: list[tuple[str, str]] = field(default_factory=list)
    model_option: str | None = None


def with_models(mode: AgentMode, options: list[Any] | None) -> AgentMode:
    """``mode`` with the agent's own models from its config options (the select of category ``model``)."""
    for option in options or ():
        select = getattr(option, "root", option)
        if getattr(select, "category", None) == "model" and getattr(select, "type", None) == "select":
            mode.model_option, mode.model = select.id, select.current_value
            entries = [entry for item in select.options for entry in getattr(item, "options", [item])]
            mode.models = [(entry.value, entry.name) for entry in entries]
    return mode


def self_approval_warning(agent: str, mode: str) -> str:
    """What the person is told (in the chat and by ``wld doctor``) when the agent approves its own actions in ``mode``."""
    return (
        f"The external agent {agent} runs in its mode `{mode}`, in which it approves its own file changes and commands: "
        f"RunWield does not ask you before it acts. Set `[agents.{agent}] mode` to a mode that asks (or remove it)."
    )


async def settle_mode(conn: ClientSideConnection, session_id: str, opened: Any, adapter: AgentAdapter, config: AgentConfig) -> AgentMode:
    """Put the just opened agent session (``opened``: the answer to session/new, load or resume) into the configured
    mode when it offers it (``session/set_mode``); what it offers, models too."""
    mode = await _settled(conn, session_id, opened.modes, adapter, config)
    return with_models(mode, opened.config_options)


async def _settled(conn: ClientSideConnection, session_id: str, modes: SessionModeState | None, adapter: AgentAdapter, config: AgentConfig) -> AgentMode:
    offered = [(mode.id, mode.name) for mode in modes.available_modes] if modes else []
    if not adapter.mode_via_acp():
        return AgentMode(adapter.mode(config), offered)
    current = modes.current_mode_id if modes else None
    wanted = adapter.mode(config)
    if wanted and wanted != current and wanted in dict(offered):
        await conn.set_session_mode(session_id=session_id, mode_id=wanted)
        current = wanted
    return AgentMode(current, offered)


def mode_warnings(agent: str, adapter: AgentAdapter, mode: AgentMode) -> list[str]:
    """What the person is told before the first turn when the agent approves its own actions in the mode it runs in."""
    return [self_approval_warning(agent, mode.current)] if mode.current and adapter.approves_itself(mode.current) else []


def own_choices(agent: str, mode: AgentMode) -> AgentChoices:
    """What the agent's session offers, as the Session's clients see it: its modes (if it has ACP modes) and models."""
    current = mode.current if mode.offered else None
    model = mode.model if mode.model_option else None
    return AgentChoices(agent, current, tuple(mode.offered), model, tuple(mode.models) if model is not None else ())


async def apply_own(conn: ClientSideConnection, agent: str, adapter: AgentAdapter, agent_session: str, mode: AgentMode, kind: OwnChoice, value: str) -> list[str]:
    """Put the agent's session in its mode (``session/set_mode``) or model (``session/set_config_option``) ``value``;
    the self-approval warning when the agent approves itself in that mode. UnknownChoice for one it does not offer,
    ModelError when the agent refuses."""
    offered = dict(mode.offered if kind == "mode" else mode.models)
    if value not in offered or (kind == "model" and mode.model_option is None):
        known = ", ".join(offered) or "none"
        raise UnknownChoice(f"the external agent {agent} offers no {kind} {value!r} (it offers: {known})")
    try:
        if kind == "model" and mode.model_option is not None:
            await conn.set_config_option(config_id=mode.model_option, session_id=agent_session, value=value)
            mode.model = value
            return []
        if value != mode.current:
            await conn.set_session_mode(session_id=agent_session, mode_id=value)
            mode.current = value
    except (RequestError, ConnectionError) as exc:
        raise ModelError(f"the external agent {agent} did not change its {kind}: {exc}") from None
    return [self_approval_warning(agent, value)] if adapter.approves_itself(value) else []
