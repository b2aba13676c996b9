"""Registration hooks: everything a plugin adds comes through one of these."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    from .channels.contract import ChannelFactory
    from .config import ModelConfig
    from .core.commands import Command
    from .core.models import Model, ModelInfo
    from .core.tools import Tool

hookspec = HookspecMarker("runwield_bridge")
hookimpl = HookimplMarker("runwield_bridge")

ModelFactory = Callable[[], "Model"]
"""Builds a registered model when a Session first uses it."""
ProviderFactory = Callable[[str, "ModelConfig"], "Model"]
"""Builds the model of a ``[models.NAME]`` entry: ``(NAME, entry) -> Model``."""


@hookspec
def register_models(register: Callable[[ModelInfo, ModelFactory], None]) -> None:
    """Register models: ``register(info, factory)``."""


@hookspec
def register_providers(register: Callable[[str, ProviderFactory], None]) -> None:
    """Register model providers for ``provider = "NAME"`` in ``[models.*]``: ``register(NAME, factory)``."""


@hookspec
def register_tools(register: Callable[[Tool], None]) -> None:
    """Register tools the native runtime offers models: ``register(tool)``."""


@hookspec
def register_commands(register: Callable[[Command], None]) -> None:
    """Register slash commands: ``register(command)``; the first to take a name or alias keeps it."""


@hookspec
def register_channels(register: Callable[[str, ChannelFactory], None]) -> None:
    """Register chat channels for ``[channels.NAME]``: ``register(NAME, factory)``."""
