"""The tables as SQLModel rows: private to the store, which hands out the frozen records of ``core/records.py``.
A change to a table here needs a migration in ``migrations/versions`` (tests/test_migrations.py compares them)."""

from __future__ import annotations

import time

from sqlalchemy import Index
from sqlmodel import Field, SQLModel


class SessionRow(SQLModel, table=True):
    """A Session as stored."""

    __tablename__ = "sessions"
    id: str = Field(primary_key=True)
    title: str = ""
    cwd: str
    archived: bool = False
    agent: str
    model: str
    reasoning: str | None = None
    cost_usd: float = 0.0
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)


class TranscriptRow(SQLModel, table=True):
    """One entry of a Session's append-only transcript."""

    __tablename__ = "transcript"
    __table_args__ = (Index("ix_transcript_session_id_id", "session_id", "id"),)  # a Session's entries after one
    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="sessions.id")
    kind: str  # user | agent | thought | tool | notice
    text: str = ""
    data: str = "{}"
    created_at: float = Field(default_factory=time.time)


class TurnRow(SQLModel, table=True):
    """A turn of a Session: ``running`` until it settles, or ``interrupted`` when its process ended first."""

    __tablename__ = "turns"
    __table_args__ = (Index("ix_turns_session_id_state", "session_id", "state"),)  # a Session's running turns
    id: str = Field(primary_key=True)
    session_id: str = Field(foreign_key="sessions.id")
    state: str = "running"  # running | settled | interrupted
    stop_reason: str | None = None
    started_at: float = Field(default_factory=time.time)
    ended_at: float | None = None


class BindingRow(SQLModel, table=True):
    """A conversation bound to an ACP session on an agent."""

    __tablename__ = "bindings"
    conversation: str = Field(primary_key=True)
    agent: str
    acp_session_id: str
    cwd: str | None = None
    updated_at: float = Field(default_factory=time.time)


class PlanRow(SQLModel, table=True):
    """A Plan: its project, title, current revision and where it stands in the workflow."""

    __tablename__ = "plans"
    id: str = Field(primary_key=True)
    project: str = Field(index=True)
    project_dir: str
    title: str
    slug: str
    current_revision: int = 0
    approved_revision: int | None = None
    state: str = "draft"  # see core/plans.py PlanState
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)


class PlanRevisionRow(SQLModel, table=True):
    """One saved revision of a Plan; its markdown lives in the file at ``path``."""

    __tablename__ = "plan_revisions"
    id: int | None = Field(default=None, primary_key=True)
    plan_id: str = Field(index=True, foreign_key="plans.id")
    number: int
    title: str
    path: str
    session_id: str | None = None
    created_at: float = Field(default_factory=time.time)


class PlanSessionRow(SQLModel, table=True):
    """A Session that wrote, revised, reviewed or executed a Plan; kept when the Session is archived."""

    __tablename__ = "plan_sessions"
    plan_id: str = Field(primary_key=True, foreign_key="plans.id")
    session_id: str = Field(primary_key=True, foreign_key="sessions.id")
    role: str = Field(primary_key=True)
    created_at: float = Field(default_factory=time.time)


class ReviewRow(SQLModel, table=True):
    """A browser review of one Plan revision; the link's token is stored only as a hash."""

    __tablename__ = "reviews"
    id: str = Field(primary_key=True)
    plan_id: str = Field(index=True, foreign_key="plans.id")
    revision: int
    session_id: str | None = None
    token_hash: str = Field(unique=True, index=True)
    expires_at: float
    state: str = "open"  # open | approved | changes_requested | expired | superseded
    feedback: str = "{}"
    decided_at: float | None = None
    created_at: float = Field(default_factory=time.time)


class ArtifactReviewRow(SQLModel, table=True):
    """A browser review of a file an agent produced, answered once; the link's token is stored only as a hash."""

    __tablename__ = "artifact_reviews"
    id: str = Field(primary_key=True)
    session_id: str
    project_dir: str
    path: str
    question: str
    token_hash: str = Field(unique=True, index=True)
    expires_at: float
    state: str = "open"  # open | answered | expired | withdrawn
    feedback: str = ""
    decided_at: float | None = None
    created_at: float = Field(default_factory=time.time)


class ExecutionRow(SQLModel, table=True):
    """An approved Plan being carried out in a RunWield-owned worktree and branch."""

    __tablename__ = "executions"
    id: str = Field(primary_key=True)
    plan_id: str = Field(index=True, foreign_key="plans.id")
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
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)


class CodeReviewRow(SQLModel, table=True):
    """A browser review of one round of an execution's change; the link's token is stored only as a hash."""

    __tablename__ = "code_reviews"
    id: str = Field(primary_key=True)
    execution_id: str = Field(index=True, foreign_key="executions.id")
    round: int
    session_id: str | None = None
    token_hash: str = Field(unique=True, index=True)
    expires_at: float
    state: str = "open"  # open | publish | changes | abandon | expired | superseded | closed
    notes: str = ""
    decided_at: float | None = None
    created_at: float = Field(default_factory=time.time)


