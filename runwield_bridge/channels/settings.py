"""The keys every ``[channels.NAME]`` section shares, and how a section is checked."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator

from ..config import ConfigError, Strict, describe_errors
from .allowlist import Allowlist

Id = int | str
QueueMode = Literal["steer", "collect", "followup", "interrupt"]
"""What happens to a message sent while the conversation's turn runs (``bridge/follow_ups.py``)."""


class ChannelSettings(Strict):
    """Keys every ``[channels.NAME]`` section has; a channel's own model adds its platform keys."""

    agent: str = "runwield"
    cwd: str | None = None
    allowed_users: list[Id] = Field(default_factory=list)
    allowed_chats: list[Id] = Field(default_factory=list)
    sender_context: Literal["groups", "always", "never"] = "groups"
    question_timeout: float = Field(900.0, gt=0)
    permission_timeout: float = Field(900.0, gt=0)
    edit_interval: float = Field(1.0, ge=0)
    stranger_notice_interval: float = Field(3600.0, ge=0)
    queue: QueueMode = "steer"

    @field_validator("allowed_users", "allowed_chats")
    @classmethod
    def _ids_as_strings(cls, values: list[Id]) -> list[str]:
        return [str(value) for value in values]

    def allowlist(self) -> Allowlist:
        """Who may reach an agent through this channel."""
        return Allowlist(self.allowed_users, self.allowed_chats)

    @property
    def credential(self) -> str | None:
        """What every instance serving this channel is configured with and the database never holds (its bot token):
        messages handed between instances are sealed with a key made from it. None where there is none (the terminal)."""
        return None


S = TypeVar("S", bound=Strict)


def parse_section(model: type[S], raw: dict[str, Any], where: str) -> S:
    """Validate one config section; errors name the key, e.g. ``channels.telegram.tokn: unknown key``."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, where)) from None
