"""The plugin host: built-in plugins, entry-point plugins, allow and block lists."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pluggy

from . import hookspecs

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "runwield_bridge"
DEFAULT_PLUGINS: tuple[str, ...] = (
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


@dataclass(frozen=True, slots=True)
class FailedPlugin:
    """A plugin that could not be loaded, and why."""

    name: str
    source: str
    error: str


class PluginHost:
    """A typed wrapper around pluggy's manager; the only place that calls ``pm.hook``."""

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
            self._load(module_name, "built-in", lambda name=module_name: importlib.import_module(name))

    def load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "unknown distribution"
            self._load(ep.name, f"entry point {ep.value} ({dist})", ep.load)

    def register(self, plugin: ModuleType | object, name: str, source: str = "registered") -> None:
        """Register an already imported plugin object (used by tests and embedders)."""
        self._load(name, source, lambda: plugin)

    def _load(self, name: str, source: str, load: Callable[[], Any]) -> None:
        short = name.rsplit(".", 1)[-1]
        if name in self.block or short in self.block or (
            self.allow is not None and name not in self.allow and short not in self.allow
        ):
            self.blocked.append(name)
            return
        try:
            plugin = load()
            self.pm.register(plugin, name=name)
        except Exception as exc:  # a broken plugin must not take the others down
            log.error("plugin %s (%s) failed to load: %s", name, source, exc)
            self.failed.append(FailedPlugin(name, source, f"{type(exc).__name__}: {exc}"))
            return
        hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))
        self.loaded.append(LoadedPlugin(name, source, hooks))

    def collect(self, hook_name: str) -> list[tuple[Any, ...]]:
        """Call a registration hook and return everything its implementations registered."""
        registered: list[tuple[Any, ...]] = []

        def register(*args: Any) -> None:
            registered.append(args)

        getattr(self.pm.hook, hook_name)(register=register)
        return registered


def load_plugins(allow: Iterable[str] | None = None, block: Iterable[str] = ()) -> PluginHost:
    """Load the built-in plugins and those installed under the entry-point group."""
    host = PluginHost(allow, block)
    host.load_defaults()
    host.load_entry_points()
    return host
