"""The Slack channel plugin (slack-bolt and slack-sdk, the ``slack`` extra)."""

from __future__ import annotations

from typing import Any

from ...hookspecs import hookimpl
from ..contract import Channel, ChannelContext
from ..platform import import_platform
from ..settings import parse_section
from .settings import SlackSettings


def build(section: dict[str, Any], context: ChannelContext) -> Channel:
    """A SlackChannel for ``[channels.slack]``; slack-bolt is imported only now."""
    settings = parse_section(SlackSettings, section, "channels.slack")
    channel_class = import_platform("slack", f"{__name__}.channel", "SlackChannel", ("slack_bolt", "slack_sdk"))
    return channel_class(settings, context)


@hookimpl
def register_channels(register: Any) -> None:
    """Register the Slack channel."""
    register("slack", build)
