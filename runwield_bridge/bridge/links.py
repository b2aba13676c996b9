"""Whether the review links a bridge sends can be opened where its people read them."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from ..config import WebConfig
from ..web.server import split_listen
from ..channels.contract import Channel


def unreachable_links(web: WebConfig, channels: Sequence[Channel]) -> str | None:
    """A warning when links would name a loopback (or unspecified) address but people read them on another device."""
    if web.public_url:
        return None
    host, _ = split_listen(web.listen)
    try:
        address = ipaddress.ip_address(host)
        local_only = address.is_loopback or address.is_unspecified
    except ValueError:
        local_only = host.casefold() == "localhost"
    remote = [channel.name for channel in channels if not channel.capabilities.local]
    if not local_only or not remote:
        return None
    return (
        f"Review links will say {web.base_url}, which a phone or another computer cannot open, and {', '.join(remote)} "
        "is read there. Set web.public_url to the address people reach this bridge's [web] server at "
        "(for example https://wield.example.com behind a reverse proxy or tunnel)."
    )
