"""discord.py's errors sorted: what may pass (retried) and what is Discord's final word on the configuration (stops)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import discord

from ..types import ChannelMisconfigured, CredentialsRejected, Unavailable

INTENTS_SETTING = "the bot's Message Content intent (Discord Developer Portal, Bot page)"
GATEWAY_REFUSALS = {4010: "invalid shard", 4011: "sharding required", 4012: "invalid API version", 4013: "invalid intents"}
"""Gateway close codes discord.py does not reconnect after, besides 4004 (the token) and 4014 (privileged intents)."""


def sorted_out(exc: Exception, channel: str) -> Exception:
    """``exc`` as the channel contract sees it: a configuration error for Discord's refusals (401, 403, 404 and other
    4xx but 429; the gateway's auth and intent close codes), Unavailable for 5xx, rate limits and dropped gateways;
    anything else as it is."""
    if isinstance(exc, discord.LoginFailure) or (isinstance(exc, discord.ConnectionClosed) and exc.code == 4004):
        return CredentialsRejected(f"channels.{channel}.token", "Discord")
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return ChannelMisconfigured(INTENTS_SETTING, "Discord", "it is not turned on for this bot, and the bridge reads messages")
    if isinstance(exc, discord.ConnectionClosed) and exc.code in GATEWAY_REFUSALS:
        return ChannelMisconfigured(f"channels.{channel}.gateway_url", "Discord", f"gateway closed with {exc.code}: {GATEWAY_REFUSALS[exc.code]}")
    if isinstance(exc, discord.HTTPException) and 400 <= exc.status < 500 and exc.status != 429:
        key = "api_base_url" if exc.status == 404 else "token"
        return ChannelMisconfigured(f"channels.{channel}.{key}", "Discord", f"HTTP {exc.status}: {exc.text or type(exc).__name__}")
    if isinstance(exc, (discord.HTTPException, discord.RateLimited, discord.GatewayNotFound, discord.ConnectionClosed)):
        return Unavailable(f"Discord could not be reached or failed ({type(exc).__name__}: {exc})")
    return exc


@contextlib.contextmanager
def refusals(channel: str) -> Iterator[None]:
    """Raise discord.py's errors inside as ``sorted_out`` says."""
    try:
        yield
    except discord.DiscordException as exc:
        raise sorted_out(exc, channel) from None
