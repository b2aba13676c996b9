"""Durable state: Sessions, their append-only transcripts and turns, conversation bindings. The only SQL."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, and_, delete, event, or_
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import Field, SQLModel, col, select, update
from sqlmodel.ext.asyncio.session import AsyncSession


class SessionRecord(SQLModel, table=True):
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


class TranscriptEntry(SQLModel, table=True):
    """One entry of a Session's append-only transcript."""

    __tablename__ = "transcript"
    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(index=True, foreign_key="sessions.id")
    kind: str  # user | agent | thought | tool | notice
    text: str = ""
    data: str = "{}"
    created_at: float = Field(default_factory=time.time)

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.data)


class TurnRecord(SQLModel, table=True):
    """A turn of a Session: ``running`` until it settles, or ``interrupted`` when its process ended first."""

    __tablename__ = "turns"
    id: str = Field(primary_key=True)
    session_id: str = Field(index=True, foreign_key="sessions.id")
    state: str = "running"  # running | settled | interrupted
    stop_reason: str | None = None
    started_at: float = Field(default_factory=time.time)
    ended_at: float | None = None


class Binding(SQLModel, table=True):
    """A conversation bound to an ACP session on an agent."""

    __tablename__ = "bindings"
    conversation: str = Field(primary_key=True)
    agent: str
    acp_session_id: str
    cwd: str | None = None
    updated_at: float = Field(default_factory=time.time)


class PlanRecord(SQLModel, table=True):
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


class PlanRevisionRecord(SQLModel, table=True):
    """One saved revision of a Plan; its markdown lives in the file at ``path``."""

    __tablename__ = "plan_revisions"
    id: int | None = Field(default=None, primary_key=True)
    plan_id: str = Field(index=True, foreign_key="plans.id")
    number: int
    title: str
    path: str
    session_id: str | None = None
    created_at: float = Field(default_factory=time.time)


class PlanSessionLink(SQLModel, table=True):
    """A Session that wrote, revised, reviewed or executed a Plan; kept when the Session is archived."""

    __tablename__ = "plan_sessions"
    plan_id: str = Field(primary_key=True, foreign_key="plans.id")
    session_id: str = Field(primary_key=True, foreign_key="sessions.id")
    role: str = Field(primary_key=True)
    created_at: float = Field(default_factory=time.time)


class ReviewRecord(SQLModel, table=True):
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


class ExecutionRecord(SQLModel, table=True):
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


class ExecutionStep(SQLModel, table=True):
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


class SeenUpdate(SQLModel, table=True):
    """A platform update a chat channel claimed before handling it, so a redelivery is handled once."""

    __tablename__ = "seen_updates"
    channel: str = Field(primary_key=True)
    update_id: str = Field(primary_key=True)
    owner: str
    """The bridge run that claimed it."""
    finished: bool = False
    claimed_at: float = Field(default_factory=time.time, index=True)


class UnfinishedMessage(SQLModel, table=True):
    """A chat message a bridge showed that is not finished yet (a reply still streaming, a question still open), so
    a bridge starting after a crash can say it was interrupted or expired."""

    __tablename__ = "unfinished_messages"
    channel: str = Field(primary_key=True)
    message_id: str = Field(primary_key=True)
    conversation: str
    text: str
    kind: str
    """``reply`` or ``question``."""
    updated_at: float = Field(default_factory=time.time)


POOL_TIMEOUT_SECONDS = 600
Entry = tuple[str, str, dict[str, Any]]
"""A transcript entry to append: kind, text and data."""


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


