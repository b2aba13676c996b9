"""The composition root: the Session Host assembled from settings and plugins, and the Bridge wired to it in process.

The ACP SDK and the Bridge are imported where they are wired, so commands that need neither never load them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import ConfigError, Settings
from .core.catalog import ModelCatalog, agent_profile, model_info
from .core.children import CHILD_TOOLS
from .core.commands import CommandRegistry
from .core.metrics import WorkflowMetrics
from .core.execution import Executor
from .core.plan_commands import PlanCommands
from .core.plan_execution import ChatExecution
from .core.plans import PlanBook
from .core.logins import LOGIN_TOKEN_TTL
from .core.artifact_reviews import ArtifactReviews
from .core.code_review_chat import CodeReviewChat
from .core.code_reviews import CodeReviewHub
from .core.reviews import ReviewHub, ReviewUnavailable
from .core.sessions import SessionHost
from .core.store import Store
from .core.tool_gate import ToolRules
from .core.tool_servers import StdioServerSpec, ToolServers
from .core.vision import Attachments, Vision
from .plugin_host import PluginHost, load_plugins
from .plugins import workflow
from .runtimes.choice import NATIVE, PREFIX, RuntimeChoices
from .runtimes.native import NativeRuntime
from .runtimes.switch import RuntimeSwitch
from .web.pages import LazyReviewServer

if TYPE_CHECKING:
    from acp.connection import StreamEvent

    from .acp.client import AgentEndpoint, BridgeClient, Connected
    from .bridge.instances import Instances
    from .core.logins import WorkspaceLogins
    from .runtimes.acp_agents import ExternalAgents


async def start_mcp_servers(specs: Sequence[StdioServerSpec], cwd: Path) -> ToolServers:
    """A client's stdio MCP servers; the ``mcp`` SDK is imported only when a client brings one."""
    from .runtimes.mcp_servers import start_mcp_servers as start

    return await start(specs, cwd)


def checked_fallback(settings: Settings, catalog: ModelCatalog) -> str | None:
    """``[sessions] vision_fallback``: a known model that sees images, or a configuration error."""
    name = settings.sessions.vision_fallback
    if name is None:
        return None
    try:
        info = catalog.info(name)
    except ValueError as exc:
        raise ConfigError(f"sessions.vision_fallback: {exc}") from None
    if not info.vision:
        raise ConfigError(f"sessions.vision_fallback: the model {name!r} cannot see images (set vision = true in [models.{name}])")
    return name


def build_catalog(settings: Settings, plugins: PluginHost) -> ModelCatalog:
    """Models from plugins, then ``[models.NAME]`` entries built by their provider."""
    catalog = ModelCatalog()
    for info, factory in plugins.models():
        catalog.add(info, factory)
    providers = plugins.providers()
    for name, entry in settings.models.items():
        if entry.provider not in providers:
            known = ", ".join(sorted(providers)) or "none"
            raise ConfigError(f"models.{name}.provider: no plugin provides {entry.provider!r} (known providers: {known})")
        catalog.add(model_info(name, entry, default_window=None), lambda name=name, entry=entry: providers[entry.provider](name, entry))
    return catalog


def check_runtime(settings: Settings) -> None:
    """``sessions.runtime`` is ``native`` or ``acp:NAME`` for a configured agent; a runtime is never a model."""
    if settings.sessions.model.startswith(PREFIX):
        raise ConfigError(f"sessions.model: {settings.sessions.model!r} is a runtime, not a model; set sessions.runtime to it instead")
    runtime = settings.sessions.runtime
    if runtime == NATIVE:
        return
    name = runtime.removeprefix(PREFIX)
    if not runtime.startswith(PREFIX) or name not in settings.agents:
        known = ", ".join(f"acp:{agent}" for agent in settings.agents)
        raise ConfigError(f"sessions.runtime: {runtime!r} is not a runtime; choose native{', ' + known if known else ''}")


