"""RunWield's ACP extension vocabulary: the ``_meta.runwield`` keys of ``session/update``, defined once.

The Session Host's update builder writes them and the Bridge reads them, both through this module,
so the two sides cannot drift apart. Clients that do not know them lose nothing: the text of each
update already says everything in plain words.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

NAMESPACE = "runwield"
PLAN_LINK = "planLink"
TURN = "turn"
ALIASES = "aliases"
NOTICE = "notice"
PLAN_SAVED = "planSaved"
M = TypeVar("M", bound=BaseModel)


class PlanLinkMeta(BaseModel):
    """``_meta.runwield.planLink``: a Plan review link on the update whose text carries it (a button where possible)."""

    model_config = ConfigDict(populate_by_name=True)

    url: str
    plan_id: str = Field(alias="planId")
    revision: int
    expires_at: str = Field(alias="expiresAt")
    label: str = "Review the Plan"


class PlanActionMeta(BaseModel):
    """A next step of a saved Plan: its label and the slash command (a prompt) that takes it."""

    label: str
    command: str


class PlanSavedMeta(BaseModel):
    """``_meta.runwield.planSaved``: the update is a message of its own saying a Plan revision was saved; its next steps
    can be offered as buttons that send their command (the text already names the commands for plain clients)."""

    model_config = ConfigDict(populate_by_name=True)

    plan_id: str = Field(alias="planId")
    revision: int
    title: str
    summary: str = ""
    actions: list[PlanActionMeta] = []


class TurnMeta(BaseModel):
    """``_meta.runwield.turn`` on a ``session_info_update``: a turn of the Session ended (whoever started it)."""

    model_config = ConfigDict(populate_by_name=True)

    state: Literal["settled"] = "settled"
    stop_reason: str = Field(alias="stopReason")


def meta(key: str, value: BaseModel | str | list[str]) -> dict[str, Any]:
    """The ``_meta`` object carrying one RunWield key."""
    return {NAMESPACE: {key: value.model_dump(by_alias=True) if isinstance(value, BaseModel) else value}}


def turn_settled_update(stop_reason: str, updated_at: str) -> dict[str, Any]:
    """The ``session_info_update`` that says a turn ended with ``stop_reason``."""
    return {"sessionUpdate": "session_info_update", "updatedAt": updated_at, "_meta": meta(TURN, TurnMeta(stop_reason=stop_reason))}


def aliases_of(command: Any) -> tuple[str, ...]:
    """The other names an available command answers to (``_meta.runwield.aliases``; none if the agent gave none)."""
    aliases = _ours(command).get(ALIASES)
    return tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list) else ()


def is_error_notice(update: Any) -> bool:
    """Whether an update is an error notice (``_meta.runwield.notice``): the agent's own words that something failed."""
    return _ours(update).get(NOTICE) == "error"


def plan_link_of(update: Any) -> PlanLinkMeta | None:
    """The review link an update carries, if any (a malformed one is ignored: the text still has the URL)."""
    return _read(update, PLAN_LINK, PlanLinkMeta)


def plan_saved_of(update: Any) -> PlanSavedMeta | None:
    """The saved Plan an update announces, if any."""
    return _read(update, PLAN_SAVED, PlanSavedMeta)


def turn_of(update: Any) -> TurnMeta | None:
    """The end of a turn an update announces, if any."""
    return _read(update, TURN, TurnMeta)


def _ours(item: Any) -> dict[str, Any]:
    """``_meta.runwield`` of an update or command (an SDK model or a dict); empty if absent."""
    raw = item.get("_meta") if isinstance(item, dict) else getattr(item, "field_meta", None)
    ours = raw.get(NAMESPACE) if isinstance(raw, dict) else None
    return ours if isinstance(ours, dict) else {}


def _read(update: Any, key: str, model: type[M]) -> M | None:
    """``_meta.runwield.<key>`` as ``model``, if present and well formed."""
    value = _ours(update).get(key)
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
