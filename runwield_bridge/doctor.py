"""``wld doctor``: one line per check, ``ok`` or ``problem`` with the fix; any problem makes the exit status 1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from .app import App
from .channels.contract import ChannelContext
from .bridge.runner import build_channel
from .config import AgentConfig, ConfigError, Settings
from .plugin_host import PluginHost
from .redaction import redact
from .runtimes.agent_adapters import adapter_for
from .runtimes.agent_modes import self_approval_warning
from .web.server import WebServer

VERIFY_TIMEOUT = 30.0
Status = Literal["ok", "problem", "unknown"]


@dataclass(frozen=True, slots=True)
class Finding:
    """The result of one check: ``unknown`` when it could not be made (the platform was not reachable)."""

    status: Status
    subject: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<8} {self.subject}: {redact(self.detail)}"


async def run_doctor(settings: Settings, *more: AsyncIterator[Finding]) -> int:
    """Print every check's line (``more``'s after the others); 1 if any found a problem."""
    problems = 0
    for findings in (diagnose(settings), *more):
        async for finding in findings:
            print(finding.line(), flush=True)
            problems += finding.status == "problem"
    print(f"{problems} problem(s) found" if problems else "no problems found")
    return 1 if problems else 0


async def diagnose(settings: Settings) -> AsyncIterator[Finding]:
    """State, models and plugins; ``[web] listen``; then each configured channel (those need the database)."""
    from .core.store.migrate import DatabaseUnavailable, SchemaError

    yield Finding("ok", "state directory", str(settings.state_dir))
    try:
        app = await App.start(settings)
    except (DatabaseUnavailable, SchemaError) as exc:
        yield Finding("problem", "database", f"{exc}; fix database_url (or start the server) and run wld doctor again")
        yield await listen_finding(settings)
        return
    try:
        yield Finding("ok", "database", settings.db_url)
        yield Finding("ok", "models", f"{', '.join(m.id for m in app.session_host.models.all())} (new Sessions use {settings.sessions.model})")
        for failed in app.plugins.failed:
            yield Finding("problem", f"plugin {failed.name}", f"failed to load ({failed.error}); fix it, or block it in [plugins]")
        yield await listen_finding(settings)
        for name, agent in settings.agents.items():
            yield agent_finding(name, agent)
        for name, section in settings.channels.items():
            yield await channel_finding(name, section, app.plugins, settings)
    finally:
        await app.close()


def agent_finding(name: str, config: AgentConfig) -> Finding:
    """The mode the agent's sessions start in, and whether in it the agent approves its own actions."""
    adapter = adapter_for(config)
    mode = adapter.mode(config)
    if mode and adapter.approves_itself(mode):
        return Finding("problem", f"[agents.{name}]", self_approval_warning(name, mode))
    if mode is None:
        return Finding("ok", f"[agents.{name}]", f"{adapter.name} agent: its sessions start in the mode it chooses")
    asks = ", in which it asks you before it acts" if mode == adapter.asking_mode else ""
    return Finding("ok", f"[agents.{name}]", f"{adapter.name} agent: its sessions start in its mode `{mode}`{asks}")


async def listen_finding(settings: Settings) -> Finding:
    """Whether ``[web] listen`` can be bound now (review pages and webhooks are served there)."""
    server = WebServer(settings.web)
    try:
        await server.start()
    except ConfigError as exc:
        return Finding("problem", "[web] listen", f"{exc}; choose a free HOST:PORT, or stop what listens there (a running wld?)")
    await server.stop()
    return Finding("ok", "[web] listen", f"{settings.web.listen} can be bound")


async def channel_finding(name: str, section: dict[str, object], plugins: PluginHost, settings: Settings) -> Finding:
    """The channel's section and platform library, then its credentials, checked with the platform when it is reachable."""
    subject = f"[channels.{name}]"
    factories = plugins.channels()
    try:
        channel = build_channel(name, dict(section), factories, ChannelContext(WebServer(settings.web)))
    except ConfigError as exc:
        return Finding("problem", subject, str(exc))
    verify = getattr(channel, "verify", None)
    try:
        if verify is None:
            return Finding("ok", subject, "configured (no credentials to check)")
        await asyncio.wait_for(verify(), VERIFY_TIMEOUT)
        return Finding("ok", subject, "credentials accepted by the platform")
    except ConfigError as exc:  # the platform refused the token, a scope, an intent or a URL: what `wld bridge` would stop on
        return Finding("problem", subject, str(exc))
    except Exception as exc:  # the platform could not be asked: not a verdict on the credentials
        return Finding("unknown", subject, f"credentials not checked: the platform could not be reached ({type(exc).__name__}: {exc})")
    finally:
        await channel.close()