def check_agent_tools(settings: Settings, known: set[str]) -> None:
    """Every ``[agents.NAME] tools`` entry names a tool RunWield has."""
    for name, agent in settings.agents.items():
        if unknown := [tool for tool in agent.tools if tool not in known]:
            raise ConfigError(f"agents.{name}.tools: no tool {', '.join(map(repr, unknown))} (tools: {', '.join(sorted(known))})")


@dataclass
class App:
    """Everything a `wld` command needs: settings, plugins, the store, the Session Host and the Plan workflow."""

    settings: Settings
    plugins: PluginHost
    store: Store
    session_host: SessionHost
    plans: PlanBook
    reviews: ReviewHub
    executor: Executor
    review_pages: LazyReviewServer
    external_agents: ExternalAgents

    @classmethod
    async def start(cls, settings: Settings, plugins: PluginHost | None = None) -> App:
        plugins = plugins or load_plugins(settings.plugins.allow, settings.plugins.block)
        catalog = build_catalog(settings, plugins)
        catalog.external = tuple(settings.agents)
        check_runtime(settings)
        for key, check in (("model", catalog.info), ("agent", agent_profile)):
            try:
                check(getattr(settings.sessions, key))
            except ValueError as exc:  # before anything is created: a configuration error changes nothing
                raise ConfigError(f"sessions.{key}: {exc}") from None
        vision = Vision(catalog, Attachments(settings.state_dir / "attachments"), checked_fallback(settings, catalog))
        store = await Store.open(settings.db_url)
        plans = PlanBook(store, settings.state_dir)
        reviews = ReviewHub(store, plans)
        code_reviews = CodeReviewHub(store, plans, reviews)
        artifacts = ArtifactReviews(store, reviews)
        review_pages = LazyReviewServer(settings.web, reviews, artifacts, code_reviews)
        validation = settings.validation
        executor = Executor(store, plans, settings.state_dir, validation.commands, validation.timeout)
        execution = ChatExecution(plans, executor, CodeReviewChat(code_reviews))
        plugins.bind(workflow.PlanWorkflow(PlanCommands(plans, reviews, execution), artifacts), workflow.NAME)
        from .runtimes.acp import AcpRuntime  # the ACP SDK, loaded only by commands that run turns
        from .runtimes.acp_agents import ExternalAgents
        from .runtimes.mode_command import agent_commands
        from .runtimes.own_choices import AgentRuntimes

        tools = plugins.tools()
        try:
            check_agent_tools(settings, {*(tool.spec.name for tool in tools), *CHILD_TOOLS})
        except ConfigError:
            plugins.unbind(workflow.NAME)
            await store.close()
            raise
        external_agents = ExternalAgents(settings.agents)
        choices = RuntimeChoices(store.bridge, settings.sessions.runtime)
        runtimes = AgentRuntimes(choices, external_agents)
        try:
            host = SessionHost(
                store,
                catalog,
                tools,
                settings.state_dir,
                settings.sessions.model,
                settings.sessions.agent,
                runtime=RuntimeSwitch(NativeRuntime(catalog, store.summaries, settings.sessions.compact_at), AcpRuntime(external_agents, choices), choices),
                runtimes=runtimes,
                commands=CommandRegistry(agent_commands(runtimes, plugins.commands())),
                metrics=WorkflowMetrics.in_state_dir(settings.state_dir, settings.workflow_metrics),
                question_timeout=settings.sessions.question_timeout or None,
                tool_rules=ToolRules(tuple(settings.tools.allow), tuple(settings.tools.allow_writes)),
                command_timeout=settings.tools.command_timeout,
                message_route=execution.message_route,
                load_checks=(execution.on_load,),
                start_tool_servers=start_mcp_servers,
                vision=vision,
            )
        except ValueError as exc:
            plugins.unbind(workflow.NAME)
            await store.close()
            raise ConfigError(f"sessions: {exc}") from None
        return cls(settings, plugins, store, host, plans, reviews, executor, review_pages, external_agents)

    async def close(self) -> None:
        self.plugins.unbind(workflow.NAME)
        await self.session_host.shutdown()
        await self.external_agents.close()
        await self.review_pages.stop()
        await self.store.close()


