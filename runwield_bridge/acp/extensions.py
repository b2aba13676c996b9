"""RunWield's ACP extension vocabulary, defined once: every ``_meta`` key and extension method.

The ACP server builds its messages from these definitions and the Bridge reads them through the
same ones, so the two sides cannot drift apart. Clients that do not know them lose nothing: the
text of each update already says everything in plain words.

To add a key: a pydantic model (or a plain type) for its value and one ``MetaKey`` line below.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from acp.schema import PromptRequest
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints, TypeAdapter, ValidationError

NAMESPACE = "runwield"
T = TypeVar("T")
NoticeLevel = Literal["info", "success", "warning", "error"]


class MetaKey(Generic[T]):
    """One key of ``_meta.runwield``: its wire name and the type of its value."""

    def __init__(self, name: str, value_type: Any) -> None:
        self.name = name
        self.adapter: TypeAdapter[T] = TypeAdapter(value_type)

    def meta(self, value: T) -> dict[str, Any]:
        """The ``_meta`` object carrying this key with ``value``."""
        return {NAMESPACE: {self.name: self.adapter.dump_python(value, mode="json", by_alias=True, exclude_none=True)}}

    def read(self, item: Any) -> T | None:
        """The value on an update, command or other message (an SDK model or a dict); None if absent or malformed."""
        try:
            return self.read_strict(meta_of(item))
        except ValidationError:
            return None

    def read_strict(self, meta: dict[str, Any] | None) -> T | None:
        """The value in a ``_meta`` object; None if absent, ValidationError if malformed."""
        ours = (meta or {}).get(NAMESPACE)
        value = ours.get(self.name) if isinstance(ours, dict) else None
        return None if value is None else self.adapter.validate_python(value)

    @property
    def field(self) -> str:
        """Where the key sits, for error messages."""
        return f"_meta.{NAMESPACE}.{self.name}"


class _Camel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PlanLinkMeta(_Camel):
    """On an ``agent_message_chunk`` whose text carries a Plan's review link: a button where possible."""

    url: str
    plan_id: str = Field(alias="planId")
    revision: int
    expires_at: str = Field(alias="expiresAt")
    label: str = "Review the Plan"


class ArtifactReviewMeta(_Camel):
    """On an ``agent_message_chunk`` whose text carries an Artifact Review's link: a button where possible."""

    url: str
    path: str
    expires_at: str = Field(alias="expiresAt")
    label: str = "Review the file"


class PlanActionMeta(_Camel):
    """A next step of a saved Plan: its label and the slash command (a prompt) that takes it."""

    label: str
    command: str


class PlanSavedMeta(_Camel):
    """On an ``agent_message_chunk`` that is a message of its own saying a Plan revision was saved: its next steps can be
    offered as buttons that send their command (the text already names the commands for plain clients)."""

    plan_id: str = Field(alias="planId")
    revision: int
    title: str
    summary: str = ""
    actions: list[PlanActionMeta] = []


class QuestionMeta(_Camel):
    """On an ``agent_message_chunk`` that is a chat menu: which question, asked or asked again (and why)."""

    id: str
    state: Literal["asked", "unmatched", "other"]


class TurnMeta(_Camel):
    """On a ``session_info_update``: a turn of the Session ended (whoever started it)."""

    state: Literal["settled"] = "settled"
    stop_reason: str = Field(alias="stopReason")


class ChildMeta(_Camel):
    """On a ``tool_call`` or ``tool_call_update`` that is a one-shot child Session's progress line: which child, on
    which agent, its task, and how far it is (``running``, ``done``, ``failed``, ``cancelled``)."""

    session_id: str = Field(alias="sessionId")
    agent: str
    task: str
    state: Literal["running", "done", "failed", "cancelled"]


class SpawnedMeta(_Camel):
    """On an ``agent_message_chunk`` that is a message of its own naming the Session a ``/spawn`` started (or
    continued): which, on which agent, its task and project, and whether the client should open it (``here``) or list
    it beside this one (``thread``)."""

    session_id: str = Field(alias="sessionId")
    agent: str
    task: str
    place: Literal["here", "thread"]
    cwd: str


PLAN_LINK: MetaKey[PlanLinkMeta] = MetaKey("planLink", PlanLinkMeta)
ARTIFACT_REVIEW: MetaKey[ArtifactReviewMeta] = MetaKey("artifactReview", ArtifactReviewMeta)
PLAN_SAVED: MetaKey[PlanSavedMeta] = MetaKey("planSaved", PlanSavedMeta)
QUESTION: MetaKey[QuestionMeta] = MetaKey("question", QuestionMeta)
TURN: MetaKey[TurnMeta] = MetaKey("turn", TurnMeta)
CHILD: MetaKey[ChildMeta] = MetaKey("child", ChildMeta)
SPAWNED: MetaKey[SpawnedMeta] = MetaKey("spawned", SpawnedMeta)
NOTICE: MetaKey[NoticeLevel] = MetaKey("notice", NoticeLevel)
"""On an ``agent_message_chunk`` that is a notice: its level (``error``: the agent's own words that something failed)."""
ALIASES: MetaKey[list[str]] = MetaKey("aliases", list[str])
"""On an ``AvailableCommand``: the other names it answers to."""
ARCHIVED: MetaKey[bool] = MetaKey("archived", StrictBool)
"""On a ``SessionInfo``: the Session is archived (``session/delete``)."""
INCLUDE_ARCHIVED: MetaKey[bool] = MetaKey("includeArchived", StrictBool)
"""On ``session/list`` params: list archived Sessions too (the standard has no archive)."""

