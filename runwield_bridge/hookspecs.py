"""Registration hooks: everything a plugin adds comes through one of these."""

from __future__ import annotations

from pluggy import HookimplMarker, HookspecMarker

hookspec = HookspecMarker("runwield_bridge")
hookimpl = HookimplMarker("runwield_bridge")


@hookspec
def register_models(register):
    """Register models: ``register(info: ModelInfo, factory: () -> Model)``."""


@hookspec
def register_providers(register):
    """Register model providers for ``[models.NAME]``: ``register(provider, factory: (name, ModelConfig) -> Model)``."""


@hookspec
def register_tools(register):
    """Register runtime tools: ``register(tool: Tool)``."""


@hookspec
def register_commands(register):
    """Register slash commands: ``register(command: Command)``; built-in names and aliases win."""


@hookspec
def register_channels(register):
    """Register chat channels for ``[channels.NAME]``: ``register(name, factory: (section: dict, context: ChannelContext) -> Channel)``."""