class ExecutionStepRow(SQLModel, table=True):
    """One step of an execution, written before it runs and updated after (write-ahead)."""

    __tablename__ = "execution_steps"
    id: int | None = Field(default=None, primary_key=True)
    execution_id: str = Field(index=True, foreign_key="executions.id")
    round: int
    name: str  # worktree | agent | snapshot | validate | publish
    detail: str = ""
    state: str = "started"  # started | done | error | interrupted
    output: str = ""
    exit_code: int | None = None
    started_at: float = Field(default_factory=time.time)
    finished_at: float | None = None


class SeenUpdateRow(SQLModel, table=True):
    """A platform update a chat channel claimed before handling it, so a redelivery is handled once."""

    __tablename__ = "seen_updates"
    channel: str = Field(primary_key=True)
    update_id: str = Field(primary_key=True)
    owner: str
    """The bridge run that claimed it."""
    finished: bool = False
    claimed_at: float = Field(default_factory=time.time, index=True)


class UnfinishedMessageRow(SQLModel, table=True):
    """A chat message a bridge showed that is not finished yet (a reply still streaming, a question still open), so
    a bridge starting after a crash can say it was interrupted or expired."""

    __tablename__ = "unfinished_messages"
    channel: str = Field(primary_key=True)
    message_id: str = Field(primary_key=True)
    conversation: str = Field(primary_key=True)
    """Part of the key: a message id may be unique only in its conversation (Telegram's are per chat)."""
    text: str
    kind: str
    """``reply`` or ``question``."""
    updated_at: float = Field(default_factory=time.time)
    instance: str | None = None
    """The ``wld bridge`` instance showing it (PostgreSQL); None on SQLite, where one instance runs."""


class QueuedMessageRow(SQLModel, table=True):
    """A message that came while its conversation's turn ran, kept until a turn has taken it."""

    __tablename__ = "queued_messages"
    __table_args__ = (Index("ix_queued_messages_conversation_id", "conversation", "id"),)  # a conversation's queue in order
    id: int | None = Field(default=None, primary_key=True)
    conversation: str
    payload: str
    """The message as JSON (``bridge/handed_events.py``)."""
    size: int
    """Its text's length in UTF-8 bytes, for the queue's bound."""
    sending: bool = False
    """Handed to a turn that has not settled yet: after a crash it is reported, not sent again."""
    queued_at: float = Field(default_factory=time.time)


class QueueModeRow(SQLModel, table=True):
    """A conversation's queue mode, set with ``/queue MODE`` (otherwise its channel's ``queue``)."""

    __tablename__ = "queue_modes"
    conversation: str = Field(primary_key=True)
    mode: str


class ClientRequestRow(SQLModel, table=True):
    """A client's mutating request by its request id: claimed before it runs, its answer recorded after."""

    __tablename__ = "client_requests"
    request_id: str = Field(primary_key=True)
    method: str
    params_hash: str
    answer: str | None = None
    """The JSON-RPC answer as sent (``{"result": ...}`` or ``{"error": ...}``); None while it runs."""
    claimed_at: float = Field(default_factory=time.time)


class WorkspaceLoginRow(SQLModel, table=True):
    """A Workspace login token (used once) or a browser's login session (its cookie), stored only as a hash."""

    __tablename__ = "workspace_logins"
    token_hash: str = Field(primary_key=True)
    kind: str  # token | session
    expires_at: float
    used: bool = False
    created_at: float = Field(default_factory=time.time)



class LeaseRow(SQLModel, table=True):
    """A name held by one ``wld bridge`` instance until ``expires_at`` (the database's clock) unless renewed: an
    instance's own liveness (``instance:ID``) and a listener only one instance may run (``listen:telegram``)."""

    __tablename__ = "leases"
    name: str = Field(primary_key=True)
    owner: str
    expires_at: float


class ConversationOwnerRow(SQLModel, table=True):
    """The instance a conversation's events are handled on, for as long as that instance's lease lives."""

    __tablename__ = "conversation_owners"
    conversation: str = Field(primary_key=True)
    instance: str = Field(index=True)


class HandoffRow(SQLModel, table=True):
    """A platform event one instance received for a conversation another instance owns, handed to the owner."""

    __tablename__ = "handoffs"
    id: int | None = Field(default=None, primary_key=True)
    instance: str = Field(index=True)
    """The owner it is for."""
    origin: str
    """The instance that received it (and waits for a button press's notice)."""
    channel: str
    kind: str
    """``message`` or ``press``."""
    payload: str
    """The event as JSON."""
    started: bool = False
    created_at: float = Field(default_factory=time.time)


class SummaryRow(SQLModel, table=True):
    """A compaction of a Session's context: the model's summary of its first ``folded`` messages (the newest wins)."""

    __tablename__ = "context_summaries"
    __table_args__ = (Index("ix_context_summaries_session_id_id", "session_id", "id"),)  # a Session's newest
    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="sessions.id")
    folded: int
    text: str
    created_at: float = Field(default_factory=time.time)
