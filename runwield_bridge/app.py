"""Assembles the Session Host from settings and plugins."""

from __future__ import annotations

from dataclasses import dataclass

from .config import ConfigError, Settings
from .core.catalog import ModelCatalog, agent_profile, model_info
from .core.commands import CommandRegistry
from .core.metrics import WorkflowMetrics
from .core.execution import Executor
from .core.plan_commands import PlanCommands
from .core.plan_execution import ChatExecution
from .core.plans import PlanBook
from .core.reviews import ReviewHub
from .core.sessions import SessionHost
from .core.store import Store
from .core.tools import WORKTREE_TOOLS
from .host import PluginHost, load_plugins
from .plugins import workflow
from .runtimes.native import NativeRuntime
from .web.pages import LazyReviewServer


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


@dataclass
class App:
    """Everything a `wld` command needs: settings, plugins, the store, the Session Host and the Plan workflow."""

    settings: Settings
    plugins: PluginHost
    store: Store
    host: SessionHost
    plans: PlanBook
    reviews: ReviewHub
    executor: Executor
    review_pages: LazyReviewServer

    @classmethod
    async def start(cls, settings: Settings, plugins: PluginHost | None = None) -> App:
        plugins = plugins or load_plugins(settings.plugins.allow, settings.plugins.block)
        catalog = build_catalog(settings, plugins)
        for key, check in (("model", catalog.info), ("agent", agent_profile)):
            try:
                check(getattr(settings.sessions, key))
            except ValueError as exc:  # before anything is created: a configuration error changes nothing
                raise ConfigError(f"sessions.{key}: {exc}") from None
        store = await Store.open(settings.db_url)
        plans = PlanBook(store, settings.state_dir)
        reviews = ReviewHub(store, plans)
        review_pages = LazyReviewServer(settings.web, reviews)
        validation = settings.validation
        executor = Executor(store, plans, settings.state_dir, validation.commands, validation.timeout)
        execution = ChatExecution(plans, executor)
        plugins.bind(workflow.PlanWorkflow(PlanCommands(plans, reviews, execution)), workflow.NAME)
        try:
            host = SessionHost(
                store,
                catalog,
                plugins.tools(),
                settings.state_dir,
                settings.sessions.model,
                settings.sessions.agent,
                runtime=NativeRuntime(catalog),
                commands=CommandRegistry(plugins.commands()),
                metrics=WorkflowMetrics.in_state_dir(settings.state_dir, settings.workflow_metrics),
                question_timeout=settings.sessions.question_timeout or None,
                work_tools=WORKTREE_TOOLS,
                message_route=execution.message_route,
                load_checks=(execution.on_load,),
            )
        except ValueError as exc:
            plugins.unbind(workflow.NAME)
            await store.close()
            raise ConfigError(f"sessions: {exc}") from None
        return cls(settings, plugins, store, host, plans, reviews, executor, review_pages)

    async def close(self) -> None:
        self.plugins.unbind(workflow.NAME)
        await self.host.shutdown()
        await self.review_pages.stop()
        await self.store.close()
