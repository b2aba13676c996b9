"""``wld bridge``: the configured channels, each under a supervisor, on one Bridge and one web server."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from ..acp.client import AgentEndpoint
from ..config import ConfigError, Settings
from ..plugin_host import PluginHost
from ..web.server import WebServer
from .bindings import BindingStore
from .bridge import Bridge
from ..channels.contract import Channel, ChannelContext, ChannelFactory
from .dedupe import UpdateLog
from .delivery import deliver
from .follow_ups import FollowUpLog
from .inbox import INTERRUPTED, ChannelInbox
from .instances import HandoffRecord, Instances
from .links import unreachable_links
from .routes import parse_routes
from ..supervision import Backoff, Supervisor

log = logging.getLogger(__name__)


class BridgeStore(BindingStore, UpdateLog, Protocol):
    """Where ``wld bridge`` keeps conversation bindings, the updates it handled and its follow-up queues: the store."""

    follow_ups: FollowUpLog


NO_CHANNELS = "wld bridge: no channels configured; add a [channels.NAME] section (see docs/channels.md)"
NO_CHANNEL_LEFT = "wld bridge: every channel stopped on a configuration error (logged above); fix it and start again"


def build_channels(settings: Settings, plugins: PluginHost, context: ChannelContext) -> list[Channel]:
    """One channel per ``[channels.NAME]`` section, built by the plugin that registered NAME."""
    factories = plugins.channels()
    return [build_channel(name, section, factories, context) for name, section in settings.channels.items()]


def build_channel(name: str, section: dict[str, Any], factories: dict[str, ChannelFactory], context: ChannelContext) -> Channel:
    """The channel for ``[channels.NAME]``; a ConfigError names the key when no plugin provides it or the section is wrong."""
    if name not in factories:
        known = ", ".join(sorted(factories)) or "none"
        raise ConfigError(f"channels.{name}: no plugin provides this channel (available: {known})")
    return factories[name](section, context)


class BridgeService:
    """Everything ``wld bridge`` runs, started and stopped as one.

    ``web`` is the process's one web server when it already has one (the App's, with the review
    pages); ``start_web`` starts it. It is started here only if a channel added a route (a webhook).
    """

    def __init__(
        self,
        settings: Settings,
        plugins: PluginHost,
        store: BridgeStore,
        agents: dict[str, AgentEndpoint],
        *,
        web: WebServer | None = None,
        start_web: Callable[[], Awaitable[object]] | None = None,
        start_timeout: float = 30.0,
        backoff: Backoff = Backoff(),
        instances: Instances | None = None,
    ) -> None:
        self.web = web or WebServer(settings.web)
        self._start_web = start_web or self.web.start
        routes = self.web.route_count
        self.channels = build_channels(settings, plugins, ChannelContext(self.web))
        self._needs_web = self.web.route_count > routes
        self.bridge = Bridge(
            agents,
            store,
            parse_routes(settings.bindings),
            start_timeout=start_timeout,
            backoff=backoff,
            updates=store,
            messages=store,
            instances=instances,
            follow_ups=store.follow_ups,
        )
        self.instances = instances
        """This instance among others on one PostgreSQL database; None where it runs alone."""
        self.inboxes: dict[str, ChannelInbox] = {}
        self.supervisors: list[Supervisor] = []
        self.listeners: list[asyncio.Task[None]] = []
        """The channels' supervised listeners; one ends only when its channel is done (the terminal's person left)."""

    async def start(self) -> None:
        inboxes = [(channel, ChannelInbox(self.bridge, channel)) for channel in self.channels]
        self.inboxes = {channel.name: inbox for channel, inbox in inboxes}
        if warning := unreachable_links(self.web.config, self.channels):
            log.warning(warning)
        if self.instances is not None:
            await self.instances.start(self._take_handoff, self._take_up)
        if self._needs_web:
            await self._start_web()
        for channel, inbox in inboxes:
            supervisor = Supervisor(f"channel {channel.name}", partial(channel.run, inbox), partial(self.bridge.channel_failed, channel))
            self.listeners.append(supervisor.start())
            self.supervisors.append(supervisor)
            self.bridge.background.spawn(self.bridge.reopening.reopen(channel), f"reopen:{channel.name}")

    async def channel_done(self) -> bool:
        """Wait until a channel's listener ends by itself (True: ``/quit`` or end of input at a console),
        or until every channel has stopped on a configuration error, such as a rejected token (False)."""
        pending = set(self.listeners)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(supervisor.config_error is None for task, supervisor in zip(self.listeners, self.supervisors) if task in done):
                return True
        return False

    async def _take_handoff(self, handoff: HandoffRecord) -> str | None:
        return await self.inboxes[handoff.channel].take_handoff(handoff)

    async def _take_up(self, dead: str, conversations: list[str], cut: list[HandoffRecord]) -> None:
        """Another instance died: its conversations go on here; what it was handed and had not finished is not run
        again (as for an update a crash cut short, dedupe.py), its conversation is told."""
        for channel in self.channels:
            await self.bridge.reopening.take_up(channel, dead, [key for key in conversations if key.startswith(f"{channel.name}:")])
        for handoff in (h for h in cut if h.kind in ("message", "press")):  # a request's asker says it got no answer
            if (inbox := self.inboxes.get(handoff.channel)) is None:
                continue
            event = inbox.handed_event(handoff)
            if inbox.allows(event.sender, event.conversation):
                await deliver(inbox.channel, event.conversation, INTERRUPTED)

    async def stop(self) -> None:
        for supervisor in self.supervisors:
            await supervisor.stop()
        await self.bridge.close()
        if self.instances is not None:
            await self.instances.stop()
        for channel in self.channels:
            await channel.close()
        await self.web.stop()

    async def __aenter__(self) -> BridgeService:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def run_bridge(service: BridgeService) -> int:
    """Run until SIGINT or SIGTERM, until a channel is done (``/quit`` or end of input at a console channel),
    or until every channel has stopped on a configuration error (then 2)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with service:
        print(f"wld bridge: running {', '.join(c.name for c in service.channels)}; Ctrl-C stops", file=sys.stderr)
        stopping = asyncio.ensure_future(stop.wait())
        done = asyncio.ensure_future(service.channel_done())
        await asyncio.wait([stopping, done], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        done.cancel()
        if not stop.is_set() and done.done() and not done.result():
            print(NO_CHANNEL_LEFT, file=sys.stderr)
            return 2
    return 0
