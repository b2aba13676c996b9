"""``[channels.discord]``: the keys every channel has, plus the bot token, roles, DMs, bots and test hooks."""

from __future__ import annotations

from pydantic import Field

from ..allowlist import Allowlist
from ..settings import ChannelSettings, Id


class DiscordSettings(ChannelSettings):
    """Bot token; who may talk to it (users, roles, channels); and, for tests, where the API and gateway are."""

    token: str = Field(min_length=1)
    allowed_chats: list[Id] = Field(default_factory=list, validation_alias="allowed_channels")
    allowed_roles: list[Id] = Field(default_factory=list)
    allow_dms: bool = False
    allow_bots: bool = False
    """Let other bots' messages through (off, so two bots cannot answer each other forever)."""
    api_base_url: str | None = None
    """discord.py's REST base (``discord.http.Route.BASE``), e.g. a local fake's ``http://127.0.0.1:PORT/api/v10``."""
    gateway_url: str | None = None
    """The gateway WebSocket URL (``DiscordWebSocket.DEFAULT_GATEWAY``), for a local fake."""

    def allowlist(self) -> Allowlist:
        return Allowlist(self.allowed_users, self.allowed_chats, map(str, self.allowed_roles))

    @property
    def credential(self) -> str:
        return self.token