REQUEST_ID: MetaKey[str] = MetaKey("requestId", Annotated[str, StringConstraints(min_length=1, max_length=200)])
"""On the params of a mutating request: the client's id for this action; a repeat gets the recorded answer, never a second effect."""
REVISION: MetaKey[int] = MetaKey("revision", Annotated[StrictInt, Field(ge=0)])
"""On the params of a Session's request: the transcript revision the client saw (a newer one: ``CONFLICT_CODE``).
On answers that concern a Session (``session/new``, ``session/load``, ``session/resume``, ``session/prompt``): its revision now."""
PROJECT: MetaKey[str] = MetaKey("project", str)
"""On the params of a Session's request: the project directory the client acts in (another one: ``CONFLICT_CODE``)."""

CONFLICT_CODE = -32003
"""The one JSON-RPC error code for an action refused because the client's view is out of date or points elsewhere."""
ConflictReason = Literal["staleRevision", "otherProject", "requestIdReused", "inProgress"]


class ConflictData(_Camel):
    """The ``data`` of a ``CONFLICT_CODE`` error: why, and what is true now."""

    reason: ConflictReason
    session_id: str | None = Field(None, alias="sessionId")
    revision: int | None = None
    """The Session's revision now (``staleRevision``)."""
    project: str | None = None
    """The Session's project directory (``otherProject``)."""


class WorkspaceSupport(_Camel):
    """``_meta.runwield.workspace`` of the ``initialize`` answer: what a Workspace client can rely on."""

    version: Literal[1] = 1
    request_ids: bool = Field(True, alias="requestIds")
    """Mutating requests honour ``_meta.runwield.requestId`` (recorded answers, kept across restarts)."""
    revisions: bool = True
    """Session requests honour ``_meta.runwield.revision`` and ``_meta.runwield.project``; answers carry the revision."""
    conflict_code: int = Field(CONFLICT_CODE, alias="conflictCode")
    history: str | None = None
    """The bounded-history method's wire name (``_runwield/history``): a Session's latest entries, older ones on request."""


WORKSPACE: MetaKey[WorkspaceSupport] = MetaKey("workspace", WorkspaceSupport)


class SteeringSupport(_Camel):
    """Top-level ``_meta.steering`` of the ``initialize`` answer (the steering proposal's own key, not ours)."""

    supported: bool


STEERING_SUPPORT_KEY = "steering"


def initialize_meta() -> dict[str, Any]:
    """The ``initialize`` answer's ``_meta``: ``_session/steering`` and the Workspace capability."""
    return {STEERING_SUPPORT_KEY: SteeringSupport(supported=True).model_dump(by_alias=True), **WORKSPACE.meta(WorkspaceSupport(history=f"_{HISTORY.name}"))}


class SteeringAnswer(_Camel):
    """The answer to ``_session/steering``: the input joined the running turn, or needs an ordinary prompt."""

    outcome: Literal["injected", "promptRequired"]
    reason: Literal["noRunningTurn", "questionPending"] | None = None


class ExtMethod(Generic[T]):
    """An extension method: its name (sent as ``_<name>``), the params model and the result model."""

    def __init__(self, name: str, params: type[BaseModel], result: type[BaseModel]) -> None:
        self.name = name
        self.params = params
        self.result = result


STEERING: ExtMethod[SteeringAnswer] = ExtMethod("session/steering", PromptRequest, SteeringAnswer)
"""``_session/steering``: the params of ``session/prompt``; add input to the running turn."""


def meta_of(item: Any) -> dict[str, Any]:
    """The ``_meta`` object of an SDK model or a dict; empty if absent."""
    raw = item.get("_meta") if isinstance(item, dict) else getattr(item, "field_meta", None)
    return raw if isinstance(raw, dict) else {}


class HistoryRequest(_Camel):
    """``_runwield/history`` params: the entries of a Session's saved conversation before ``before`` (default: the end)."""

    session_id: str = Field(alias="sessionId", min_length=1)
    before: int | None = Field(default=None, ge=0)
    limit: int = Field(default=50, ge=1, le=500)


class HistoryEntry(_Camel):
    """One entry of the saved conversation: its position (stable: the transcript only grows) and its ``session/update``."""

    index: int
    update: dict[str, Any]


class HistoryPage(_Camel):
    """``_runwield/history`` result: entries oldest first, and how many the conversation holds in all."""

    entries: list[HistoryEntry]
    total: int


HISTORY: ExtMethod[HistoryPage] = ExtMethod("runwield/history", HistoryRequest, HistoryPage)
"""``_runwield/history``: bounded history for the Workspace page (the latest N entries, older ones on request)."""