class InProcessAgent:
    """The built-in Session Host on an in-memory ACP pipe: the same protocol an IDE speaks, no process."""

    description = "built-in Session Host (in process)"

    def __init__(self, session_host: SessionHost) -> None:
        self.session_host = session_host

    @contextlib.asynccontextmanager
    async def open(self, client: BridgeClient, observers: list[Callable[[StreamEvent], None]]) -> AsyncIterator[Connected]:
        from .acp.client import client_connection
        from .acp.serve import in_memory_agent

        async with in_memory_agent(self.session_host) as transport:
            conn = client_connection(client, transport, observers)
            forever: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            try:
                yield conn, forever
            finally:
                forever.cancel()
                await conn.close()


def bridge_instances(store: Store) -> Instances | None:
    """``wld bridge`` among the other instances on the same PostgreSQL database; None on SQLite (one instance)."""
    from .bridge.instances import Instances

    return None if store.instances is None else Instances(store.instances, store.notifier)


def agent_endpoints(settings: Settings, session_host: SessionHost) -> dict[str, AgentEndpoint]:
    """``runwield`` (the in-process Session Host) and every ``[agents.NAME]``."""
    from .acp.client import CommandAgent
    from .bridge.bridge import BUILTIN_AGENT
    from .runtimes.agent_adapters import adapter_for

    endpoints: dict[str, AgentEndpoint] = {BUILTIN_AGENT: InProcessAgent(session_host)}
    for name, config in settings.agents.items():
        if name == BUILTIN_AGENT:
            raise ConfigError(f"agents.{name}: this name is the built-in Session Host; choose another")
        endpoints[name] = CommandAgent(adapter_for(config).launch(config))
    return endpoints


async def run_chat(session_host: SessionHost, session_id: str | None = None, cwd: str | None = None) -> int:
    """``wld chat``: the console channel on a Bridge whose only agent is the in-process Session Host."""
    from .bridge.bindings import MemoryBindings
    from .bridge.bridge import BUILTIN_AGENT, Bridge
    from .bridge.inbox import ChannelInbox
    from .channels.console.channel import ConsoleChannel, ConsoleSettings
    from .channels.types import BridgeError

    channel = ConsoleChannel(ConsoleSettings(cwd=cwd), session_id)
    bridge = Bridge({BUILTIN_AGENT: InProcessAgent(session_host)}, MemoryBindings())
    try:
        await channel.run(ChannelInbox(bridge, channel))
        return 0
    except BridgeError as exc:
        print(f"wld chat: {exc}", file=sys.stderr)
        return 1
    finally:
        await bridge.close()
        await channel.close()


async def start_workspace(app: App) -> tuple[str, WorkspaceLogins]:
    """The Workspace (login link, page, ACP over a WebSocket at ``/acp``) on the process's web server, which starts
    now if it has not: its base URL, and the logins that mint login links."""
    from .core.logins import WorkspaceLogins
    from .web.workspace import add_workspace_routes
    from .web.workspace_page import add_page_assets

    logins = WorkspaceLogins(app.store.workspace)
    server = app.review_pages.server
    add_workspace_routes(server, app.session_host, logins, page=add_page_assets(server))
    try:
        return await app.review_pages.base_url(), logins
    except ReviewUnavailable as exc:
        raise ConfigError(str(exc)) from None


async def open_workspace(app: App, *, open_browser: bool = False) -> str:
    """The Workspace started (``start_workspace``); a one-time login link is printed (and opened in the web browser
    if asked) and returned."""
    import webbrowser

    from .web.workspace import login_url

    base_url, logins = await start_workspace(app)
    url = login_url(base_url, await logins.mint_token())
    print(f"Log in to the Workspace with this link (it works once, within {int(LOGIN_TOKEN_TTL // 60)} minutes):\n{url}", flush=True)
    if open_browser:
        webbrowser.open(url)
    return url


async def serve_workspace(app: App, *, open_browser: bool) -> int:
    """``wld workspace``: the Workspace and the review pages on ``[web] listen``, served until Ctrl-C."""
    await open_workspace(app, open_browser=open_browser)
    print("Serving the Workspace; press Ctrl-C to stop.", flush=True)
    await asyncio.Event().wait()
    return 0
