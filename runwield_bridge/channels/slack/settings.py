"""``[channels.slack]``: the keys every channel has, plus the bot token and how events arrive."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from ..settings import ChannelSettings, Id

DEFAULT_API = "https://slack.com/api/"


class SlackSettings(ChannelSettings):
    """Events API over HTTP on ``[web] listen`` (checked with the signing secret), or Socket Mode with an app token."""

    bot_token: str = Field(min_length=1)
    signing_secret: str | None = None
    api_base_url: str = DEFAULT_API
    allowed_chats: list[Id] = Field(default_factory=list, validation_alias="allowed_channels")
    socket_mode: bool = False
    app_token: str | None = Field(None, pattern=r"^xapp-")
    user_token: str | None = Field(None, pattern=r"^xoxp-")
    """A user token (``xoxp-``, scope ``chat:write``) of someone allowed to delete others' messages (a workspace admin or
    owner): with it the reply to a secret question is deleted from the chat (a bot token may delete only its own)."""
    events_path: str = Field("/slack/events", pattern=r"^/")

    @property
    def credential(self) -> str:
        return self.bot_token

    @model_validator(mode="after")
    def _secret_for_the_mode(self) -> Self:
        if self.socket_mode and not self.app_token:
            raise ValueError("socket_mode = true needs app_token (an xapp- app-level token)")
        if not self.socket_mode and not self.signing_secret:
            raise ValueError("signing_secret is required to check Events API requests (or use socket_mode = true with app_token)")
        return self
