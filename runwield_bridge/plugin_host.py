"""The plugin host: built-in plugins, entry-point plugins, allow and block lists, and one typed method per hook."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

from . import hookspecs
from .hookspecs import ModelFactory, ProviderFactory

if TYPE_CHECKING:
    from .channels.contract import ChannelFactory
    from .core.commands import Command
    from .core.models import ModelInfo
    from .core.tools import Tool

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "runwield_bridge"
BUILT_IN = "built-in"
CORE_PLUGIN = "runwield_bridge.plugins.builtins"
"""The core's own tools and commands: always loaded, whatever ``[plugins]`` allows or blocks."""
DEFAULT_PLUGINS: tuple[str, ...] = (
    CORE_PLUGIN,
    "runwield_bridge.plugins.scripted",
    "runwield_bridge.plugins.providers",
    "runwield_bridge.channels.console",
    "runwield_bridge.channels.telegram",
    "runwield_bridge.channels.discord",
    "runwield_bridge.channels.slack",
)


@dataclass(frozen=True, slots=True)
class LoadedPlugin:
    """A plugin that loaded, and where it came from."""

    name: str
    source: str
    hooks: tuple[str, ...]

    @property
    def built_in(self) -> bool:
        return self.source == BUILT_IN


@dataclass(frozen=True, slots=True)
class FailedPlugin:
    """A plugin that could not be loaded, and why."""

    name: str
    source: str
    error: str


T = TypeVar("T")


class PluginHost:
    """A typed wrapper around pluggy's manager, with one method per hook; the only place that calls hook implementations.

    Implementations are called one plugin at a time, built-in plugins first and then in load order, so every
    registration is attributed to its plugin and the first registration of a name keeps it (a clash is logged).
    """

    def __init__(self, allow: Iterable[str] | None = None, block: Iterable[str] = ()) -> None:
        self.pm = pluggy.PluginManager("runwield_bridge")
        self.pm.add_hookspecs(hookspecs)
        self.allow = set(allow) if allow is not None else None
        self.block = set(block)
        self.loaded: list[LoadedPlugin] = []
        self.failed: list[FailedPlugin] = []
        self.blocked: list[str] = []

    def load_defaults(self) -> None:
        for module_name in DEFAULT_PLUGINS:
            self._load(module_name, BUILT_IN, lambda name=module_name: importlib.import_module(name))

    def load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "unknown distribution"
            self._load(ep.name, f"entry point {ep.value} ({dist})", ep.load)

    def register(self, plugin: ModuleType | object, name: str, source: str = "registered") -> None:
        """Register an already imported plugin object (used by tests and embedders)."""
        self._load(name, source, lambda: plugin)

    def bind(self, plugin: object, name: str) -> None:
        """Register a built-in plugin bound to one App's state (its Plan workflow) until ``unbind``; a taken name raises."""
        self.pm.register(plugin, name=name)
        self.loaded.append(LoadedPlugin(name, BUILT_IN, self._hooks_of(plugin)))

    def unbind(self, name: str) -> None:
        """Forget a plugin ``bind`` registered (nothing when it is gone already: an App may be closed twice)."""
        if self.pm.has_plugin(name):
            self.pm.unregister(name=name)
        self.loaded = [p for p in self.loaded if p.name != name]

    def _filtered(self, name: str) -> bool:
        short = name.rsplit(".", 1)[-1]
        if name == CORE_PLUGIN:
            return False
        return name in self.block or short in self.block or (self.allow is not None and name not in self.allow and short not in self.allow)

    def _hooks_of(self, plugin: object) -> tuple[str, ...]:
        return tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))

    def _load(self, name: str, source: str, load: Callable[[], Any]) -> None:
        if self._filtered(name):
            self.blocked.append(name)
            return
        try:
            plugin = load()
            self.pm.register(plugin, name=name)
        except Exception as exc:  # a broken plugin must not take the others down
            log.error("plugin %s (%s) failed to load: %s", name, source, exc)
            self.failed.append(FailedPlugin(name, source, f"{type(exc).__name__}: {exc}"))
            return
        self.loaded.append(LoadedPlugin(name, source, self._hooks_of(plugin)))

    def models(self) -> list[tuple[ModelInfo, ModelFactory]]:
        """``register_models``: each model id once, the first registration keeping it."""
        return list(self._unique(self.pm.hook.register_models, "model", lambda info, factory: (info.id, (info, factory))).values())

    def providers(self) -> dict[str, ProviderFactory]:
        """``register_providers``: the factory of each provider name."""
        return self._unique(self.pm.hook.register_providers, "provider", lambda name, factory: (name, factory))

    def tools(self) -> list[Tool]:
        """``register_tools``: each tool name once."""
        return list(self._unique(self.pm.hook.register_tools, "tool", lambda tool: (tool.spec.name, tool)).values())

    def commands(self) -> list[Command]:
        """``register_commands``, each command marked with the plugin that registered it (the registry settles clashes)."""
        return [
            command if plugin.built_in else replace(command, source=f"plugin {plugin.name}")
            for plugin, (command,) in self._calls(self.pm.hook.register_commands)
        ]

    def channels(self) -> dict[str, ChannelFactory]:
        """``register_channels``: the factory of each channel name."""
        return self._unique(self.pm.hook.register_channels, "channel", lambda name, factory: (name, factory))

    def _unique(self, hook: pluggy.HookCaller, what: str, keyed: Callable[..., tuple[str, T]]) -> dict[str, T]:
        found: dict[str, T] = {}
        owners: dict[str, str] = {}
        for plugin, args in self._calls(hook):
            key, value = keyed(*args)
            if key in found:
                log.warning("%s %r from plugin %s ignored: plugin %s registered it first", what, key, plugin.name, owners[key])
                continue
            found[key], owners[key] = value, plugin.name
        return found

    def _calls(self, hook: pluggy.HookCaller) -> list[tuple[LoadedPlugin, tuple[Any, ...]]]:
        """Every ``register(...)`` call a hook's implementations make, with the plugin that made it."""
        implementations = {impl.plugin_name: impl for impl in hook.get_hookimpls()}
        calls: list[tuple[LoadedPlugin, tuple[Any, ...]]] = []
        for plugin in sorted(self.loaded, key=lambda p: not p.built_in):
            if impl := implementations.get(plugin.name):

                def register(*args: Any, plugin: LoadedPlugin = plugin) -> None:
                    calls.append((plugin, args))

                impl.function(**{arg: register for arg in impl.argnames})
        return calls


def load_plugins(allow: Iterable[str] | None = None, block: Iterable[str] = ()) -> PluginHost:
    """Load the built-in plugins and those installed under the entry-point group."""
    host = PluginHost(allow, block)
    host.load_defaults()
    host.load_entry_points()
    return host
