"""The Slack channel plugin (slack-bolt and slack-sdk, the ``slack`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..platform import platform_channel
from .settings import SlackSettings

build = platform_channel("slack", SlackSettings, f"{__name__}.channel", "SlackChannel", ("slack_bolt", "slack_sdk"))


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Slack channel."""
    register("slack", build)
