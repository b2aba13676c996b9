"""What the store hands out: plain frozen records, one per stored row. No SQL; safe for plugins and outer layers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

RECORD = dataclass(frozen=True, slots=True, kw_only=True)


@RECORD
class SessionRecord:
    """A Session as stored."""

    id: str
    title: str = ""
    cwd: str
    archived: bool = False
    agent: str
    model: str
    reasoning: str | None = None
    cost_usd: float = 0.0
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@RECORD
class TranscriptEntry:
    """One entry of a Session's append-only transcript."""

    id: int | None = None
    session_id: str
    kind: str  # user | agent | thought | tool | notice | question | question_settled
    text: str = ""
    data: str = "{}"
    created_at: float = field(default_factory=time.time)

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.data)


@RECORD
class Binding:
    """A conversation bound to an ACP session on an agent."""

    conversation: str
    agent: str
    acp_session_id: str
    cwd: str | None = None
    updated_at: float = field(default_factory=time.time)


@RECORD
class SeenUpdate:
    """A platform update a chat channel claimed before handling it, so a redelivery is handled once."""

    channel: str
    update_id: str
    owner: str
    """The bridge run that claimed it."""
    finished: bool = False
    claimed_at: float = field(default_factory=time.time)


@RECORD
class UnfinishedMessage:
    """A chat message a bridge showed that is not finished yet (a reply still streaming, a question still open)."""

    channel: str
    message_id: str
    conversation: str
    text: str
    kind: str
    """``reply`` or ``question``."""
    updated_at: float = field(default_factory=time.time)
    instance: str | None = None
    """The ``wld bridge`` instance showing it (PostgreSQL); None on SQLite."""


@RECORD
class Handoff:
    """A platform event one ``wld bridge`` instance received for a conversation another one owns."""

    id: int | None
    instance: str
    origin: str
    channel: str
    kind: str
    payload: str
    started: bool = False
    created_at: float = field(default_factory=time.time)


@RECORD
class ClientRequest:
    """A client's mutating request by its request id; ``answer`` is None while it runs."""

    request_id: str
    method: str
    params_hash: str
    answer: str | None = None
    claimed_at: float = field(default_factory=time.time)


@RECORD
class PlanRecord:
    """A Plan: its project, title, current revision and where it stands in the workflow."""

    id: str
    project: str
    project_dir: str
    title: str
    slug: str
    current_revision: int = 0
    approved_revision: int | None = None
    state: str = "draft"  # see core/plans.py PlanState
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@RECORD
class PlanRevisionRecord:
    """One saved revision of a Plan; its markdown lives in the file at ``path``."""

    id: int | None = None
    plan_id: str
    number: int
    title: str
    path: str
    session_id: str | None = None
    created_at: float = field(default_factory=time.time)


@RECORD
class PlanSessionLink:
    """A Session that wrote, revised, reviewed or executed a Plan; kept when the Session is archived."""

    plan_id: str
    session_id: str
    role: str
    created_at: float = field(default_factory=time.time)


@RECORD
class ReviewRecord:
    """A browser review of one Plan revision; the link's token is stored only as a hash."""

    id: str
    plan_id: str
    revision: int
    session_id: str | None = None
    token_hash: str
    expires_at: float
    state: str = "open"  # open | approved | changes_requested | expired | superseded
    feedback: str = "{}"
    decided_at: float | None = None
    created_at: float = field(default_factory=time.time)


@RECORD
class ArtifactReviewRecord:
    """A browser review of a file an agent produced, answered once; the link's token is stored only as a hash."""

    id: str
    session_id: str
    project_dir: str
    path: str
    question: str
    token_hash: str
    expires_at: float
    state: str = "open"  # open | answered | expired | withdrawn
    feedback: str = ""
    decided_at: float | None = None
    created_at: float = field(default_factory=time.time)


@RECORD
class CodeReviewRecord:
    """A browser review of one round of an execution's change; the link's token is stored only as a hash."""

    id: str
    execution_id: str
    round: int
    session_id: str | None = None
    token_hash: str
    expires_at: float
    state: str = "open"  # open | publish | changes | abandon | expired | superseded | closed
    notes: str = ""
    decided_at: float | None = None
    created_at: float = field(default_factory=time.time)


@RECORD
class ExecutionRecord:
    """An approved Plan being carried out in a RunWield-owned worktree and branch."""

    id: str
    plan_id: str
    revision: int
    number: int
    session_id: str | None = None
    worktree: str
    branch: str
    base_commit: str = ""
    commands: str = "[]"
    round: int = 1
    state: str = "running"  # see core/execution.py ExecutionState
    outcome: str = "{}"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@RECORD
class ExecutionStep:
    """One step of an execution, written before it runs and updated after (write-ahead)."""

    id: int | None = None
    execution_id: str
    round: int
    name: str  # worktree | agent | snapshot | validate | publish
    detail: str = ""
    state: str = "started"  # started | done | error | interrupted
    output: str = ""
    exit_code: int | None = None
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None


@RECORD
class QueuedMessage:
    """A message that came while its conversation's turn ran, kept until a turn has taken it."""

    id: int | None = None
    conversation: str
    payload: str
    """The message as JSON (``bridge/handed_events.py``)."""
    size: int
    sending: bool = False
    """Handed to a turn that has not settled yet."""
    queued_at: float = field(default_factory=time.time)