class Store:
    """Async access to the database; SQLite in WAL mode unless the URL names another database."""

    def __init__(self, url: str) -> None:
        self.url = url
        # Many turns starting at once queue for a connection rather than failing after the default 30 s.
        # SQL parameters (prompts, replies) never reach a log or an error message.
        self.engine: AsyncEngine = create_async_engine(url, pool_timeout=POOL_TIMEOUT_SECONDS, hide_parameters=True)
        if url.startswith("sqlite"):
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._sessions = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)

    @classmethod
    async def open(cls, url: str) -> Store:
        if url.startswith("sqlite") and ":///" in url:
            path = url.split(":///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        store = cls(url)
        async with store.engine.begin() as conn:
            await conn.run_sync(_create_schema)
        return store

    async def close(self) -> None:
        await self.engine.dispose()

    async def create_session(self, *, cwd: str, agent: str, model: str, reasoning: str | None, title: str = "") -> SessionRecord:
        record = SessionRecord(id=new_session_id(), cwd=cwd, agent=agent, model=model, reasoning=reasoning, title=title)
        async with self._sessions() as db:
            db.add(record)
            await db.commit()
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        async with self._sessions() as db:
            return await db.get(SessionRecord, session_id)

    async def list_sessions(
        self,
        *,
        include_archived: bool = False,
        cwd: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first (ties by id): those in ``cwd`` when given, only those after the
        ``(updated_at, id)`` of ``after`` (a page's last Session), at most ``limit``."""
        updated, ident = col(SessionRecord.updated_at), col(SessionRecord.id)
        query = select(SessionRecord).order_by(updated.desc(), ident.desc()).limit(limit)
        if not include_archived:
            query = query.where(col(SessionRecord.archived).is_(False))
        if cwd is not None:
            query = query.where(col(SessionRecord.cwd) == cwd)
        if after is not None:
            query = query.where(or_(updated < after[0], and_(updated == after[0], ident < after[1])))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def update_session(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields of a Session; ``cost_delta`` adds to the cumulative cost."""
        async with self._sessions() as db:
            record = await db.get(SessionRecord, session_id)
            if record is None:
                raise KeyError(session_id)
            _apply(record, changes)
            db.add(record)
            await db.commit()
            return record

    async def append(self, session_id: str, kind: str, text: str = "", **data: Any) -> None:
        await self.append_many(session_id, [(kind, text, data)])

    async def append_many(self, session_id: str, entries: list[Entry], **changes: Any) -> SessionRecord | None:
        """Append transcript entries and apply Session changes (as ``update_session``) in one transaction."""
        async with self._sessions() as db:
            record = await _append(db, session_id, entries, changes)
            await db.commit()
            return record

    async def begin_turn(
        self, session_id: str, turn_id: str, entries: list[Entry], interrupted: Entry, **changes: Any
    ) -> SessionRecord | None:
        """Start a turn with its first entries and Session changes, in one transaction. Turns of the Session still
        running are interrupted first (only one turn runs at a time, so their process ended), each with the
        ``interrupted`` entry."""
        async with self._sessions() as db:
            await _interrupt(db, session_id, None, interrupted)
            db.add(TurnRecord(id=turn_id, session_id=session_id))
            record = await _append(db, session_id, entries, changes)
            await db.commit()
            return record

    async def end_turn(
        self, session_id: str, turn_id: str, stop_reason: str, entries: list[Entry], **changes: Any
    ) -> SessionRecord | None:
        """Settle a turn with its last entries and Session changes, in one transaction."""
        async with self._sessions() as db:
            await db.exec(
                update(TurnRecord)
                .where(col(TurnRecord.id) == turn_id)
                .values(state="settled", stop_reason=stop_reason, ended_at=time.time())
            )
            record = await _append(db, session_id, entries, changes)
            await db.commit()
            return record

    async def running_turns(self, session_id: str) -> list[str]:
        """Ids of the Session's turns that have not settled."""
        query = select(TurnRecord.id).where(TurnRecord.session_id == session_id, TurnRecord.state == "running")
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def interrupt_turns(self, session_id: str, turn_ids: list[str], interrupted: Entry) -> None:
        """Mark those of ``turn_ids`` still running interrupted, each with the ``interrupted`` entry, once."""
        async with self._sessions() as db:
            await _interrupt(db, session_id, turn_ids, interrupted)
            await db.commit()

    async def transcript(self, session_id: str, after: int = 0) -> list[TranscriptEntry]:
        """The Session's transcript, oldest first; ``after`` skips entries up to that id."""
        query = (
            select(TranscriptEntry)
            .where(TranscriptEntry.session_id == session_id, col(TranscriptEntry.id) > after)
            .order_by(col(TranscriptEntry.id))
        )
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def get_binding(self, conversation: str) -> Binding | None:
        async with self._sessions() as db:
            return await db.get(Binding, conversation)

    async def bound_conversations(self, prefix: str, agent: str) -> list[str]:
        """The conversations (keys starting with ``prefix``) bound to a session on ``agent``."""
        query = select(Binding.conversation).where(col(Binding.conversation).startswith(prefix), Binding.agent == agent)
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def set_binding(self, conversation: str, agent: str, acp_session_id: str, cwd: str | None = None) -> Binding:
        async with self._sessions() as db:
            binding = await db.get(Binding, conversation) or Binding(conversation=conversation, agent=agent, acp_session_id=acp_session_id)
            binding.agent, binding.acp_session_id, binding.cwd = agent, acp_session_id, cwd
            binding.updated_at = time.time()
            db.add(binding)
            await db.commit()
            return binding

    async def claim_update(self, channel: str, update_id: str, owner: str) -> SeenUpdate | None:
        """Claim an update for ``owner``; None if this is the first claim, else the earlier claim (unchanged)."""
        async with self._sessions() as db:
            db.add(SeenUpdate(channel=channel, update_id=update_id, owner=owner))
            try:
                await db.commit()
                return None
            except IntegrityError:
                await db.rollback()
        async with self._sessions() as db:
            return await db.get(SeenUpdate, (channel, update_id))

    async def finish_update(self, channel: str, update_id: str) -> None:
        async with self._sessions() as db:
            await db.exec(update(SeenUpdate).where(col(SeenUpdate.channel) == channel, col(SeenUpdate.update_id) == update_id).values(finished=True))
            await db.commit()

    async def forget_updates(self, claimed_before: float) -> None:
        """Drop claims older than ``claimed_before`` (platforms stop redelivering long before)."""
        async with self._sessions() as db:
            await db.exec(delete(SeenUpdate).where(col(SeenUpdate.claimed_at) < claimed_before))
            await db.commit()

    async def keep_message(self, channel: str, message_id: str, conversation: str, text: str, kind: str) -> None:
        """Note (or update) a message that is not finished yet."""
        async with self._sessions() as db:
            await db.merge(UnfinishedMessage(channel=channel, message_id=message_id, conversation=conversation, text=text, kind=kind))
            await db.commit()

    async def drop_message(self, channel: str, message_id: str) -> None:
        """The message is finished."""
        async with self._sessions() as db:
            await db.exec(delete(UnfinishedMessage).where(col(UnfinishedMessage.channel) == channel, col(UnfinishedMessage.message_id) == message_id))
            await db.commit()

    async def unfinished_messages(self, channel: str) -> list[UnfinishedMessage]:
        """A channel's messages that were not finished, oldest first."""
        async with self._sessions() as db:
            query = select(UnfinishedMessage).where(col(UnfinishedMessage.channel) == channel).order_by(col(UnfinishedMessage.updated_at))
            return list((await db.exec(query)).all())

    async def create_plan(self, plan: PlanRecord, revision: PlanRevisionRecord) -> PlanRecord:
        """Save a new Plan and its first revision (and the Session that wrote it) in one transaction."""
        async with self._sessions() as db:
            db.add(plan)
            await db.flush()
            db.add(revision)
            if revision.session_id:
                db.add(PlanSessionLink(plan_id=plan.id, session_id=revision.session_id, role="wrote"))
            await db.commit()
            return plan

    async def get_plan(self, plan_id: str) -> PlanRecord | None:
        async with self._sessions() as db:
            return await db.get(PlanRecord, plan_id)

    async def list_plans(self, project: str | None = None) -> list[PlanRecord]:
        """Plans, most recently changed first; only the project's when ``project`` is given."""
        query = select(PlanRecord).order_by(col(PlanRecord.updated_at).desc())
        if project is not None:
            query = query.where(PlanRecord.project == project)
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def update_plan(self, plan_id: str, **changes: Any) -> PlanRecord:
        async with self._sessions() as db:
            plan = await _change(db, PlanRecord, plan_id, changes)
            await db.commit()
            return plan

    async def add_plan_revision(self, revision: PlanRevisionRecord) -> PlanRecord:
        """Make ``revision`` current if it follows the current one (else Conflict); open reviews become superseded."""
        async with self._sessions() as db:
            moved = await db.exec(
                update(PlanRecord)
                .where(col(PlanRecord.id) == revision.plan_id, col(PlanRecord.current_revision) == revision.number - 1)
                .values(current_revision=revision.number, title=revision.title, state="draft", updated_at=time.time())
            )
            if moved.rowcount != 1:
                raise Conflict(f"Plan {revision.plan_id} is no longer at revision {revision.number - 1}")
            await db.exec(
                update(ReviewRecord)
                .where(col(ReviewRecord.plan_id) == revision.plan_id, col(ReviewRecord.state) == "open")
                .values(state="superseded", decided_at=time.time())
            )
            db.add(revision)
            if revision.session_id:
                await db.merge(PlanSessionLink(plan_id=revision.plan_id, session_id=revision.session_id, role="revised"))
            await db.commit()
            return await db.get(PlanRecord, revision.plan_id, populate_existing=True)

    async def plan_revisions(self, plan_id: str) -> list[PlanRevisionRecord]:
        query = select(PlanRevisionRecord).where(PlanRevisionRecord.plan_id == plan_id).order_by(col(PlanRevisionRecord.number))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def link_plan_session(self, plan_id: str, session_id: str, role: str) -> None:
        async with self._sessions() as db:
            await db.merge(PlanSessionLink(plan_id=plan_id, session_id=session_id, role=role))
            await db.commit()

    async def plan_sessions(self, plan_id: str) -> list[PlanSessionLink]:
        query = select(PlanSessionLink).where(PlanSessionLink.plan_id == plan_id).order_by(col(PlanSessionLink.created_at))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def plans_for_session(self, session_id: str) -> list[PlanRecord]:
        """Plans the Session wrote, revised, reviewed or executed, most recently changed first."""
        linked = select(PlanSessionLink.plan_id).where(PlanSessionLink.session_id == session_id)
        query = select(PlanRecord).where(col(PlanRecord.id).in_(linked)).order_by(col(PlanRecord.updated_at).desc())
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def add_review(self, review: ReviewRecord) -> ReviewRecord:
        """Save a review of the Plan's current revision (else Conflict); earlier open reviews become superseded."""
        async with self._sessions() as db:
            moved = await db.exec(
                update(PlanRecord)
                .where(col(PlanRecord.id) == review.plan_id, col(PlanRecord.current_revision) == review.revision)
                .values(state="in_review", updated_at=time.time())
            )
            if moved.rowcount != 1:
                raise Conflict(f"Plan {review.plan_id} is not at revision {review.revision}")
            await db.exec(
                update(ReviewRecord)
                .where(col(ReviewRecord.plan_id) == review.plan_id, col(ReviewRecord.state) == "open")
                .values(state="superseded", decided_at=time.time())
            )
            db.add(review)
            if review.session_id:
                await db.merge(PlanSessionLink(plan_id=review.plan_id, session_id=review.session_id, role="reviewed"))
            await db.commit()
            return review

    async def get_review(self, review_id: str) -> ReviewRecord | None:
        async with self._sessions() as db:
            return await db.get(ReviewRecord, review_id)

    async def find_review(self, token_hash: str) -> ReviewRecord | None:
        async with self._sessions() as db:
            return (await db.exec(select(ReviewRecord).where(ReviewRecord.token_hash == token_hash))).first()

    async def reviews_for_plan(self, plan_id: str) -> list[ReviewRecord]:
        """The Plan's reviews, newest first."""
        query = select(ReviewRecord).where(ReviewRecord.plan_id == plan_id).order_by(col(ReviewRecord.created_at).desc())
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def reviews_for_session(self, session_id: str) -> list[ReviewRecord]:
        """The reviews a Session started, newest first."""
        query = select(ReviewRecord).where(ReviewRecord.session_id == session_id).order_by(col(ReviewRecord.created_at).desc())
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def settle_review(self, review_id: str, state: str, feedback: str, plan_changes: dict[str, Any]) -> bool:
        """Decide an open review once, changing its Plan with it; False, and nothing changed, if it was not open."""
        async with self._sessions() as db:
            review = await db.get(ReviewRecord, review_id)
            decided = await db.exec(
                update(ReviewRecord)
                .where(col(ReviewRecord.id) == review_id, col(ReviewRecord.state) == "open")
                .values(state=state, feedback=feedback, decided_at=time.time())
            )
            if review is None or decided.rowcount != 1:
                await db.rollback()
                return False
            if plan_changes:
                await _change(db, PlanRecord, review.plan_id, plan_changes)
            await db.commit()
            return True

    async def add_execution(self, execution: ExecutionRecord) -> ExecutionRecord:
        """Save a new execution; its Plan becomes ``executing`` and its Session is linked, in one transaction."""
        async with self._sessions() as db:
            db.add(execution)
            await _change(db, PlanRecord, execution.plan_id, {"state": "executing"})
            if execution.session_id:
                await db.merge(PlanSessionLink(plan_id=execution.plan_id, session_id=execution.session_id, role="executed"))
            await db.commit()
            return execution

    async def get_execution(self, execution_id: str) -> ExecutionRecord | None:
        async with self._sessions() as db:
            return await db.get(ExecutionRecord, execution_id)

    async def list_executions(self, *, plan_id: str | None = None, states: tuple[str, ...] = ()) -> list[ExecutionRecord]:
        """Executions, oldest first, of one Plan and/or in the given states."""
        query = select(ExecutionRecord).order_by(col(ExecutionRecord.created_at))
        if plan_id is not None:
            query = query.where(ExecutionRecord.plan_id == plan_id)
        if states:
            query = query.where(col(ExecutionRecord.state).in_(states))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())

    async def update_execution(
        self, execution_id: str, plan_changes: dict[str, Any] | None = None, **changes: Any
    ) -> ExecutionRecord:
        """Change an execution and, in the same transaction, its Plan."""
        async with self._sessions() as db:
            execution = await _change(db, ExecutionRecord, execution_id, changes)
            if plan_changes:
                await _change(db, PlanRecord, execution.plan_id, plan_changes)
            await db.commit()
            return execution

    async def interrupt_execution(self, execution_id: str, reason: str, **changes: Any) -> ExecutionRecord:
        """Mark an execution (with ``changes``), its unfinished steps and its Plan interrupted, in one transaction."""
        async with self._sessions() as db:
            await db.exec(
                update(ExecutionStep)
                .where(col(ExecutionStep.execution_id) == execution_id, col(ExecutionStep.state) == "started")
                .values(state="interrupted", output=reason, finished_at=time.time())
            )
            execution = await _change(db, ExecutionRecord, execution_id, {**changes, "state": "interrupted"})
            await _change(db, PlanRecord, execution.plan_id, {"state": "interrupted"})
            await db.commit()
            return execution

    async def begin_step(self, step: ExecutionStep) -> ExecutionStep:
        """Record that a step is about to run; committed before it does."""
        async with self._sessions() as db:
            db.add(step)
            await db.commit()
            return step

    async def end_step(self, step_id: int, state: str, output: str = "", exit_code: int | None = None) -> ExecutionStep:
        async with self._sessions() as db:
            step = await _change(db, ExecutionStep, step_id, {"state": state, "output": output, "exit_code": exit_code})
            await db.commit()
            return step

    async def execution_steps(self, execution_id: str) -> list[ExecutionStep]:
        query = select(ExecutionStep).where(ExecutionStep.execution_id == execution_id).order_by(col(ExecutionStep.id))
        async with self._sessions() as db:
            return list((await db.exec(query)).all())


async def _append(db: AsyncSession, session_id: str, entries: list[Entry], changes: dict[str, Any]) -> SessionRecord | None:
    """Add transcript entries and apply Session changes in ``db``; the changed Session, if any."""
    for kind, text, data in entries:
        db.add(TranscriptEntry(session_id=session_id, kind=kind, text=text, data=json.dumps(data)))
    if not changes:
        return None
    record = await db.get(SessionRecord, session_id)
    if record is None:
        raise KeyError(session_id)
    _apply(record, changes)
    db.add(record)
    return record


async def _interrupt(db: AsyncSession, session_id: str, turn_ids: list[str] | None, entry: Entry) -> None:
    """Mark the Session's running turns (those of ``turn_ids`` when given) interrupted in one statement, so two
    processes never mark a turn twice, and add ``entry``, with the turn's id, for each."""
    condition = [col(TurnRecord.session_id) == session_id, col(TurnRecord.state) == "running"]
    if turn_ids is not None:
        condition.append(col(TurnRecord.id).in_(turn_ids))
    marked = await db.exec(
        update(TurnRecord).where(*condition).values(state="interrupted", ended_at=time.time()).returning(TurnRecord.id)
    )
    kind, text, data = entry
    for turn_id in sorted(marked.scalars().all()):
        db.add(TranscriptEntry(session_id=session_id, kind=kind, text=text, data=json.dumps({**data, "turn": turn_id})))


class Conflict(RuntimeError):
    """Another writer changed the row first; nothing was written."""


async def _change(db: AsyncSession, model: type[SQLModel], key: Any, changes: dict[str, Any]) -> Any:
    """Set fields of one row in ``db`` (stamping ``updated_at``/``finished_at`` where the table has one)."""
    row = await db.get(model, key)
    if row is None:
        raise KeyError(key)
    for name, value in changes.items():
        setattr(row, name, value)
    for stamp in ("updated_at", "finished_at"):
        if stamp in model.model_fields:
            setattr(row, stamp, time.time())
    db.add(row)
    return row


def _apply(record: SessionRecord, changes: dict[str, Any]) -> None:
    changes = dict(changes)
    record.cost_usd += changes.pop("cost_delta", 0.0)
    for key, value in changes.items():
        setattr(record, key, value)
    record.updated_at = time.time()


def _create_schema(conn: Connection) -> None:
    """Create the tables and indexes that are missing. Each statement says IF NOT EXISTS, so processes
    starting together on a new database do not fail on each other's tables."""
    for table in SQLModel.metadata.sorted_tables:
        conn.execute(CreateTable(table, if_not_exists=True))
        for index in table.indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
