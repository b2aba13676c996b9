"""A session's model: the agent's ``select`` config option of category ``model``, as a menu and by name."""

from __future__ import annotations

from typing import Any

from acp import RequestError

from ..channels.types import BridgeError, ModelChoice, ModelMenu
from .conversation import Conversation
from .shared_values import SharedValues
from .turn_errors import describe_error

OPTIONS: SharedValues[Any] = SharedValues()


async def choose_model(conversation: Conversation, conn: Any, value: str) -> str:
    """Switch the session's model through ``session/set_config_option``; returns what to tell the person."""
    option = conversation.model_option
    if option is None:
        raise BridgeError(f"Agent {conversation.agent} offers no model choice for this session.")
    try:
        response = await conn.set_config_option(config_id=option.id, session_id=conversation.session_id, value=value)
    except RequestError as exc:
        raise BridgeError(f"The model was not changed: {describe_error(exc)}") from None
    conversation.model_option = model_option(response.config_options) or option
    return f"Model: {model_name(conversation.model_option)}"


def model_menu(option: Any) -> ModelMenu | None:
    """The session's model choices; None if its agent offers none."""
    return ModelMenu(option.current_value, _model_choices(option)) if option is not None else None


def model_option(options: Any) -> Any:
    """The ``select`` config option of category ``model``, if the agent offers one (one copy for the sessions that
    describe the same: never changed in place, it is replaced by the next one the agent describes)."""
    option = next((o for o in options or () if getattr(o, "category", None) == "model" and getattr(o, "type", None) == "select"), None)
    return None if option is None else OPTIONS.shared(option.model_dump_json(), option)


def model_name(option: Any) -> str | None:
    """The current model as people read it: its choice's name, not the agent's internal value."""
    if option is None:
        return None
    return next((c.name for c in _model_choices(option) if c.value == option.current_value), option.current_value)


def _model_choices(option: Any) -> tuple[ModelChoice, ...]:
    """A select option's values, groups flattened."""
    flat = [choice for entry in option.options for choice in getattr(entry, "options", None) or (entry,)]
    return tuple(ModelChoice(c.value, c.name, c.description or "") for c in flat)
