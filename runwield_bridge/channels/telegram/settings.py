"""``[channels.telegram]``: the keys every channel has, plus the Bot API's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..settings import ChannelSettings

DEFAULT_API = "https://api.telegram.org/bot"


class TelegramSettings(ChannelSettings):
    """Token, Bot API server, and how updates arrive (long polling, or a webhook on ``[web] listen``)."""

    token: str = Field(min_length=1)
    api_base_url: str = DEFAULT_API
    file_base_url: str | None = None
    mode: Literal["polling", "webhook"] = "polling"
    webhook_path: str = Field("/telegram/webhook", pattern=r"^/")
    webhook_secret: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,256}$")
    poll_timeout: float = Field(30.0, gt=0)
    require_mention: bool = True

    @property
    def credential(self) -> str:
        return self.token

    @property
    def files_url(self) -> str:
        """Where files are downloaded: ``file_base_url``, else ``api_base_url`` with ``/bot`` -> ``/file/bot``."""
        if self.file_base_url:
            return self.file_base_url
        base = self.api_base_url.rstrip("/")
        return f"{base.removesuffix('/bot')}/file/bot" if base.endswith("/bot") else f"{base}/file"
