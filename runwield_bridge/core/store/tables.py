"""The tables as SQLModel rows: private to the store, which hands out the frozen records of ``core/records.py``.
Changing a table here changes the schema: the 0.1.0 and 0.2.0 state directories must still open (tests/test_upgrade.py)."""

from __future__ import annotations

import time

from sqlalchemy import Connection
from sqlalchemy.schema import CreateIndex, CreateTable
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
    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(index=True, foreign_key="sessions.id")
    kind: str  # user | agent | thought | tool | notice
    text: str = ""
    data: str = "{}"
    created_at: float = Field(default_factory=time.time)


class TurnRow(SQLModel, table=True):
    """A turn of a Session: ``running`` until it settles, or ``interrupted`` when its process ended first."""

    __tablename__ = "turns"
    id: str = Field(primary_key=True)
    session_id: str = Field(index=True, foreign_key="sessions.id")
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


def create_schema(conn: Connection) -> None:
    """Create the tables and indexes that are missing. Each statement says IF NOT EXISTS, so processes
    starting together on a new database do not fail on each other's tables."""
    for table in SQLModel.metadata.sorted_tables:
        conn.execute(CreateTable(table, if_not_exists=True))
        for index in table.indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))
